package main

// Tests of `nika mcp`: an SDK client talks to the server over the SDK's
// in-memory transport and every tool's text is held to what the matching CLI
// command prints for the same workflow text, named workflow.nika.yaml, in a
// directory without an MCP registry. One black-box test drives the real
// binary over stdio with the SDK's CommandTransport; others pipe a whole
// session into it at once, well-formed (testdata/mcpserve/ has none: the
// requests carry fixtures) and with bad lines (testdata/mcpserve/malformed.jsonl).
//
// The tool list is a golden (testdata/mcpserve/tools.golden.json); refresh it
// with `go test ./cmd/nika/ -run MCPServe -update` and review the diff.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/nikahq/nika/spec"
)

// noLeaks fails the test if it leaves goroutines behind. The package's
// TestMain is shared with the CLI tests, so the check is per test, ignoring
// what was already running when the test started.
func noLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// mcpSession connects an SDK client to a fresh server over in-memory
// transports. At cleanup it closes the client and requires the server to have
// ended without error: a client going away is a clean shutdown.
func mcpSession(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	clientT, serverT := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- serveMCP(ctx, serverT) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "nika-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatalf("connecting to the server: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("server ended with %v after the client closed, want nil", err)
		}
	})
	return cs
}

// callText calls a tool and returns its only content block's text.
func callText(t *testing.T, cs *mcp.ClientSession, tool string, args any) (text string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1", tool, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: unexpected structuredContent %v", tool, res.StructuredContent)
	}
	return tc.Text, res.IsError
}

// cliOn writes text as workflow.nika.yaml in a fresh directory and runs the
// CLI in-process there with args, the file name appended.
func cliOn(t *testing.T, text string, args ...string) result {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, mcpWorkflowName), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return runInProcess(t, dir, append(args, mcpWorkflowName)...)
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pkgDir, "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestMCPServeCheck(t *testing.T) {
	noLeaks(t)
	cs := mcpSession(t)
	for _, tc := range []struct {
		name      string
		text      string
		wantValid bool
		wantCodes []string // error codes expected among the findings, at least
	}{
		{name: "valid", text: fixture(t, "valid.nika.yaml"), wantValid: true},
		{name: "warnings only", text: fixture(t, "warnings.nika.yaml"), wantValid: true},
		{name: "errors", text: fixture(t, "errors.nika.yaml"), wantValid: false},
		{name: "yaml syntax error", text: fixture(t, "syntax.nika.yaml"), wantValid: false},
		{name: "no model without --model", text: fixture(t, "modelless.nika.yaml"), wantValid: false},
		// No registry is read: an mcp: tool is left to the runtime, as the CLI
		// does without .nika/mcp_servers.json.
		{name: "mcp tool without registry", text: fixture(t, "mcp.nika.yaml"), wantValid: true},
		{name: "empty text", text: "", wantValid: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := callText(t, cs, "nika_check", map[string]any{"workflow_yaml": tc.text})
			if isErr {
				t.Fatalf("nika_check returned a tool error: %s", got)
			}
			want := cliOn(t, tc.text, "check", "--json")
			if got != want.stdout {
				t.Errorf("nika_check differs from `nika check --json`:\n got: %s\nwant: %s", got, want.stdout)
			}
			var rep spec.CheckReport
			if err := json.Unmarshal([]byte(got), &rep); err != nil {
				t.Fatalf("nika_check result is not the D21 JSON: %v\n%s", err, got)
			}
			if rep.Valid != tc.wantValid {
				t.Errorf("valid = %v, want %v\n%s", rep.Valid, tc.wantValid, got)
			}
			if len(rep.Files) != 1 || rep.Files[0].File != mcpWorkflowName {
				t.Errorf("files = %+v, want one file named %s", rep.Files, mcpWorkflowName)
			}
			if !tc.wantValid && len(rep.Files) == 1 && len(rep.Files[0].Errors) == 0 {
				t.Errorf("invalid workflow reported without errors: %s", got)
			}
		})
	}
}

func TestMCPServeGraph(t *testing.T) {
	noLeaks(t)
	cs := mcpSession(t)
	diamond, warned := fixture(t, "diamond.nika.yaml"), fixture(t, "warnings.nika.yaml")
	for _, tc := range []struct {
		name   string
		text   string
		format string
		want   string // a substring the output must have, beyond equality with the CLI
	}{
		{"mermaid", diamond, "mermaid", "left"},
		{"dot", diamond, "dot", "digraph"},
		{"json", diamond, "json", `"join"`},
		{"warnings are left out", warned, "mermaid", "second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := callText(t, cs, "nika_graph", map[string]any{"workflow_yaml": tc.text, "format": tc.format})
			if isErr {
				t.Fatalf("nika_graph returned a tool error: %s", got)
			}
			want := cliOn(t, tc.text, "graph", "--format", tc.format)
			if want.code != exitOK {
				t.Fatalf("nika graph exited %d: %s", want.code, want.stderr)
			}
			if got != want.stdout {
				t.Errorf("nika_graph differs from `nika graph --format %s`:\n got: %s\nwant: %s", tc.format, got, want.stdout)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("graph lacks %q:\n%s", tc.want, got)
			}
		})
	}
	t.Run("formats differ", func(t *testing.T) {
		seen := map[string]string{}
		for _, f := range []string{"mermaid", "dot", "json"} {
			got, _ := callText(t, cs, "nika_graph", map[string]any{"workflow_yaml": diamond, "format": f})
			for g, out := range seen {
				if out == got {
					t.Errorf("formats %s and %s gave the same output", g, f)
				}
			}
			seen[f] = got
		}
	})
	t.Run("workflow with errors", func(t *testing.T) {
		text := fixture(t, "errors.nika.yaml")
		got, isErr := callText(t, cs, "nika_graph", map[string]any{"workflow_yaml": text, "format": "dot"})
		if !isErr {
			t.Fatalf("nika_graph of an invalid workflow succeeded: %s", got)
		}
		want := cliOn(t, text, "graph", "--format", "dot")
		if want.code != exitUsage || want.stdout != "" {
			t.Fatalf("nika graph of the errors fixture: exit %d, stdout %q", want.code, want.stdout)
		}
		if got != want.stderr {
			t.Errorf("findings differ from `nika graph` stderr:\n got: %s\nwant: %s", got, want.stderr)
		}
		if !strings.Contains(got, mcpWorkflowName+":") || !strings.Contains(got, "error[NIKA-") {
			t.Errorf("findings are not D21 text naming %s:\n%s", mcpWorkflowName, got)
		}
	})
}

func TestMCPServeExplain(t *testing.T) {
	noLeaks(t)
	cs := mcpSession(t)
	for _, tc := range []struct {
		name, code string
		wantErr    bool
	}{
		{"canonical", "NIKA-PARSE-005", false},
		{"lower case without prefix", "parse-005", false},
		{"unknown with a suggestion", "NIKA-PARSE-999", true},
		{"garbage", "hello", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := callText(t, cs, "nika_explain", map[string]any{"code": tc.code})
			var out, errb bytes.Buffer
			code := Main([]string{"explain", tc.code}, strings.NewReader(""), &out, &errb)
			if isErr != tc.wantErr || (code != exitOK) != tc.wantErr {
				t.Fatalf("isError %v, CLI exit %d; want error %v\n%s", isErr, code, tc.wantErr, got)
			}
			want := out.String()
			if tc.wantErr {
				want = strings.TrimSuffix(strings.TrimPrefix(errb.String(), "nika explain: "), "\n")
				if !strings.Contains(got, "is not an allocated code") {
					t.Errorf("unknown code message: %s", got)
				}
			} else if !strings.Contains(got, "NIKA-PARSE-005") {
				t.Errorf("explanation does not name the code:\n%s", got)
			}
			if got != want {
				t.Errorf("nika_explain differs from `nika explain`:\n got: %q\nwant: %q", got, want)
			}
		})
	}
}

func TestMCPServeSchema(t *testing.T) {
	noLeaks(t)
	cs := mcpSession(t)
	got, isErr := callText(t, cs, "nika_schema", map[string]any{})
	if isErr {
		t.Fatalf("nika_schema returned a tool error: %s", got)
	}
	var out bytes.Buffer
	if code := Main([]string{"schema"}, strings.NewReader(""), &out, io.Discard); code != exitOK {
		t.Fatalf("nika schema exited %d", code)
	}
	if got != out.String() {
		t.Errorf("nika_schema differs from `nika schema` (%d bytes vs %d)", len(got), out.Len())
	}
	if !json.Valid([]byte(got)) || !strings.Contains(got, `"$schema"`) {
		t.Errorf("nika_schema is not a JSON Schema:\n%.200s", got)
	}
	// No arguments at all is as good as {}.
	if got2, isErr := callText(t, cs, "nika_schema", nil); isErr || got2 != got {
		t.Errorf("nika_schema without arguments: isError %v, same text %v", isErr, got2 == got)
	}
}

// TestMCPServeInputSchemas holds the SDK's validation to the D42 schemas:
// missing, mistyped, out-of-enum and extra arguments are tool errors.
func TestMCPServeInputSchemas(t *testing.T) {
	noLeaks(t)
	cs := mcpSession(t)
	valid := fixture(t, "valid.nika.yaml")
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		wantInErr  string
	}{
		{"check without text", "nika_check", map[string]any{}, "workflow_yaml"},
		{"check with a number", "nika_check", map[string]any{"workflow_yaml": 3}, "workflow_yaml"},
		{"check with an extra argument", "nika_check", map[string]any{"workflow_yaml": valid, "model": "mock/echo"}, "model"},
		{"explain without code", "nika_explain", map[string]any{}, "code"},
		{"schema with an argument", "nika_schema", map[string]any{"format": "json"}, "format"},
		{"graph without format", "nika_graph", map[string]any{"workflow_yaml": valid}, "format"},
		{"graph with an unknown format", "nika_graph", map[string]any{"workflow_yaml": valid, "format": "svg"}, "svg"},
		{"graph without text", "nika_graph", map[string]any{"format": "dot"}, "workflow_yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := callText(t, cs, tc.tool, tc.args)
			if !isErr {
				t.Fatalf("%s accepted %v: %s", tc.tool, tc.args, got)
			}
			if !strings.Contains(got, tc.wantInErr) {
				t.Errorf("error does not mention %q: %s", tc.wantInErr, got)
			}
		})
	}
	t.Run("unknown tool", func(t *testing.T) {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nika_run", Arguments: map[string]any{}})
		if err == nil {
			t.Fatal("calling nika_run succeeded; the server must not have such a tool")
		}
	})
}

func TestMCPServeTools(t *testing.T) {
	noLeaks(t)
	cs := mcpSession(t)
	info := cs.InitializeResult().ServerInfo
	if info.Name != "nika" || info.Version != version {
		t.Errorf("server info = %s %s, want nika %s", info.Name, info.Version, version)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		schema, _ := tool.InputSchema.(map[string]any)
		if schema["type"] != "object" || schema["additionalProperties"] != false {
			t.Errorf("%s: input schema %v is not a closed object", tool.Name, tool.InputSchema)
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: not annotated read-only", tool.Name)
		}
	}
	if got := strings.Join(names, ","); got != "nika_check,nika_explain,nika_graph,nika_schema" {
		t.Errorf("tools = %s", got)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join(pkgDir, "testdata", "mcpserve", "tools.golden.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tools/list differs from %s (run with -update and review the diff):\n%s", golden, got)
	}
}

// TestMCPServeMainStdio drives `nika mcp` through Main over pipes: the server
// answers on stdout, and closing stdin ends it with exit 0 and nothing on
// stderr.
func TestMCPServeMainStdio(t *testing.T) {
	noLeaks(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := Main([]string{"mcp"}, inR, outW, &stderr)
		outW.Close() // the process would exit here, closing its stdout
		exited <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "nika-test", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, isErr := callText(t, cs, "nika_explain", map[string]any{"code": "NIKA-PARSE-005"})
	if isErr || !strings.Contains(got, "NIKA-PARSE-005") {
		t.Errorf("nika_explain over stdio: isError %v, %q", isErr, got)
	}
	cs.Close() // closes the server's stdin
	if code := <-exited; code != exitOK {
		t.Errorf("nika mcp exited %d after stdin closed, want 0; stderr: %s", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestMCPServeUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"extra argument", []string{"mcp", "file.nika.yaml"}, exitUsage, "", "nika mcp: takes no arguments"},
		{"unknown flag", []string{"mcp", "--json"}, exitUsage, "", "flag provided but not defined"},
		{"help", []string{"mcp", "-h"}, exitOK, "Usage: nika mcp\n", ""},
		{"listed in help", []string{"help"}, exitOK, "nika mcp ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(tc.args, strings.NewReader(""), &out, &errb)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.wantCode, errb.String())
			}
			if !strings.Contains(out.String(), tc.wantStdout) || (tc.wantStdout == "") != (out.Len() == 0) {
				t.Errorf("stdout %q, want it to contain %q", out.String(), tc.wantStdout)
			}
			if !strings.Contains(errb.String(), tc.wantStderr) || (tc.wantStderr == "") != (errb.Len() == 0) {
				t.Errorf("stderr %q, want it to contain %q", errb.String(), tc.wantStderr)
			}
		})
	}
}

// TestMCPServeBinary starts the real binary as an MCP server over stdio, the
// way an editor does, and checks a workflow through it.
func TestMCPServeBinary(t *testing.T) {
	noLeaks(t)
	dir := t.TempDir()
	cmd := exec.Command(nikaBin, "mcp")
	cmd.Dir, cmd.Env = dir, testEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "nika-test", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("starting nika mcp: %v", err)
	}
	for _, name := range []string{"valid.nika.yaml", "errors.nika.yaml"} {
		text := fixture(t, name)
		got, isErr := callText(t, cs, "nika_check", map[string]any{"workflow_yaml": text})
		if err := os.WriteFile(filepath.Join(dir, mcpWorkflowName), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		want := runBinary(t, dir, "check", "--json", mcpWorkflowName)
		if isErr || got != want.stdout {
			t.Errorf("%s: nika_check (isError %v) differs from `nika check --json`:\n got: %s\nwant: %s", name, isErr, got, want.stdout)
		}
	}
	// The server reads no file: a registry in its directory that lacks the
	// workflow's server changes `nika check` there, not nika_check.
	if err := os.Mkdir(filepath.Join(dir, ".nika"), 0o755); err != nil {
		t.Fatal(err)
	}
	registry := `{"servers": {"other": {"command": "true"}}}`
	if err := os.WriteFile(filepath.Join(dir, ".nika", "mcp_servers.json"), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	text := fixture(t, "mcp.nika.yaml")
	if err := os.WriteFile(filepath.Join(dir, mcpWorkflowName), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if cli := runBinary(t, dir, "check", "--json", mcpWorkflowName); !strings.Contains(cli.stdout, "NIKA-INVOKE-001") {
		t.Fatalf("the registry fixture does not change `nika check`: %s", cli.stdout)
	}
	got, isErr := callText(t, cs, "nika_check", map[string]any{"workflow_yaml": text})
	if isErr || !strings.HasPrefix(got, `{"valid":true,`) {
		t.Errorf("nika_check read the MCP registry (isError %v): %s", isErr, got)
	}
	// Closing the session closes the server's stdin and waits for the
	// process: an error here is a non-zero exit (or a server that had to be
	// signalled, which exits 130).
	if err := cs.Close(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("nika mcp exited %d after stdin closed, want 0; stderr: %s", ee.ExitCode(), stderr.String())
		}
		t.Fatalf("closing the session: %v", err)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("nika mcp did not exit 0: %v", cmd.ProcessState)
	}
	if stderr.Len() != 0 {
		t.Errorf("nika mcp wrote to stderr: %s", stderr.String())
	}
}

// mcpPiped runs `nika mcp` with input as its whole stdin, the real binary or
// Main in-process (which the race detector sees), and returns what it did.
type mcpPiped func(t *testing.T, input []byte) result

var mcpPipedRuns = []struct {
	name string
	run  mcpPiped
}{
	{"binary", func(t *testing.T, input []byte) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, nikaBin, "mcp")
		cmd.Dir, cmd.Env = t.TempDir(), testEnv
		cmd.Stdin = bytes.NewReader(input)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("running nika mcp: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("nika mcp did not exit within a minute of its input ending; stdout:\n%s", out.String())
		}
		return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	}},
	{"in process", func(t *testing.T, input []byte) result {
		t.Helper()
		var out, errb bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- Main([]string{"mcp"}, bytes.NewReader(input), &out, &errb) }()
		select {
		case code := <-done:
			return result{code: code, stdout: out.String(), stderr: errb.String()}
		case <-time.After(time.Minute):
			t.Fatal("Main mcp did not return within a minute of its input ending")
		}
		return result{}
	}},
}

// mcpAnswer is one line the server writes.
type mcpAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpAnswers splits stdout into answers by id (the id's JSON) and the
// answers whose id is null; every line must be a JSON-RPC response and every
// id answered once at most.
func mcpAnswers(t *testing.T, stdout string) (byID map[string]mcpAnswer, nullID []mcpAnswer) {
	t.Helper()
	byID = map[string]mcpAnswer{}
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		var a mcpAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.JSONRPC != "2.0" || a.ID == nil || (a.Result == nil) == (a.Error == nil) {
			t.Fatalf("not a JSON-RPC response (%v): %s", err, line)
		}
		id := string(a.ID)
		if id == "null" {
			nullID = append(nullID, a)
			continue
		}
		if _, dup := byID[id]; dup {
			t.Fatalf("id %s answered twice:\n%s", id, stdout)
		}
		byID[id] = a
	}
	return byID, nullID
}

// mcpSessionInput is a client's whole session written at once: initialize,
// the initialized notification, tools/list, calls of every tool (one of
// them nika_check of a long workflow, which takes a while) and a ping. ids
// are the JSON of the request ids.
func mcpSessionInput(t *testing.T) (input []byte, ids []string) {
	t.Helper()
	var b bytes.Buffer
	add := func(id any, method string, params any) {
		m := map[string]any{"jsonrpc": "2.0", "method": method}
		if id != nil {
			m["id"] = id
			raw, _ := json.Marshal(id)
			ids = append(ids, string(raw))
		}
		if params != nil {
			m["params"] = params
		}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(data, '\n'))
	}
	call := func(id any, tool string, args map[string]any) {
		add(id, "tools/call", map[string]any{"name": tool, "arguments": args})
	}
	long := "nika: v1\nworkflow: long\nmodel: mock/echo\ntasks:\n  - id: t0\n    infer: { prompt: \"start\" }\n"
	for i := 1; i < 300; i++ {
		long += "  - id: t" + strconv.Itoa(i) + "\n    depends_on: [t" + strconv.Itoa(i-1) + "]\n" +
			"    infer: { prompt: \"after ${{ tasks.t" + strconv.Itoa(i-1) + ".output }}\" }\n"
	}
	add(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "nika-test", "version": "v0"}})
	add(nil, "notifications/initialized", nil)
	add(2, "tools/list", nil)
	call(3, "nika_check", map[string]any{"workflow_yaml": long})
	call("four", "nika_check", map[string]any{"workflow_yaml": fixture(t, "errors.nika.yaml")})
	call(5, "nika_graph", map[string]any{"workflow_yaml": fixture(t, "diamond.nika.yaml"), "format": "dot"})
	call(6, "nika_explain", map[string]any{"code": "NIKA-PARSE-005"})
	call(7, "nika_schema", map[string]any{})
	add(8, "ping", nil)
	return b.Bytes(), ids
}

// TestMCPServePipedRequests pipes a whole session into `nika mcp` and ends
// its input: every request is answered once, without a protocol error, and
// the server exits 0 (issue 11 item 6: answers were lost when the input ended
// while requests were in flight). The runs are repeated to catch the race.
func TestMCPServePipedRequests(t *testing.T) {
	input, ids := mcpSessionInput(t)
	for _, r := range mcpPipedRuns {
		t.Run(r.name, func(t *testing.T) {
			noLeaks(t)
			for run := range 20 {
				res := r.run(t, input)
				if res.code != exitOK || res.stderr != "" {
					t.Fatalf("run %d: exit %d, want 0; stderr: %s", run, res.code, res.stderr)
				}
				byID, nullID := mcpAnswers(t, res.stdout)
				if len(nullID) != 0 || len(byID) != len(ids) {
					t.Fatalf("run %d: %d answers and %d with a null id for %d requests:\n%s", run, len(byID), len(nullID), len(ids), res.stdout)
				}
				for _, id := range ids {
					a, ok := byID[id]
					if !ok {
						t.Fatalf("run %d: request %s unanswered:\n%s", run, id, res.stdout)
					}
					if a.Error != nil {
						t.Fatalf("run %d: request %s: error %d %s", run, id, a.Error.Code, a.Error.Message)
					}
				}
				if !strings.Contains(string(byID["3"].Result), `\"valid\":true`) {
					t.Fatalf("run %d: nika_check of the long workflow: %.300s", run, byID["3"].Result)
				}
			}
		})
	}
}

// TestMCPServeMalformedLines pipes a session with bad lines in it: a line
// that is not JSON gets a parse error (-32700) with a null id, a JSON line
// that is not a message an invalid request error (-32600), and the requests
// after them are answered; the server exits 0 at the end of input.
func TestMCPServeMalformedLines(t *testing.T) {
	input, err := os.ReadFile(filepath.Join(pkgDir, "testdata", "mcpserve", "malformed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mcpPipedRuns {
		t.Run(r.name, func(t *testing.T) {
			noLeaks(t)
			res := r.run(t, input)
			if res.code != exitOK || res.stderr != "" {
				t.Fatalf("exit %d, want 0; stderr: %s", res.code, res.stderr)
			}
			byID, nullID := mcpAnswers(t, res.stdout)
			// The truncated request, the prose and the two halves of the
			// message spread over two lines; then {"hello":"world"} and [].
			var codes []string
			for _, a := range nullID {
				if a.Error == nil {
					t.Fatalf("a result with a null id: %s", a.Result)
				}
				codes = append(codes, strconv.Itoa(a.Error.Code))
				if a.Error.Code == -32700 && !strings.HasPrefix(a.Error.Message, "Parse error") {
					t.Errorf("parse error message %q", a.Error.Message)
				}
			}
			if got := strings.Join(codes, ","); got != "-32700,-32700,-32700,-32700,-32600,-32600" {
				t.Errorf("null-id errors %s, want four -32700 then two -32600:\n%s", got, res.stdout)
			}
			for _, id := range []string{"1", "4", "5"} {
				if a, ok := byID[id]; !ok || a.Error != nil {
					t.Errorf("request %s after or among bad lines: answered %v, %+v\n%s", id, ok, a.Error, res.stdout)
				}
			}
			if len(byID) != 3 {
				t.Errorf("%d answers with an id, want 3 (the bad lines 2 and 3 are no requests):\n%s", len(byID), res.stdout)
			}
			if !strings.Contains(string(byID["5"].Result), "NIKA-PARSE-005") {
				t.Errorf("nika_explain after the bad lines: %s", byID["5"].Result)
			}
		})
	}
}
