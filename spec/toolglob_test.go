package spec

import "testing"

func TestToolAllowed(t *testing.T) {
	for _, tc := range []struct {
		globs []string
		name  string
		want  bool
	}{
		{[]string{"nika:*"}, "nika:read", true},
		{[]string{"nika:*"}, "mcp:fs/read", false},
		{[]string{"mcp:*"}, "mcp:github/issues", false},
		{[]string{"mcp:github/*"}, "mcp:github/issues", true},
		{[]string{"mcp:**"}, "mcp:github/issues", true},
		{[]string{"*"}, "nika:read", false},
		{[]string{"**"}, "nika:read", true},
		{[]string{"nika:*", "!nika:write"}, "nika:write", false},
		{[]string{"!nika:write", "nika:*"}, "nika:write", true},
		{[]string{}, "nika:read", false},
		{[]string{"nika:re*d"}, "nika:read", true},
		{[]string{"nika:read"}, "nika:readx", false},
	} {
		if got := ToolAllowed(tc.globs, tc.name); got != tc.want {
			t.Errorf("ToolAllowed(%q, %q) = %v, want %v", tc.globs, tc.name, got, tc.want)
		}
	}
}

func FuzzGlobMatch(f *testing.F) {
	f.Add("mcp:**/x*", "mcp:a/b/xy")
	f.Add("***a*b*c", "aaabbbccc")
	f.Fuzz(func(t *testing.T, p, s string) {
		GlobMatch(p, s) // total: must never panic
	})
}
