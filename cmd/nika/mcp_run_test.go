//go:build linux

package main

// Black-box tests of `nika run` with MCP servers (issue 6): the echo server of
// tools/mcp/testdata/echoserver registered through NIKA_MCP_CONFIG, and the reference
// TypeScript filesystem server (@modelcontextprotocol/server-filesystem, installed by .ci/run).
// Linux only: they prove that no server process survives through /proc and pidfds.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/nikahq/nika/tools/mcp/mcptest"
)

var (
	echoOnce sync.Once
	echoPath string
	echoErr  error
)

// echoServerBin builds the echo MCP server once per test binary.
func echoServerBin(t *testing.T) string {
	t.Helper()
	echoOnce.Do(func() {
		echoPath = filepath.Join(filepath.Dir(nikaBin), "echoserver")
		build := exec.Command("go", "build", "-o", echoPath, "./tools/mcp/testdata/echoserver")
		build.Dir = filepath.Join(pkgDir, "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			echoErr = errors.New("building the echo server: " + err.Error() + "\n" + string(out))
		}
	})
	if echoErr != nil {
		t.Fatal(echoErr)
	}
	return echoPath
}

// mcpRegistry writes a registry outside the run directory and returns its path, for
// NIKA_MCP_CONFIG.
func mcpRegistry(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"servers": servers})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeFile(t, path, string(b))
	return path
}

// mcpFixture copies testdata/mcp/<name> into a fresh run directory.
func mcpFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdataDir(t), "mcp", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, name), string(data))
	return dir
}

// nikaCmd is `nika run` in dir with the test environment, NIKA_MCP_CONFIG and extra variables.
func nikaCmd(dir, registry string, extra []string, args ...string) *exec.Cmd {
	cmd := exec.Command(nikaBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(append([]string{}, testEnv...), "NIKA_MCP_CONFIG="+registry), extra...)
	cmd.Stdin = strings.NewReader("")
	return cmd
}

func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestRunInvokeMCP(t *testing.T) {
	reg := mcpRegistry(t, map[string]any{"echo": map[string]any{"command": echoServerBin(t)}})
	cases := []struct {
		file   string
		code   int
		stdout string // a prefix
		stderr string // a substring
	}{
		{file: "echo.nika.yaml", code: 0, stdout: `{"pid":`},
		{file: "fail.nika.yaml", code: 1, stdout: "{}\n", stderr: "✗ boom: error[NIKA-MCP-002] boom: the tool failed\n"},
		{file: "unknown.nika.yaml", code: 2, stderr: `error[NIKA-INVOKE-001] tasks[0].invoke.tool: MCP server "githib" is not registered`},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			dir := mcpFixture(t, tc.file)
			r := runCmd(t, nikaCmd(dir, reg, nil, "run", tc.file, "--no-trace", "--no-progress"))
			if r.code != tc.code || !strings.HasPrefix(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q…, stderr …%q…", r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
			if tc.file != "echo.nika.yaml" {
				return
			}
			var out struct {
				Said string `json:"said"`
				Pid  int    `json:"pid"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Said != "hello over MCP" || out.Pid <= 0 {
				t.Fatalf("outputs %q: %v", r.stdout, err)
			}
			// The run has ended: the grandchild the server spawned dies with its process group.
			mcptest.AwaitGone(t, out.Pid, "the server's grandchild")
		})
	}
}

// An interrupted run (SIGINT while an MCP tool sleeps) exits 130 and leaves no process of the
// server's group behind, the grandchild included.
func TestRunInterruptedMCPLeavesNoProcess(t *testing.T) {
	// SIGHUP as well: the servers live in their own process groups, which a closed terminal
	// never reaches.
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "ready")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			reg := mcpRegistry(t, map[string]any{"echo": map[string]any{"command": echoServerBin(t), "env": map[string]string{"ECHO_READY": fifo}}})
			dir := mcpFixture(t, "interrupt.nika.yaml")
			cmd := nikaCmd(dir, reg, nil, "run", "interrupt.nika.yaml", "--no-trace", "--quiet")
			var errb strings.Builder
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(fifo) // blocks until the sleep tool is running and opens it
			if err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(f).ReadString('\n')
			f.Close()
			var server, child int
			for _, field := range strings.Fields(line) {
				k, v, _ := strings.Cut(field, "=")
				n, _ := strconv.Atoi(strings.Split(v, ",")[0])
				switch k {
				case "server":
					server = n
				case "children":
					child = n
				}
			}
			if server <= 0 || child <= 0 {
				t.Fatalf("ready line %q", line)
			}
			pgid := mcptest.Pgid(t, server)
			serverFD, childFD := mcptest.Pidfd(t, server), mcptest.Pidfd(t, child)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupt {
				t.Fatalf("nika run: %v, want exit %d; stderr:\n%s", err, exitInterrupt, errb.String())
			}
			mcptest.AwaitExit(t, serverFD, "the MCP server")
			mcptest.AwaitExit(t, childFD, "the MCP server's grandchild")
			if got := mcptest.GroupMembers(t, pgid); len(got) != 0 {
				t.Errorf("the server's process group still holds %v after the run", got)
			}
		})
	}
}

// fsServer finds the reference filesystem server: NIKA_MCP_FS_SERVER (the path to its
// dist/index.js), else the directory .ci/run installs it to. It skips the test when node or
// the package is missing, unless NIKA_REQUIRE_INTEGRATION=1 makes that a failure.
func fsServer(t *testing.T) (node, index string) {
	t.Helper()
	missing := func(what string) {
		msg := "the MCP filesystem end-to-end test needs " + what + " (.ci/run installs it; see the README's Integration tests)"
		if os.Getenv("NIKA_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg + "; NIKA_REQUIRE_INTEGRATION=1 forbids skipping")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	index = os.Getenv("NIKA_MCP_FS_SERVER")
	if index == "" {
		index = filepath.Join(pkgDir, "..", "..", ".ci", ".cache", "npm", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	}
	if _, err := os.Stat(index); err != nil {
		missing("@modelcontextprotocol/server-filesystem at " + index)
	}
	return node, index
}

// fsModel is a scripted OpenAI-compatible model: its first answer calls read_text_file twice
// in one turn; its second, once the results are back, records them and answers in prose.
type fsModel struct {
	root string

	mu      sync.Mutex
	tools   []string
	results [][2]string // tool_call_id, content, in the order received
}

func (m *fsModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var results [][2]string
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			s, _ := msg.Content.(string)
			results = append(results, [2]string{msg.ToolCallID, s})
		}
	}
	if len(results) == 0 {
		for _, tl := range req.Tools {
			m.tools = append(m.tools, tl.Function.Name)
		}
		args := func(name string) string {
			a, _ := json.Marshal(map[string]string{"path": filepath.Join(m.root, name)})
			s, _ := json.Marshal(string(a))
			return string(s)
		}
		io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
 {"id":"call_b","type":"function","function":{"name":"mcp_fs_read_text_file","arguments":`+args("b.txt")+`}},
 {"id":"call_a","type":"function","function":{"name":"mcp_fs_read_text_file","arguments":`+args("a.txt")+`}}]}}],
 "usage":{"prompt_tokens":20,"completion_tokens":10}}`)
		return
	}
	m.results = results
	io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Both read."}}],"usage":{"prompt_tokens":40,"completion_tokens":3}}`)
}

// The acceptance test of issue 6: an agent whose scripted model calls mcp:fs/read_text_file
// twice in one turn gets both results, in request order, from the reference server run as
// `node …/dist/index.js ROOT`.
func TestRunAgentOverMCPFilesystemServer(t *testing.T) {
	node, index := fsServer(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "alpha file")
	writeFile(t, filepath.Join(root, "b.txt"), "beta file")
	model := &fsModel{root: root}
	srv := httptest.NewServer(model)
	defer srv.Close()
	reg := mcpRegistry(t, map[string]any{"fs": map[string]any{"command": node, "args": []string{index, root}}})
	dir := mcpFixture(t, "fs-agent.nika.yaml")
	cmd := nikaCmd(dir, reg, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test"},
		"run", "fs-agent.nika.yaml", "--trace", "trace.ndjson", "--quiet")
	r := runCmd(t, cmd)
	if r.code != 0 || r.stdout != `{"answer":"Both read."}`+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if strings.Join(model.tools, ",") != "mcp_fs_read_text_file" {
		t.Errorf("tools offered on the wire: %v, want the D41 name mcp_fs_read_text_file alone", model.tools)
	}
	// The server answers with structuredContent {content}, which the output rule of LANGUAGE.md
	// §5.3 prefers to the text blocks.
	want := [][2]string{{"call_b", `{"content":"beta file"}`}, {"call_a", `{"content":"alpha file"}`}}
	if len(model.results) != 2 || model.results[0] != want[0] || model.results[1] != want[1] {
		t.Errorf("tool results %q, want %q (request order, the files' text)", model.results, want)
	}
	invoked := 0
	for _, e := range readTrace(t, filepath.Join(dir, "trace.ndjson")) {
		if e.Kind == "tool_invoked" && strings.Contains(e.raw, `"tool":"mcp:fs/read_text_file"`) && strings.Contains(e.raw, `"is_error":false`) {
			invoked++
		}
	}
	if invoked != 2 {
		t.Errorf("%d successful tool_invoked events for mcp:fs/read_text_file, want 2", invoked)
	}
}

// ---- processes ----

// A registry that is asked for but cannot be used (NIKA_MCP_CONFIG names a missing file, or the
// file does not parse) does not pass for "no registry": the mcp: call fails with NIKA-MCP-001
// naming the file and the reason.
func TestRunUnusableMCPRegistry(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken.json")
	writeFile(t, broken, `{"servers": [1, 2]}`)
	for _, tc := range []struct{ name, registry, reason string }{
		{"missing", filepath.Join(t.TempDir(), "nope.json"), "no such file"},
		{"broken", broken, broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mcpFixture(t, "echo.nika.yaml")
			r := runCmd(t, nikaCmd(dir, tc.registry, nil, "run", "echo.nika.yaml", "--no-trace", "--no-progress"))
			if r.code != 1 || !strings.Contains(r.stderr, "error[NIKA-MCP-001] the MCP registry "+tc.registry+" cannot be used") ||
				!strings.Contains(r.stderr, tc.reason) {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
