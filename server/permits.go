package server

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/nikahq/nika/spec"
)

// permitsFile is the YAML of a `--permits FILE` ceiling: the body of a
// workflow's `permits:` block (LANGUAGE.md §2.4), strict keys.
type permitsFile struct {
	FS *struct {
		Read  []string `yaml:"read"`
		Write []string `yaml:"write"`
	} `yaml:"fs"`
	Net *struct {
		HTTP []string `yaml:"http"`
	} `yaml:"net"`
	Exec  any       `yaml:"exec"`
	Tools *[]string `yaml:"tools"`
}

// ParsePermits reads a ceiling written like a workflow's `permits:` block
// (fs, net, exec, tools; an empty document is `{}`, pure compute). As in a
// workflow, a missing category denies.
func ParsePermits(src []byte) (*spec.Permits, error) {
	p := &spec.Permits{}
	if len(bytes.TrimSpace(src)) == 0 {
		return p, nil
	}
	var f permitsFile
	if err := yaml.UnmarshalWithOptions(src, &f, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("the permits file must be a mapping of fs, net, exec and tools, as a workflow's permits block: %v", err)
	}
	if f.FS != nil {
		p.FSRead, p.FSWrite = nonNil(f.FS.Read), nonNil(f.FS.Write)
	}
	if f.Net != nil {
		p.NetHTTP = nonNil(f.Net.HTTP)
	}
	switch x := f.Exec.(type) {
	case nil:
	case bool:
		p.Exec = x
	case []any:
		p.ExecList = []string{}
		for _, e := range x {
			s, ok := e.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("permits exec: each program must be a non-empty string, not %v", e)
			}
			p.ExecList = append(p.ExecList, s)
		}
	default:
		return nil, fmt.Errorf("permits exec must be true, false or a list of programs, not %v", x)
	}
	if f.Tools != nil {
		p.ToolsSet, p.Tools = true, nonNil(*f.Tools)
	}
	return p, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// IsLoopback reports whether a listen address binds loopback only: its
// host is `localhost` or a loopback IP. An empty host (":8080") binds
// every interface, and any other name is not trusted to stay local (D35:
// such an address needs --auth-token).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
