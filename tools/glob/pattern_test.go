package glob

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nikahq/nika/internal/fuzzbudget"
	"github.com/nikahq/nika/spec/catalog"
)

func TestCompileDepth(t *testing.T) {
	cases := map[string]int{
		"*.go":           1,
		"*/x.md":         2,
		"{a,b/c/d}/*":    4,
		"{a,{b/c,d}}/e":  3,
		"src/**":         -1,
		"{x,**}/y":       -1,
		"a/b/c/d.go":     1, // the literal root a/b/c is not walked level by level
		"./x/../*/*/*.c": 3,
	}
	for p, want := range cases {
		g, err := Compile(p, "/run")
		if err != nil {
			t.Fatal(err)
		}
		if g.MaxDepth() != want {
			t.Errorf("depth of %q = %d, want %d", p, g.MaxDepth(), want)
		}
	}
}

func TestCompileRoots(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	cases := []struct{ pattern, prefix, rootAbs string }{
		{"*.go", ".", "/run"},
		{"src/*.go", "src", "/run/src"},
		{"src/main.go", "src", "/run/src"},
		{"./a/../b/c/{x,y}/*.go", "b/c", "/run/b/c"},
		{"../lib/**", "../lib", "/lib"},
		{`src/\{x\}/*`, "src/{x}", "/run/src/{x}"},
		{`src/a\/b/*`, "src", "/run/src"}, // an escaped slash ends the literal root
		{"/etc/*.conf", "/etc", "/etc"},
		{"//etc//x/*", "/etc/x", "/etc/x"},
		{"/*", "/", "/"},
		{"~/docs/*.md", "/home/u/docs", "/home/u/docs"},
		{"~//docs/*.md", "/home/u/docs", "/home/u/docs"},
		{"~x/*", "~x", "/run/~x"}, // not the home directory
	}
	for _, c := range cases {
		g, err := Compile(c.pattern, "/run")
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if g.Prefix() != c.prefix || g.Root() != filepath.FromSlash(c.rootAbs) {
			t.Errorf("%q: prefix %q root %q, want %q %q", c.pattern, g.Prefix(), g.Root(), c.prefix, c.rootAbs)
		}
	}
	for _, p := range []string{"~", "src/", "a\x00b"} {
		if g, err := Compile(p, "/run"); err != nil || !g.Never() {
			t.Errorf("%q matches something (%v)", p, err)
		}
	}
}

// Compile's verdict is ParseGlob's, message for message; a pattern RE2 cannot hold is "too
// complex", never a panic.
func TestCompileInvalid(t *testing.T) {
	for _, p := range []string{"", "src/[a-z*.go", "[]", "[z-a]", "{a,b", "a}", "a**b", "***", `a\`, "\xff"} {
		_, err := Compile(p, "/run")
		static := catalog.CheckGlob(p)
		if err == nil || static == nil || err.Error() != static.Error() {
			t.Errorf("Compile(%q) = %v, CheckGlob = %v", p, err, static)
		}
	}
	huge := strings.Repeat("{a,", 2000) + "b" + strings.Repeat("}c", 2000) // RE2 refuses the nesting
	if _, err := Compile(huge, "/run"); err == nil || err.Error() != "the pattern is too complex" {
		t.Errorf("huge pattern: %v", err)
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"src/*.go", "/run/src/a.go", true},
		{"src/*.go", "/run/src/a/b.go", false},
		{"src/**", "/run/src/a/b.go", true},
		{"src/**", "/run/src", false}, // a/** matches below a, not a itself
		{"a/**/b", "/run/a/b", true},
		{"{**,x}/y", "/run/y", false}, // as an alternative, ** is one or more segments
		{"{**,x}/y", "/run/q/y", true},
		{"[!a]", "/run/b", true},
		{"[!a]", "/run/a", false},
		{"x[+-0]y", "/run/x/y", false}, // a class holding `/` never matches the separator
		{"*", "/elsewhere/a", false},
	}
	for _, c := range cases {
		g, err := Compile(c.pattern, "/run")
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := g.MatchAbs(filepath.FromSlash(c.path)); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

// globFuzzSeeds is FuzzGlobPattern's seed corpus: every token (`*`, `**`, `?`, classes,
// nested braces, escapes), anchors (`/`, `~`), and the malformed shapes. TestFuzzSeedBudget
// bounds it.
var globFuzzSeeds = []string{"*.go", "**/*.go", "src/**", "{a,b}/{c,{d,e}}", "[!a-z]?", `\*\{`, "a**b", "***", "[",
	"[]]", "[!]", "{", "}", "{,}", "{**,x}/y", "a/./../b", "/", "//", "~", "~/x", "[\\", "[a-", "\x00", "\xff",
	"{a,b}c}", "a{b{c,d}e", "[^/]", "é[é-ê]", "{**}", "**/", "/**/"}

// FuzzGlobPattern: the pattern compiler never panics, accepts exactly what the static check
// accepts (short of RE2's size limit), and a pattern made of plain characters matches itself.
func FuzzGlobPattern(f *testing.F) {
	for _, s := range globFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		g, err := Compile(p, "/run")
		static := catalog.CheckGlob(p)
		switch {
		case static != nil && err == nil:
			t.Fatalf("Compile accepted %q, which CheckGlob refuses: %v", p, static)
		case static == nil && err != nil && err.Error() != "the pattern is too complex":
			t.Fatalf("Compile refused %q, which CheckGlob accepts: %v", p, err)
		case err != nil:
			return
		}
		for _, s := range []string{"/run/a", "/run/a/b.go", "/run/.x", "/elsewhere"} {
			g.MatchAbs(s)
		}
		if !strings.ContainsAny(p, `*?[]{}\,~`) && !strings.Contains(p, "\x00") && !strings.HasSuffix(p, "/") &&
			!slices.Contains(strings.Split(p, "/"), "..") && !slices.Contains(strings.Split(p, "/"), ".") &&
			!strings.Contains(p, "//") && !strings.HasPrefix(p, "/") {
			if !g.MatchAbs("/run/" + p) {
				t.Errorf("plain pattern %q does not match itself", p)
			}
		}
	})
}

// TestFuzzSeedBudget keeps FuzzGlobPattern's seeds small enough that a one-minute fuzz run
// spends its time mutating rather than re-running and minimizing seeds.
func TestFuzzSeedBudget(t *testing.T) {
	fuzzbudget.Check(t, "FuzzGlobPattern", globFuzzSeeds, fuzzbudget.Budget{Count: 48, Largest: 256, Total: 1 << 10})
}
