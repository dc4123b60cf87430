package spec

import (
	"strings"
	"testing"
	"time"
)

type globCase struct {
	globs []string
	name  string
	want  bool
}

func checkAllowed(t *testing.T, cases []globCase) {
	t.Helper()
	for _, tc := range cases {
		if got := ToolAllowed(tc.globs, tc.name); got != tc.want {
			t.Errorf("ToolAllowed(%q, %q) = %v, want %v", tc.globs, tc.name, got, tc.want)
		}
	}
}

// AGENT.md §13.7: a single '*' matches within one segment; it never crosses
// '/' or ':'.
func TestGlobStarStopsAtSlashAndColon(t *testing.T) {
	checkAllowed(t, []globCase{
		{[]string{"nika:*"}, "nika:read", true},
		{[]string{"nika:*"}, "mcp:fs/read", false},
		{[]string{"mcp:*"}, "mcp:github/issues", false},
		{[]string{"*"}, "nika:read", false},
		{[]string{"nika:re*d"}, "nika:read", true},
		{[]string{"nika:read"}, "nika:readx", false},
	})
}

// AGENT.md §13.7: '**' matches across '/' and ':'.
func TestDoubleStarCrossesEverything(t *testing.T) {
	checkAllowed(t, []globCase{
		{[]string{"mcp:**"}, "mcp:github/issues", true},
		{[]string{"**"}, "nika:read", true},
		{[]string{"**"}, "mcp:a/b/c", true},
	})
}

// AGENT.md §13.7: globs are applied in order and the last match (positive
// or negated) decides.
func TestNegationLastMatchWins(t *testing.T) {
	checkAllowed(t, []globCase{
		{[]string{"nika:*", "!nika:write"}, "nika:write", false},
		{[]string{"!nika:write", "nika:*"}, "nika:write", true},
		{[]string{"nika:*", "!nika:write"}, "nika:read", true},
	})
}

// AGENT.md §13.7: an empty (or absent) whitelist allows no tool.
func TestEmptyWhitelistDeniesAll(t *testing.T) {
	checkAllowed(t, []globCase{
		{[]string{}, "nika:read", false},
		{nil, "mcp:fs/read", false},
	})
}

// AGENT.md §13.7: 'mcp:server/*' scopes to one server's tools.
func TestServerScopedMCPGlobs(t *testing.T) {
	checkAllowed(t, []globCase{
		{[]string{"mcp:github/*"}, "mcp:github/issues", true},
		{[]string{"mcp:github/*"}, "mcp:gitlab/issues", false},
		{[]string{"mcp:github/*"}, "mcp:github/a/b", false},
		{[]string{"mcp:github/**"}, "mcp:github/a/b", true},
		{[]string{"mcp:**", "!mcp:github/*"}, "mcp:github/issues", false},
		{[]string{"mcp:**", "!mcp:github/*"}, "mcp:fs/read", true},
	})
}

// AGENT.md §13.7: whitelist matching never panics, and an adversarial
// '**a*b*c…' pattern against a long non-matching name stays linear-ish
// (the matcher is O(len(p)·len(s)), no backtracking).
func FuzzWhitelistMatch(f *testing.F) {
	f.Add("mcp:**/x*", "mcp:a/b/xy")
	f.Add("***a*b*c", "aaabbbccc")
	f.Add("!nika:*", "nika:read")
	f.Fuzz(func(t *testing.T, p, s string) {
		GlobMatch(p, s) // total: must never panic
		ToolAllowed([]string{p, "!" + p}, s)
		ToolAllowed([]string{"!" + s, p}, s)
	})
}

func TestWhitelistMatchAdversarialPatternIsLinear(t *testing.T) {
	p := "**" + strings.Repeat("a*", 200) + "b"
	s := strings.Repeat("a", 5000)
	start := time.Now()
	if GlobMatch(p, s) {
		t.Fatal("unexpected match")
	}
	// O(400·5000) steps: well under a second even under -race; exponential
	// backtracking would never finish.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("adversarial match took %v", d)
	}
}
