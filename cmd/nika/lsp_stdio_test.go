package main

// Tests of `nika lsp` through the built binary over its real stdio: a whole
// session (initialize, didOpen, didChange, hover, completion, definition,
// references, codeAction, shutdown, exit), with the diagnostics held to what
// `nika check --json` prints for the same file.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// lspFinding is a finding as both sides can state it: `nika check --json`
// directly, an LSP diagnostic through its range and code.
type lspFinding struct {
	Line, Column            int
	Severity, Code, Message string
	Detail                  string
}

func (f lspFinding) String() string {
	return fmt.Sprintf("%d:%d %s %s %q — %q", f.Line, f.Column, f.Severity, f.Code, f.Message, f.Detail)
}

// checkFindings runs `nika check --json FILE` in dir and returns its
// findings, errors and warnings together, in position order.
func checkFindings(t *testing.T, dir, file string) []lspFinding {
	t.Helper()
	r := runBinary(t, dir, "check", "--json", file)
	var rep struct {
		Files []struct {
			Errors, Warnings []struct {
				Severity     string  `json:"severity"`
				Code         *string `json:"code"`
				Rule         string  `json:"rule"`
				Message      string  `json:"message"`
				Detail       string  `json:"detail"`
				Line, Column int
			}
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Files) != 1 {
		t.Fatalf("nika check --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	var out []lspFinding
	for _, list := range [][]struct {
		Severity     string  `json:"severity"`
		Code         *string `json:"code"`
		Rule         string  `json:"rule"`
		Message      string  `json:"message"`
		Detail       string  `json:"detail"`
		Line, Column int
	}{rep.Files[0].Errors, rep.Files[0].Warnings} {
		for _, f := range list {
			code := f.Rule
			if f.Code != nil {
				code = *f.Code
			}
			out = append(out, lspFinding{f.Line, f.Column, f.Severity, code, f.Message, f.Detail})
		}
	}
	sortFindings(out)
	return out
}

func sortFindings(fs []lspFinding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Line != fs[j].Line {
			return fs[i].Line < fs[j].Line
		}
		return fs[i].Column < fs[j].Column
	})
}

// lspDiagnostic is the part of a diagnostic the comparison reads.
type lspDiagnostic struct {
	Range struct {
		Start struct{ Line, Character int }
	}
	Severity int
	Code     string
	Message  string
}

// fromDiagnostics turns diagnostics back into findings, from the text: the
// range's start (0-based line, UTF-16 character) becomes a 1-based line and
// rune column; the message splits into message and detail at its first line
// break.
func fromDiagnostics(t *testing.T, text string, ds []lspDiagnostic) []lspFinding {
	t.Helper()
	lines := strings.Split(text, "\n")
	var out []lspFinding
	for _, d := range ds {
		if d.Range.Start.Line >= len(lines) {
			t.Fatalf("a diagnostic on line %d of a %d-line text", d.Range.Start.Line, len(lines))
		}
		runes, units := 0, 0
		for _, r := range lines[d.Range.Start.Line] {
			if units >= d.Range.Start.Character {
				break
			}
			units += len(utf16.Encode([]rune{r}))
			runes++
		}
		sev := map[int]string{1: "error", 2: "warning"}[d.Severity]
		msg, detail, _ := strings.Cut(d.Message, "\n")
		out = append(out, lspFinding{d.Range.Start.Line + 1, runes + 1, sev, d.Code, msg, detail})
	}
	sortFindings(out)
	return out
}

func sameFindings(t *testing.T, what string, got, want []lspFinding) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: nika check found nothing: the fixture is not broken", what)
	}
	g, w := fmt.Sprint(got), fmt.Sprint(want)
	if g != w {
		t.Errorf("%s: the language server's findings differ from nika check --json:\n got %s\nwant %s", what, g, w)
	}
}

// lspProc is a `nika lsp` process and a client on its stdio.
type lspProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	nextID int
	queue  []map[string]json.RawMessage
}

func startLSP(t *testing.T, dir string) *lspProc {
	t.Helper()
	cmd := exec.Command(nikaBin, "lsp")
	cmd.Dir = dir
	cmd.Env = testEnv
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &lspProc{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		in.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return p
}

func (p *lspProc) send(msg map[string]any) {
	p.t.Helper()
	msg["jsonrpc"] = "2.0"
	body, _ := json.Marshal(msg)
	if _, err := fmt.Fprintf(p.in, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		p.t.Fatal(err)
	}
}

// read reads one framed message from the server.
func (p *lspProc) read() map[string]json.RawMessage {
	p.t.Helper()
	length := -1
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			p.t.Fatalf("reading from nika lsp: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			length, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(p.out, body); err != nil {
		p.t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		p.t.Fatalf("%v: %s", err, body)
	}
	return m
}

func (p *lspProc) await(match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	p.t.Helper()
	for i, m := range p.queue {
		if match(m) {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			return m
		}
	}
	for {
		m := p.read()
		if match(m) {
			return m
		}
		p.queue = append(p.queue, m)
	}
}

func (p *lspProc) call(method string, params any, result any) {
	p.t.Helper()
	p.nextID++
	id := strconv.Itoa(p.nextID)
	p.send(map[string]any{"id": p.nextID, "method": method, "params": params})
	m := p.await(func(m map[string]json.RawMessage) bool { return string(m["id"]) == id && m["method"] == nil })
	if e := m["error"]; e != nil {
		p.t.Fatalf("%s: %s", method, e)
	}
	if result != nil {
		if err := json.Unmarshal(m["result"], result); err != nil {
			p.t.Fatalf("%s: %v: %s", method, err, m["result"])
		}
	}
}

func (p *lspProc) diagnostics(version int) []lspDiagnostic {
	p.t.Helper()
	var got struct {
		Version     int
		Diagnostics []lspDiagnostic
	}
	p.await(func(m map[string]json.RawMessage) bool {
		if string(m["method"]) != `"textDocument/publishDiagnostics"` || json.Unmarshal(m["params"], &got) != nil {
			return false
		}
		return got.Version == version
	})
	return got.Diagnostics
}

func TestLSPOverStdio(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(pkgDir, "..", "..", "lsp", "testdata", "broken.nika.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "broken.nika.yaml")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	uri := "file://" + file
	text := string(src)
	p := startLSP(t, dir)
	var init struct {
		Capabilities map[string]any
		ServerInfo   struct{ Name, Version string }
	}
	p.call("initialize", map[string]any{"processId": os.Getpid(), "rootUri": "file://" + dir, "capabilities": map[string]any{}}, &init)
	if init.ServerInfo.Name != "nika" || init.ServerInfo.Version != version {
		t.Errorf("serverInfo %+v", init.ServerInfo)
	}
	p.send(map[string]any{"method": "initialized", "params": map[string]any{}})
	p.send(map[string]any{"method": "textDocument/didOpen", "params": map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": 1, "text": text}}})
	sameFindings(t, "on open", fromDiagnostics(t, text, p.diagnostics(1)), checkFindings(t, dir, file))

	// An incremental change: `modle` → `model` on line 6.
	line := strings.Count(text[:strings.Index(text, "modle")], "\n")
	p.send(map[string]any{"method": "textDocument/didChange", "params": map[string]any{
		"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"range": map[string]any{
			"start": map[string]int{"line": line, "character": 0}, "end": map[string]int{"line": line, "character": 5}}, "text": "model"}}}})
	text = strings.Replace(text, "modle", "model", 1)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sameFindings(t, "after a change", fromDiagnostics(t, text, p.diagnostics(2)), checkFindings(t, dir, file))

	at := func(needle string, shift int) map[string]any {
		i := strings.Index(text, needle) + shift
		l := strings.Count(text[:i], "\n")
		col := len(utf16.Encode([]rune(text[strings.LastIndex(text[:i], "\n")+1 : i])))
		return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]int{"line": l, "character": col}}
	}
	var h struct{ Contents struct{ Value string } }
	p.call("textDocument/hover", at("nika:fetc", 2), &h)
	if !strings.Contains(h.Contents.Value, "NIKA-INVOKE-001") {
		t.Errorf("hover on nika:fetc: %q", h.Contents.Value)
	}
	var list struct{ Items []struct{ Label string } }
	p.call("textDocument/completion", at("depends_on: [fetsh]", len("depends_on: [")), &list)
	if !hasLabel(list.Items, "fetch") {
		t.Errorf("completion in depends_on: %+v", list.Items)
	}
	var locs []struct {
		Range struct{ Start struct{ Line int } }
	}
	p.call("textDocument/definition", at("tasks.summarize", 7), &locs)
	if len(locs) != 1 || locs[0].Range.Start.Line != strings.Count(text[:strings.Index(text, "id: summarize")], "\n") {
		t.Errorf("definition of tasks.summarize: %+v", locs)
	}
	refs := at("id: fetch", 5)
	refs["context"] = map[string]bool{"includeDeclaration": true}
	p.call("textDocument/references", refs, &locs)
	if len(locs) != 3 { // its id and two tasks.fetch (summarize's `depnds_on` is no depends_on)
		t.Errorf("references of fetch: %d, want 3: %+v", len(locs), locs)
	}
	var actions []struct{ Title string }
	ca := at("fetsh", 0)
	ca["range"] = map[string]any{"start": ca["position"], "end": ca["position"]}
	ca["context"] = map[string]any{"diagnostics": []any{}}
	delete(ca, "position")
	p.call("textDocument/codeAction", ca, &actions)
	if len(actions) != 1 || actions[0].Title != "Change `fetsh` to `fetch`" {
		t.Errorf("code actions at fetsh: %+v", actions)
	}

	p.call("shutdown", nil, nil)
	p.send(map[string]any{"method": "exit"})
	p.in.Close()
	if err := waitExit(p.cmd); err != nil {
		t.Errorf("nika lsp after shutdown and exit: %v, want exit 0", err)
	}
}

func hasLabel(items []struct{ Label string }, label string) bool {
	for _, it := range items {
		if it.Label == label {
			return true
		}
	}
	return false
}

// waitExit waits for the process, bounded so a server that never exits
// fails the test rather than hanging it.
func waitExit(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		return errors.New("did not exit within a minute")
	}
}

// An exit without shutdown is exit code 1 (LSP 3.17), and so is the end of
// the input before shutdown.
func TestLSPExitWithoutShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		exit bool
	}{{"exit", true}, {"end of input", false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := startLSP(t, t.TempDir())
			p.call("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, nil)
			if tc.exit {
				p.send(map[string]any{"method": "exit"})
			}
			p.in.Close()
			var ee *exec.ExitError
			if err := waitExit(p.cmd); !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("nika lsp: %v, want exit status 1", err)
			}
		})
	}
}

func TestLSPUsage(t *testing.T) {
	if r := runBinary(t, t.TempDir(), "lsp", "-h"); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: nika lsp [--model M]\n") || !strings.Contains(r.stdout, "--model") {
		t.Errorf("nika lsp -h: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, t.TempDir(), "lsp", "file.nika.yaml"); r.code != 2 || !strings.Contains(r.stderr, "takes no arguments") {
		t.Errorf("nika lsp FILE: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBinary(t, t.TempDir(), "lsp", "--model", "nope"); r.code != 2 {
		t.Errorf("nika lsp --model nope: exit %d\n%s", r.code, r.stderr)
	}
}
