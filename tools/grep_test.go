package tools

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/spec"
)

// grepTree builds:
//
//	a.txt        hello / world / Hello again
//	crlf.txt     one / two hello  (CRLF endings)
//	noeol.txt    x / hello at end (no final newline)
//	bin.dat      hello NUL world  (binary)
//	.hidden      hello hidden
//	sub/b.go     package b // hello
//	sub-x/c.txt  hello            (sorts before sub/)
//	linkdir -> sub                (never followed)
//	linkfile -> a.txt             (searched)
func grepTree(t *testing.T) string {
	t.Helper()
	run := t.TempDir()
	for name, content := range map[string]string{
		"a.txt":       "hello\nworld\nHello again\n",
		"crlf.txt":    "one\r\ntwo hello\r\n",
		"noeol.txt":   "x\nhello at end",
		"bin.dat":     "hello\x00world\n",
		".hidden":     "hello hidden\n",
		"sub/b.go":    "package b // hello\n",
		"sub-x/c.txt": "hello\n",
	} {
		writeFile(t, filepath.Join(run, name), []byte(content))
	}
	for link, target := range map[string]string{"linkdir": "sub", "linkfile": "a.txt"} {
		if err := os.Symlink(target, filepath.Join(run, link)); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

func hit(path string, line int, match string) map[string]any {
	return map[string]any{"path": path, "line": line, "match": match}
}

func TestGrep(t *testing.T) {
	run := grepTree(t)
	absRun := filepath.ToSlash(run)
	cases := []struct {
		name string
		args map[string]any
		want []any
	}{
		{"whole run directory, sorted by path", map[string]any{"pattern": "hello"}, []any{
			hit(".hidden", 1, "hello hidden"), hit("a.txt", 1, "hello"), hit("crlf.txt", 2, "two hello"),
			hit("linkfile", 1, "hello"), hit("noeol.txt", 2, "hello at end"), hit("sub-x/c.txt", 1, "hello"),
			hit("sub/b.go", 1, "package b // hello")}},
		{"case-insensitive", map[string]any{"pattern": "^hello", "case_insensitive": true, "path": "a.txt"}, []any{
			hit("a.txt", 1, "hello"), hit("a.txt", 3, "Hello again")}},
		{"case-sensitive by default", map[string]any{"pattern": "^Hello", "path": "a.txt"}, []any{hit("a.txt", 3, "Hello again")}},
		{"anchors see lines without their ending", map[string]any{"pattern": "^(one|world)$"}, []any{
			hit("a.txt", 2, "world"), hit("crlf.txt", 1, "one"), hit("linkfile", 2, "world")}},
		{"last line without a newline", map[string]any{"pattern": "end$", "path": "noeol.txt"}, []any{hit("noeol.txt", 2, "hello at end")}},
		{"a subdirectory", map[string]any{"pattern": "hello", "path": "sub"}, []any{hit("sub/b.go", 1, "package b // hello")}},
		{"a cleaned relative directory", map[string]any{"pattern": "hello", "path": "./sub/"}, []any{hit("sub/b.go", 1, "package b // hello")}},
		{"a directory link given as path is followed", map[string]any{"pattern": "hello", "path": "linkdir"}, []any{hit("linkdir/b.go", 1, "package b // hello")}},
		{"a file", map[string]any{"pattern": "o", "path": "crlf.txt"}, []any{hit("crlf.txt", 1, "one"), hit("crlf.txt", 2, "two hello")}},
		{"a binary file given directly is skipped", map[string]any{"pattern": "hello", "path": "bin.dat"}, []any{}},
		{"no match", map[string]any{"pattern": "zebra"}, []any{}},
		{"absolute path", map[string]any{"pattern": "hello", "path": filepath.Join(run, "sub")}, []any{hit(absRun+"/sub/b.go", 1, "package b // hello")}},
		{"absolute file", map[string]any{"pattern": "world", "path": filepath.Join(run, "a.txt")}, []any{hit(absRun+"/a.txt", 2, "world")}},
		{"an optional pattern", map[string]any{"pattern": "^x?$", "path": "noeol.txt"}, []any{hit("noeol.txt", 1, "x")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:grep", Args: c.args, RunDir: run})
			if err != nil {
				t.Fatal(err)
			}
			checkCatalogOutput(t, "nika:grep", out)
			if !reflect.DeepEqual(out, c.want) {
				t.Errorf("grep = %s\nwant %s", js(out), js(c.want))
			}
		})
	}
}

func TestGrepErrors(t *testing.T) {
	run := grepTree(t)
	cases := []struct {
		name string
		args map[string]any
		code string
	}{
		{"unclosed group", map[string]any{"pattern": "(a"}, "NIKA-BUILTIN-GREP-001"},
		{"look-behind", map[string]any{"pattern": "(?<!//) TODO"}, "NIKA-BUILTIN-GREP-001"},
		{"missing path", map[string]any{"pattern": "a", "path": "missing"}, "NIKA-BUILTIN-GREP-002"},
		{"missing below a file", map[string]any{"pattern": "a", "path": "a.txt/x"}, "NIKA-BUILTIN-GREP-002"},
		{"empty pattern", map[string]any{"pattern": ""}, "NIKA-INVOKE-002"},
		{"wrong type", map[string]any{"pattern": "a", "case_insensitive": "yes"}, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:grep", Args: c.args, RunDir: run})
			if codeOf(t, err) != c.code || out != nil {
				t.Fatalf("out %v, err = %v, want code %q", out, err, c.code)
			}
		})
	}
	// The runtime check, without the static rule in front of it.
	in := &invocation{call: Call{Name: "nika:grep", RunDir: run}, args: map[string]any{"pattern": "a(", "case_insensitive": true}}
	if _, err := runGrep(context.Background(), in); codeOf(t, err) != "NIKA-BUILTIN-GREP-001" {
		t.Errorf("runGrep with a bad regexp: %v", err)
	}
}

func TestGrepBinaryDetectionWindow(t *testing.T) {
	run := t.TempDir()
	early := strings.Repeat("a", grepBinaryScan-1) + "\x00 hello\n"
	late := strings.Repeat("a", grepBinaryScan) + "\x00 hello\n"
	writeFile(t, filepath.Join(run, "early.txt"), []byte(early))
	writeFile(t, filepath.Join(run, "late.txt"), []byte(late))
	out, err := exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": "hello"}, RunDir: run})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{hit("late.txt", 1, strings.TrimSuffix(late, "\n"))}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("a NUL within the first 8 KiB makes a file binary, after it not: got %d hits", len(out.([]any)))
	}
}

func TestGrepLongLines(t *testing.T) {
	run := t.TempDir()
	long := "needle" + strings.Repeat("x", 2*grepMaxLine) + "needle-in-the-skipped-part"
	writeFile(t, filepath.Join(run, "long.txt"), []byte(long+"\nsecond needle\n"+strings.Repeat("y", grepBufSize+10)+" needle\n"))
	out, err := exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": "needle", "path": "long.txt"}, RunDir: run})
	if err != nil {
		t.Fatal(err)
	}
	hits := out.([]any)
	if len(hits) != 3 {
		t.Fatalf("got %d hits, want 3", len(hits))
	}
	first := hits[0].(map[string]any)
	if m := first["match"].(string); first["line"] != 1 || len(m) != grepMaxLine || !strings.HasPrefix(m, "needle") {
		t.Errorf("the long line is reported as line %v with %d bytes, want line 1 cut to %d", first["line"], len(m), grepMaxLine)
	}
	if second := hits[1].(map[string]any); second["line"] != 2 || second["match"] != "second needle" {
		t.Errorf("second hit = %v", second)
	}
	// A line longer than the read buffer but under the limit is reported whole.
	if third := hits[2].(map[string]any); third["line"] != 3 || len(third["match"].(string)) != grepBufSize+17 {
		t.Errorf("third hit: line %v, %d bytes", third["line"], len(third["match"].(string)))
	}
	// Only the kept prefix is matched: the tail of the long line is not searched.
	out, _ = exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": "skipped", "path": "long.txt"}, RunDir: run})
	if len(out.([]any)) != 0 {
		t.Errorf("matched beyond the line limit: %d hits", len(out.([]any)))
	}
}

func TestGrepInvalidUTF8(t *testing.T) {
	run := t.TempDir()
	writeFile(t, filepath.Join(run, "l1.txt"), []byte("caf\xe9 ok\n"))
	out, err := exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": "ok"}, RunDir: run})
	if want := []any{hit("l1.txt", 1, "caf\uFFFD ok")}; err != nil || !reflect.DeepEqual(out, want) {
		t.Errorf("grep = %v, %v", out, err)
	}
}

func TestGrepPermits(t *testing.T) {
	root, run := fsTree(t)
	writeFile(t, filepath.Join(root, "other", "x.txt"), []byte("ok"))
	permits := &spec.Permits{FSRead: []string{"src/**"}, Tools: []string{"nika:grep"}, ToolsSet: true}
	inside := []any{hit("src/inner", 1, "ok"), hit("src/ok.txt", 1, "ok")}
	cases := []struct {
		path string
		want []any
		code string
	}{
		{"src", inside, ""}, // escape (a link out) omitted, outdir not followed
		{".", inside, ""},   // out/ is not readable: omitted
		{"src/ok.txt", []any{hit("src/ok.txt", 1, "ok")}, ""},
		{"src/inner", []any{hit("src/inner", 1, "ok")}, ""},
		{"..", []any{hit("../run/src/inner", 1, "ok"), hit("../run/src/ok.txt", 1, "ok")}, ""},
		{"src/escape", nil, "NIKA-SEC-004"}, // a file link out of the tree
		// A directory link given as path resolves to root/, an ancestor of the permitted tree: a
		// reachable walk root, below which only the admitted files are searched.
		{"src/outdir", []any{hit("src/outdir/run/src/inner", 1, "ok"), hit("src/outdir/run/src/ok.txt", 1, "ok")}, ""},
		{"../secret.txt", nil, "NIKA-SEC-004"}, // .. escape to a file
		{"../other", nil, "NIKA-SEC-004"},      // .. escape to a directory
		{"out", nil, "NIKA-SEC-004"},
		{"src/missing.txt", nil, "NIKA-BUILTIN-GREP-002"}, // inside: the path error
		{"out/missing.txt", nil, "NIKA-SEC-004"},          // outside: no existence leak
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": ".", "path": c.path}, RunDir: run, Permits: permits})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if c.code == "NIKA-SEC-004" {
				if d := details(t, err); d["gate"] != "fs.read" || d["path"] != c.path {
					t.Errorf("details = %v", d)
				}
				return
			}
			if c.code == "" && !reflect.DeepEqual(out, c.want) {
				t.Errorf("grep %s = %s\nwant %s", c.path, js(out), js(c.want))
			}
		})
	}
	// Without permits the escaping link is searched (D38).
	out, err := exec(t, Call{Name: "nika:grep", Args: map[string]any{"pattern": "secret", "path": "src"}, RunDir: run})
	if want := []any{hit("src/escape", 1, "secret")}; err != nil || !reflect.DeepEqual(out, want) {
		t.Errorf("without permits: %s, %v", js(out), err)
	}
}

func TestGrepCancellation(t *testing.T) {
	run := t.TempDir()
	writeFile(t, filepath.Join(run, "many.txt"), []byte(strings.Repeat("line\n", 10000)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	re := regexp.MustCompile("line")
	if _, err := grepFile(ctx, re, filepath.Join(run, "many.txt"), "many.txt"); codeOf(t, err) != "NIKA-CANCEL-001" {
		t.Errorf("grepFile with a done context: %v", err)
	}
	if _, err := NewBuiltins().Execute(ctx, Call{Name: "nika:grep", Args: map[string]any{"pattern": "x"}, RunDir: run}); codeOf(t, err) != "NIKA-CANCEL-001" {
		t.Errorf("Execute with a done context: %v", err)
	}
}

// A huge file with no line break (a sparse 1 TiB file whose first 8 KiB are text) is one
// endless line: the search must still notice a cancelled context instead of reading it all.
func TestGrepCancelledInsideALongLine(t *testing.T) {
	run := t.TempDir()
	p := filepath.Join(run, "huge.txt")
	writeFile(t, p, []byte(strings.Repeat("a", 16<<10)))
	if err := os.Truncate(p, 1<<40); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := NewBuiltins().Execute(ctx, Call{Name: "nika:grep", Args: map[string]any{"pattern": "x", "path": "huge.txt"}, RunDir: run})
		done <- err
	}()
	select {
	case err := <-done:
		if codeOf(t, err) != "NIKA-CANCEL-001" {
			t.Errorf("grep of an endless line with a done context: %v, want NIKA-CANCEL-001", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("grep still reading an endless line 10 s after its context ended")
	}
}
