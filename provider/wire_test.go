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
