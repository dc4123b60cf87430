package mcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// DefaultPath is where the registry lives, relative to the run directory (DECISIONS.md D7).
const DefaultPath = ".nika/mcp_servers.json"

// EnvConfig names the environment variable that overrides DefaultPath.
const EnvConfig = "NIKA_MCP_CONFIG"

// Server is how to start one stdio MCP server.
type Server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// Registry is the engine's MCP server registry: server names and their launch settings. It is
// engine configuration, never YAML (LANGUAGE.md §5.3). It is immutable once loaded.
type Registry struct {
	path    string
	servers map[string]Server
	// invalid holds the entries that name a server but cannot start it, with the reason: their
	// names still count for the checker, and a call reports the reason (NIKA-MCP-001, "not
	// configured").
	invalid map[string]string
}

// Path returns the registry path of a run: the value of NIKA_MCP_CONFIG when it is set and not
// empty (a relative value is relative to runDir), otherwise DefaultPath under runDir. With
// runDir "" the result is relative to the working directory, as the messages show it. lookup
// reads the environment (os.LookupEnv in production).
func Path(runDir string, lookup func(string) (string, bool)) string {
	if lookup != nil {
		if p, ok := lookup(EnvConfig); ok && p != "" {
			if filepath.IsAbs(p) || runDir == "" {
				return p
			}
			return filepath.Join(runDir, p)
		}
	}
	if runDir == "" {
		return DefaultPath
	}
	return filepath.Join(runDir, DefaultPath)
}

// Load reads and parses the registry at path. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist): the caller decides whether that means "no registry".
func Load(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses a registry document. Three shapes are accepted, for compatibility with the
// files other MCP clients use: {"servers": {name: entry}}, {"mcpServers": {name: entry}} and a
// plain object {name: entry}. An entry is {"command", "args", "env"}; other members are ignored.
// A document that is not an object, or whose wrapper is not an object, is an error whose text
// is the reason alone (the caller adds the path). An entry that does not decode, or has no
// command, keeps its name (the checker sees it) and is reported when a call needs it.
func Parse(path string, data []byte) (*Registry, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	for _, wrapper := range []string{"servers", "mcpServers"} {
		if inner, ok := doc[wrapper]; ok {
			doc = nil
			if err := json.Unmarshal(inner, &doc); err != nil {
				return nil, fmt.Errorf("%q must map server names to settings", wrapper)
			}
			break
		}
	}
	r := &Registry{path: path, servers: make(map[string]Server, len(doc)), invalid: map[string]string{}}
	for name, raw := range doc {
		var s Server
		if err := json.Unmarshal(raw, &s); err != nil {
			r.invalid[name] = fmt.Sprintf("its entry must be an object {command, args, env}: %v", err)
			continue
		}
		if s.Command == "" {
			r.invalid[name] = "its entry has no `command`"
			continue
		}
		r.servers[name] = s
	}
	return r, nil
}

// Path returns the file the registry was read from.
func (r *Registry) Path() string { return r.path }

// Names returns every server name of the registry, entries that cannot start included, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.servers)+len(r.invalid))
	for n := range r.servers {
		names = append(names, n)
	}
	for n := range r.invalid {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns a server's launch settings. ok is false when the name is not registered;
// problem is non-empty when it is registered but its entry cannot start a server.
func (r *Registry) Lookup(name string) (s Server, ok bool, problem string) {
	if s, ok := r.servers[name]; ok {
		return s, true, ""
	}
	if p, ok := r.invalid[name]; ok {
		return Server{}, true, p
	}
	return Server{}, false, ""
}
