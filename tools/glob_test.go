package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
	"github.com/nikahq/nika/spec/schema"
	"github.com/nikahq/nika/tools/glob"
)

// globTree builds a run directory for the glob and grep tests:
//
//	a.go .hidden.go b.txt linkfile.go -> a.go  dangling.go -> nowhere.go
//	.dotdir/x.go
//	src/main.go src/util.go src/sub/deep.go src/sub/x.txt src/a-b/c.go
//	docs/README.md docs/guide.md
//	p/x.md p-q/x.md          (walk order differs from byte order)
//	weird/[x].go weird/a,b.go
//	linkdir -> src           (a directory symlink: never followed below the root)
func globTree(t *testing.T) string {
	t.Helper()
	run := t.TempDir()
	for _, f := range []string{"a.go", ".hidden.go", "b.txt", ".dotdir/x.go", "src/main.go", "src/util.go",
		"src/sub/deep.go", "src/sub/x.txt", "src/a-b/c.go", "docs/README.md", "docs/guide.md", "p/x.md", "p-q/x.md",
		"weird/[x].go", "weird/a,b.go"} {
		writeFile(t, filepath.Join(run, f), []byte("package x // "+f+"\n"))
	}
	for link, target := range map[string]string{"linkfile.go": "a.go", "dangling.go": "nowhere.go", "linkdir": "src"} {
		if err := os.Symlink(target, filepath.Join(run, link)); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

func TestGlob(t *testing.T) {
	run := globTree(t)
	allGo := []string{".dotdir/x.go", ".hidden.go", "a.go", "linkfile.go", "src/a-b/c.go", "src/main.go", "src/sub/deep.go", "src/util.go", "weird/[x].go", "weird/a,b.go"}
	cases := []struct {
		name    string
		pattern string
		exclude []any
		want    []string
	}{
		{"star with dotfiles and a file link", "*.go", nil, []string{".hidden.go", "a.go", "linkfile.go"}},
		{"double star everywhere, no directory link", "**/*.go", nil, allGo},
		{"a whole tree", "src/**", nil, []string{"src/a-b/c.go", "src/main.go", "src/sub/deep.go", "src/sub/x.txt", "src/util.go"}},
		{"double star matches zero segments", "src/**/*.go", nil, []string{"src/a-b/c.go", "src/main.go", "src/sub/deep.go", "src/util.go"}},
		{"one segment", "src/*.go", nil, []string{"src/main.go", "src/util.go"}},
		{"byte order, not walk order", "*/x.md", nil, []string{"p-q/x.md", "p/x.md"}},
		{"question mark", "src/?ain.go", nil, []string{"src/main.go"}},
		{"class", "src/[mu]*.go", nil, []string{"src/main.go", "src/util.go"}},
		{"negated class", "src/[!m]*.go", nil, []string{"src/util.go"}},
		{"range", "docs/[A-Z]*", nil, []string{"docs/README.md"}},
		{"braces", "{src,docs}/*.{go,md}", nil, []string{"docs/README.md", "docs/guide.md", "src/main.go", "src/util.go"}},
		{"braces across segments", "src/{sub/deep,main}.go", nil, []string{"src/main.go", "src/sub/deep.go"}},
		{"nested braces", "src/{m{a,x}in,u*}.go", nil, []string{"src/main.go", "src/util.go"}},
		{"empty alternative", "src/sub/deep{,.go}", nil, []string{"src/sub/deep.go"}},
		{"double star in braces", "{**,x}/deep.go", nil, []string{"src/sub/deep.go"}},
		{"literal path", "src/main.go", nil, []string{"src/main.go"}},
		{"cleaned output", "./src/../src//main.go", nil, []string{"src/main.go"}},
		{"escaped class characters", `weird/\[x\].go`, nil, []string{"weird/[x].go"}},
		{"literal comma", "weird/a,b.go", nil, []string{"weird/a,b.go"}},
		{"star does not cross a slash", "*.txt", nil, []string{"b.txt"}},
		{"question mark does not match a slash", "src?main.go", nil, []string{}},
		{"dot segment after a wildcard matches nothing", "*/../a.go", nil, []string{}},
		{"root given as a directory link is followed", "linkdir/*.go", nil, []string{"linkdir/main.go", "linkdir/util.go"}},
		{"directory link not followed below the root", "**/deep.go", nil, []string{"src/sub/deep.go"}},
		{"missing root", "missing/**", nil, []string{}},
		{"root is a file", "a.go/*", nil, []string{}},
		{"trailing slash", "src/", nil, []string{}},
		{"directories are not listed", "*", nil, []string{".hidden.go", "a.go", "b.txt", "linkfile.go"}},
		{"exclude files", "**/*.go", []any{"src/**", "weird/*"}, []string{".dotdir/x.go", ".hidden.go", "a.go", "linkfile.go"}},
		{"exclude prunes directories", "**/*.go", []any{".*", "src", "weird"}, []string{"a.go", "linkfile.go"}},
		{"exclude with double star", "**", []any{"**/*.go", "**/*.md"}, []string{"b.txt", "src/sub/x.txt"}},
		{"exclude with braces", "src/**", []any{"src/{sub,a-b}/**"}, []string{"src/main.go", "src/util.go"}},
		{"relative root above the run directory", "../" + filepath.Base(run) + "/src/*.go", nil,
			[]string{"../" + filepath.Base(run) + "/src/main.go", "../" + filepath.Base(run) + "/src/util.go"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"pattern": c.pattern}
			if c.exclude != nil {
				args["exclude"] = c.exclude
			}
			out, err := exec(t, Call{Name: "nika:glob", Args: args, RunDir: run})
			if err != nil {
				t.Fatal(err)
			}
			checkCatalogOutput(t, "nika:glob", out)
			got := globStrings(t, out)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("glob %q = %q, want %q", c.pattern, got, c.want)
			}
			if !slices.IsSorted(got) {
				t.Errorf("not byte-sorted: %q", got)
			}
		})
	}
}

// globStrings converts a glob output, which must be a []any of strings, for comparisons.
func globStrings(t *testing.T, out any) []string {
	t.Helper()
	list, ok := out.([]any)
	if !ok {
		t.Fatalf("output %T, want []any", out)
	}
	got := make([]string, len(list))
	for i, e := range list {
		if got[i], ok = e.(string); !ok {
			t.Fatalf("element %d is %T, want a string", i, e)
		}
	}
	return got
}

// checkCatalogOutput fails when out does not conform to the catalog's output schema of name:
// the runtime must agree with the contract agents and the checker see.
func checkCatalogOutput(t *testing.T, name string, out any) {
	t.Helper()
	cat, ok := catalog.Lookup(name)
	if !ok {
		t.Fatalf("%s is not in the catalog", name)
	}
	var doc any
	if err := json.Unmarshal(cat.Output, &doc); err != nil {
		t.Fatal(err)
	}
	sch, err := schema.Compile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if vs := sch.Validate(out); len(vs) > 0 {
		t.Errorf("%s output %s breaks its catalog schema: %v", name, js(out), vs)
	}
}

func TestGlobAbsolute(t *testing.T) {
	run := globTree(t)
	other := t.TempDir() // the run directory does not matter for an absolute pattern
	out, err := exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": filepath.ToSlash(run) + "/src/*.go", "exclude": []any{"*"}}, RunDir: other})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.ToSlash(run) + "/src/main.go", filepath.ToSlash(run) + "/src/util.go"}
	if got := globStrings(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("absolute glob = %q, want %q", got, want)
	}
	// An absolute exclude applies to an absolute pattern.
	out, err = exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": filepath.ToSlash(run) + "/src/*.go",
		"exclude": []any{filepath.ToSlash(run) + "/src/m*"}}, RunDir: other})
	if err != nil || !reflect.DeepEqual(globStrings(t, out), want[1:]) {
		t.Errorf("absolute exclude: %q, %v", out, err)
	}
	// ~ is the home directory; outputs are then absolute.
	t.Setenv("HOME", run)
	out, err = exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": "~/docs/*.md"}, RunDir: other})
	if want := []string{filepath.ToSlash(run) + "/docs/README.md", filepath.ToSlash(run) + "/docs/guide.md"}; err != nil || !reflect.DeepEqual(globStrings(t, out), want) {
		t.Errorf("~ glob = %q, %v; want %q", out, err, want)
	}
}

func TestGlobInvalid(t *testing.T) {
	run := globTree(t)
	cases := []struct {
		name string
		args map[string]any
		code string
	}{
		{"unclosed class", map[string]any{"pattern": "src/[a-z*.go"}, "NIKA-BUILTIN-GLOB-001"},
		{"empty class", map[string]any{"pattern": "[]"}, "NIKA-BUILTIN-GLOB-001"},
		{"reversed range", map[string]any{"pattern": "[z-a]"}, "NIKA-BUILTIN-GLOB-001"},
		{"unclosed brace", map[string]any{"pattern": "{a,b"}, "NIKA-BUILTIN-GLOB-001"},
		{"unmatched brace", map[string]any{"pattern": "a}"}, "NIKA-BUILTIN-GLOB-001"},
		{"double star inside a segment", map[string]any{"pattern": "a**b"}, "NIKA-BUILTIN-GLOB-001"},
		{"triple star", map[string]any{"pattern": "***"}, "NIKA-BUILTIN-GLOB-001"},
		{"lone backslash", map[string]any{"pattern": `a\`}, "NIKA-BUILTIN-GLOB-001"},
		{"invalid exclude", map[string]any{"pattern": "*", "exclude": []any{"ok", "[x"}}, "NIKA-BUILTIN-GLOB-001"},
		{"empty pattern", map[string]any{"pattern": ""}, "NIKA-INVOKE-002"},
		{"exclude not strings", map[string]any{"pattern": "*", "exclude": []any{1}}, "NIKA-INVOKE-002"},
		{"unknown argument", map[string]any{"pattern": "*", "excludes": []any{}}, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:glob", Args: c.args, RunDir: run})
			if codeOf(t, err) != c.code || out != nil {
				t.Fatalf("out %v, err = %v, want code %q", out, err, c.code)
			}
		})
	}
	// A pattern too large for RE2 is GLOB-001 at run time, never a panic.
	huge := strings.Repeat("{a,", 2000) + "b" + strings.Repeat("}c", 2000) // RE2 refuses the nesting
	if _, err := exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": huge}, RunDir: run}); codeOf(t, err) != "NIKA-BUILTIN-GLOB-001" {
		t.Errorf("huge pattern: %v", err)
	}
}

func TestGlobPermits(t *testing.T) {
	root, run := fsTree(t)
	writeFile(t, filepath.Join(root, "other", "x.txt"), []byte("x"))
	writeFile(t, filepath.Join(run, "src", "deep", "d.txt"), []byte("d"))
	permits := &spec.Permits{FSRead: []string{"src/**"}, Tools: []string{"nika:glob"}, ToolsSet: true}
	cases := []struct {
		pattern string
		want    []string
		code    string
	}{
		// escape resolves outside (omitted), outdir is a directory link (not followed),
		// dangling has no target, inner stays inside.
		{"src/*", []string{"src/inner", "src/ok.txt"}, ""},
		{"src/**", []string{"src/deep/d.txt", "src/inner", "src/ok.txt"}, ""},
		{"**", []string{"src/deep/d.txt", "src/inner", "src/ok.txt"}, ""}, // out/ is omitted, not refused
		{"src/deep/*.txt", []string{"src/deep/d.txt"}, ""},
		{"out/*", nil, "NIKA-SEC-004"},
		{"../other/*.txt", nil, "NIKA-SEC-004"}, // .. escape to a tree no glob reaches
		{filepath.ToSlash(filepath.Join(root, "other")) + "/*", nil, "NIKA-SEC-004"},
		{"/etc/*", nil, "NIKA-SEC-004"},
		{"../*.txt", []string{}, ""},                // the parent holds the permitted tree: its secret is omitted
		{"src/outdir/*.txt", []string{}, ""},        // a root link resolving to an ancestor: contents omitted
		{"src/outdir/other/*", nil, "NIKA-SEC-004"}, // a root link escaping to another tree
	}
	for _, c := range cases {
		t.Run(c.pattern, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": c.pattern}, RunDir: run, Permits: permits})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if c.code != "" {
				if d := details(t, err); d["gate"] != "fs.read" {
					t.Errorf("details = %v", d)
				}
				return
			}
			if got := globStrings(t, out); !reflect.DeepEqual(got, c.want) {
				t.Errorf("glob %q = %q, want %q", c.pattern, got, c.want)
			}
		})
	}
	// Without permits the escaping link is listed (D38): only the floors apply.
	out, err := exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": "src/*"}, RunDir: run})
	if want := []string{"src/escape", "src/inner", "src/ok.txt"}; err != nil || !reflect.DeepEqual(globStrings(t, out), want) {
		t.Errorf("without permits: %q, %v; want %q", out, err, want)
	}
	// permits.tools must admit the tool.
	_, err = exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": "src/*"}, RunDir: run,
		Permits: &spec.Permits{FSRead: []string{"**"}, Tools: []string{"nika:read"}, ToolsSet: true}})
	if codeOf(t, err) != "NIKA-SEC-004" || details(t, err)["gate"] != "tools" {
		t.Errorf("tools gate: %v", err)
	}
	// No fs.read at all: every root is outside.
	_, err = exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": "*"}, RunDir: run,
		Permits: &spec.Permits{Tools: []string{"nika:glob"}, ToolsSet: true}})
	if codeOf(t, err) != "NIKA-SEC-004" {
		t.Errorf("no fs.read: %v", err)
	}
}

// A walk stopped by its context is NIKA-CANCEL-001 (tools/glob's walk returns ctx.Err() at the
// next directory); a call whose context is done before it starts is refused at once.
func TestGlobWalkCancellation(t *testing.T) {
	run := globTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &glob.Walk{MaxDepth: -1, File: func(glob.Entry) error {
		cancel()
		return nil
	}}
	if err := walk(ctx, w, run, run); codeOf(t, err) != "NIKA-CANCEL-001" {
		t.Fatalf("err = %v, want NIKA-CANCEL-001", err)
	}
	if _, err := NewBuiltins().Execute(ctx, Call{Name: "nika:glob", Args: map[string]any{"pattern": "**"}, RunDir: run}); codeOf(t, err) != "NIKA-CANCEL-001" {
		t.Errorf("Execute with a done context: %v", err)
	}
}

// An excluded directory prunes its tree whatever the walk starts from: the root of the
// pattern, or a directory above it, matching an exclude leaves its files out too, as
// `**/*.go` with exclude `src` does.
func TestGlobExcludeCoversTheRoot(t *testing.T) {
	run := globTree(t)
	for _, c := range []struct {
		pattern string
		exclude []any
	}{
		{"src/*.go", []any{"src"}},
		{"src/sub/*.go", []any{"src"}},
		{"src/**", []any{"**/sub", "src"}},
		{"src/sub/**", []any{"*"}},
	} {
		out, err := exec(t, Call{Name: "nika:glob", Args: map[string]any{"pattern": c.pattern, "exclude": c.exclude}, RunDir: run})
		if err != nil {
			t.Fatal(err)
		}
		if got := globStrings(t, out); len(got) != 0 {
			t.Errorf("glob %q exclude %v = %q, want [] (the tree is excluded)", c.pattern, c.exclude, got)
		}
	}
}
