package provider

import (
	"regexp"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	long := "mcp:server/" + strings.Repeat("x", 80)
	n := NewNames([]string{"nika:read", "mcp:fs/read_text_file", "nika_read", long, long + "y"})
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	for c, want := range map[string]string{
		"nika:read":             "nika_read",
		"mcp:fs/read_text_file": "mcp_fs_read_text_file",
		"nika_read":             "nika_read_2", // collides with nika:read's wire name
	} {
		if got := n.Wire(c); got != want {
			t.Errorf("Wire(%q) = %q, want %q", c, got, want)
		}
		if back := n.Canonical(n.Wire(c)); back != c {
			t.Errorf("Canonical(Wire(%q)) = %q", c, back)
		}
	}
	a, b := n.Wire(long), n.Wire(long+"y")
	if a == b || !valid.MatchString(a) || !valid.MatchString(b) || len(a) != 64 || len(b) != 64 {
		t.Errorf("long names: %q %q", a, b)
	}
	if n.Canonical(b) != long+"y" {
		t.Errorf("long name does not map back")
	}
	if n.Canonical("made_up") != "made_up" {
		t.Error("an unknown wire name must pass through unchanged")
	}
}

// NamesOf maps every admitted tool, offered or not, both ways (AGENT.md §5.2(b)), and a wire
// name does not depend on which tools are offered.
func TestNamesOf(t *testing.T) {
	admitted := []string{"nika:read", "nika_read", "mcp:fs/list"}
	for _, offered := range [][]string{nil, {"nika_read"}, {"mcp:fs/list", "nika:read"}} {
		req := Request{Admitted: admitted}
		for _, o := range offered {
			req.Tools = append(req.Tools, ToolDef{Name: o})
		}
		n := NamesOf(req)
		for c, w := range map[string]string{"nika:read": "nika_read", "nika_read": "nika_read_2", "mcp:fs/list": "mcp_fs_list"} {
			if n.Wire(c) != w || n.Canonical(w) != c {
				t.Errorf("offered %v: %s ↔ %s, got %s ↔ %s", offered, c, w, n.Wire(c), n.Canonical(w))
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example.com/v1":              "https://api.example.com/v1",
		"https://user:pw@api.example.com/v1":      "https://api.example.com/v1",
		"http://127.0.0.1:8080/v1?key=secret#x":   "http://127.0.0.1:8080/v1?…",
		"http://host/a%2Fb":                       "http://host/a%2Fb",
		"http://[::1]:9/v1beta/models/m:generate": "http://[::1]:9/v1beta/models/m:generate",
		"://bad": "(invalid URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bool{"http://h": false, "http://h/": false, "http://h/api": false,
		"http://h/v1": true, "http://h/openai/v1": true, "http://h/api/v2/x": true, "http://h/v1beta": true, "http://h/vx": false} {
		if got := HasVersionSegment(in); got != want {
			t.Errorf("HasVersionSegment(%q) = %v", in, got)
		}
	}
}

func TestReplayArgs(t *testing.T) {
	for in, want := range map[string]string{
		``: `{}`, `null`: `{}`, `{ "a": 1 }`: `{"a":1}`, `"{path: a"`: `{}`, `[1]`: `{}`, `{"a":1} {}`: `{}`,
	} {
		if got := string(ReplayArgs([]byte(in))); got != want {
			t.Errorf("ReplayArgs(%q) = %s, want %s", in, got, want)
		}
	}
}
