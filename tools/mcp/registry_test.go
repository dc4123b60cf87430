package mcp

import (
	"reflect"
	"strings"
	"testing"
)

func TestRegistryParse(t *testing.T) {
	cases := []struct {
		name, doc string
		names     []string
		err       string
	}{
		{"servers wrapper", `{"servers": {"fs": {"command": "node", "args": ["a"], "env": {"K": "V"}}, "gh": {"command": "gh"}}}`, []string{"fs", "gh"}, ""},
		{"mcpServers wrapper", `{"mcpServers": {"github": {}}}`, []string{"github"}, ""},
		{"plain object", `{"github": {}, "fs": {"command": "x"}}`, []string{"fs", "github"}, ""},
		{"empty", `{}`, []string{}, ""},
		{"bad wrapper", `{"servers": []}`, nil, `"servers" must map server names to settings`},
		{"not JSON", `{bad`, nil, "invalid character 'b' looking for beginning of object key string"},
		{"entry not an object", `{"servers": {"x": 5}}`, []string{"x"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse("p.json", []byte(tc.doc))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Names(); !reflect.DeepEqual(got, tc.names) {
				t.Errorf("names = %v, want %v", got, tc.names)
			}
		})
	}
	r, _ := Parse("p.json", []byte(`{"servers": {"fs": {"command": "node", "args": ["a", "b"], "env": {"K": "V"}}, "x": 5, "y": {}}}`))
	if s, ok, p := r.Lookup("fs"); !ok || p != "" || s.Command != "node" || !reflect.DeepEqual(s.Args, []string{"a", "b"}) || s.Env["K"] != "V" {
		t.Errorf("Lookup(fs) = %+v %v %q", s, ok, p)
	}
	if _, ok, p := r.Lookup("x"); !ok || !strings.Contains(p, "must be an object") {
		t.Errorf("Lookup(x) = %v %q", ok, p)
	}
	if _, ok, p := r.Lookup("y"); !ok || p != "its entry has no `command`" {
		t.Errorf("Lookup(y) = %v %q", ok, p)
	}
	if _, ok, _ := r.Lookup("z"); ok {
		t.Error("Lookup(z) found an unregistered server")
	}
}

func TestPath(t *testing.T) {
	env := func(v string, set bool) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == EnvConfig && set {
				return v, true
			}
			return "", false
		}
	}
	cases := []struct {
		runDir string
		lookup func(string) (string, bool)
		want   string
	}{
		{"", env("", false), ".nika/mcp_servers.json"},
		{"/run", env("", false), "/run/.nika/mcp_servers.json"},
		{"/run", env("", true), "/run/.nika/mcp_servers.json"},
		{"/run", env("conf/mcp.json", true), "/run/conf/mcp.json"},
		{"/run", env("/etc/mcp.json", true), "/etc/mcp.json"},
		{"", env("conf/mcp.json", true), "conf/mcp.json"},
		{"/run", nil, "/run/.nika/mcp_servers.json"},
	}
	for _, tc := range cases {
		if got := Path(tc.runDir, tc.lookup); got != tc.want {
			t.Errorf("Path(%q) = %q, want %q", tc.runDir, got, tc.want)
		}
	}
}
