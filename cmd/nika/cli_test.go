package main

// Black-box tests of the nika CLI. TestMain builds the binary once; every
// table case then runs it with os/exec in a fixed environment and asserts the
// exit code, the exact stdout and the exact stderr. The same cases also run
// in-process through Main, so the coverage counts and the two paths are held
// to the same outputs.
//
// Goldens live in testdata/golden/<name>.txt as two sections:
//
//	-- stdout --
//	...
//	-- stderr --
//	...
//
// Refresh them with `go test ./cmd/nika/ -run TestCLI -update`, then review
// the diff: a golden is a statement of the expected behaviour.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// nikaBin is the binary built by TestMain; testEnv the fixed environment it runs in.
var (
	nikaBin string
	testEnv []string
	pkgDir  string // the package directory, where go test starts
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var err error
	if pkgDir, err = os.Getwd(); err != nil {
		fmt.Fprintln(os.Stderr, "cli_test:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "nika-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli_test: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	nikaBin = filepath.Join(tmp, "nika")
	build := exec.Command("go", "build", "-o", nikaBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "cli_test: building the nika binary failed:", err)
		return 1
	}
	home := filepath.Join(tmp, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "cli_test:", err)
		return 1
	}
	// No API keys, no user configuration: the checks must not depend on them.
	testEnv = []string{"HOME=" + home, "LC_ALL=C", "TZ=UTC", "PATH=/usr/bin:/bin", "NO_COLOR=1"}
	return m.Run()
}

// result is what one invocation produced.
type result struct {
	code           int
	stdout, stderr string
}

// runBinary runs the built binary in dir.
func runBinary(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runBinaryEnv(t, dir, nil, args...)
}

// runBinaryEnv runs the built binary in dir, with env added to the test environment.
func runBinaryEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(nikaBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), env...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running nika %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// taskReport is the part of a run report the tests read.
type taskReport struct {
	State string `json:"workflow_state"`
	Tasks map[string]struct {
		Status string `json:"status"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error"`
	} `json:"tasks"`
}

// readReport decodes the report a run wrote at path.
func readReport(t *testing.T, path string) (taskReport, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep taskReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	return rep, b
}

// runInProcess calls Main with the working directory set to dir.
func runInProcess(t *testing.T, dir string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func testdataDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(pkgDir, "testdata")
}

// copyFixtures copies the named testdata files into a fresh temp dir.
func copyFixtures(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(testdataDir(t), n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mcpDir is a temp dir holding mcp.nika.yaml and, unless registry is "",
// .nika/mcp_servers.json with that content.
func mcpDir(registry string) func(t *testing.T) string {
	return func(t *testing.T) string {
		dir := copyFixtures(t, "mcp.nika.yaml")
		if registry != "" {
			writeFile(t, filepath.Join(dir, ".nika", "mcp_servers.json"), registry)
		}
		return dir
	}
}

const (
	usageGolden      = "usage"        // nika help
	checkUsageGolden = "check_usage"  // nika check -h
	graphUsageGolden = "graph_usage"  // nika graph -h
	checkErrsGolden  = "check_errors" // text findings of errors.nika.yaml
	checkJSONGolden  = "check_json_errors"
	graphJSONGolden  = "graph_json"
	graphMermaid     = "graph_mermaid"
)

type cliCase struct {
	name string
	args []string
	// dir returns the working directory; nil means testdata/.
	dir  func(t *testing.T) string
	exit int
	// golden names testdata/golden/<golden>.txt, compared exactly with
	// stdout and stderr. Several cases may share one golden: moving a flag
	// must not change the output.
	golden string
	// stdout and stderr, when golden is "", are the exact expected streams.
	stdout, stderr string
	// check makes further assertions (decoding JSON, references computed
	// from the spec package); when set with golden == "", it must assert
	// both streams itself.
	check func(t *testing.T, r result)
}

func cliCases() []cliCase {
	return []cliCase{
		// ---- check ----
		{name: "check valid", args: []string{"check", "valid.nika.yaml"}, exit: 0},
		{name: "check errors", args: []string{"check", "errors.nika.yaml"}, exit: 2, golden: checkErrsGolden},
		{name: "check only warnings", args: []string{"check", "warnings.nika.yaml"}, exit: 0, golden: "check_warnings"},
		{name: "check file-extension warning", args: []string{"check", "extension.txt"}, exit: 0, golden: "check_extension"},
		{name: "check yaml syntax error", args: []string{"check", "syntax.nika.yaml"}, exit: 2, golden: "check_syntax"},
		{name: "check several files, one invalid", args: []string{"check", "valid.nika.yaml", "errors.nika.yaml", "warnings.nika.yaml"}, exit: 2, golden: "check_multi"},
		{name: "check several valid files", args: []string{"check", "valid.nika.yaml", "diamond.nika.yaml", "warnings.nika.yaml"}, exit: 0, golden: "check_warnings"},
		{name: "check missing file", args: []string{"check", "missing.nika.yaml"}, exit: 2, golden: "check_missing"},
		{name: "check missing file among valid ones", args: []string{"check", "valid.nika.yaml", "missing.nika.yaml"}, exit: 2, golden: "check_missing"},
		{name: "check directory is unreadable", args: []string{"check", "adir"}, exit: 2,
			dir: func(t *testing.T) string {
				d := t.TempDir()
				if err := os.Mkdir(filepath.Join(d, "adir"), 0o755); err != nil {
					t.Fatal(err)
				}
				return d
			},
			stderr: "adir: error: cannot read the file: read adir: is a directory — Check the path and the file's permissions.\n"},
		{name: "check --json before file", args: []string{"check", "--json", "errors.nika.yaml"}, exit: 2, golden: checkJSONGolden, check: checkErrorsJSON},
		{name: "check --json after file", args: []string{"check", "errors.nika.yaml", "--json"}, exit: 2, golden: checkJSONGolden, check: checkErrorsJSON},
		{name: "check -json single dash", args: []string{"check", "-json", "errors.nika.yaml"}, exit: 2, golden: checkJSONGolden},
		{name: "check --json valid", args: []string{"check", "valid.nika.yaml", "--json"}, exit: 0,
			stdout: `{"valid":true,"files":[{"file":"valid.nika.yaml","valid":true,"errors":[],"warnings":[]}]}` + "\n"},
		{name: "check --json warnings", args: []string{"check", "--json", "warnings.nika.yaml", "extension.txt"}, exit: 0, golden: "check_json_warnings", check: checkWarningsJSON},
		{name: "check --json several files", args: []string{"check", "--json", "valid.nika.yaml", "errors.nika.yaml", "missing.nika.yaml"}, exit: 2, golden: "check_json_multi", check: checkMultiJSON},
		{name: "check model-less infer", args: []string{"check", "modelless.nika.yaml"}, exit: 2, golden: "check_modelless"},
		{name: "check --model after file", args: []string{"check", "modelless.nika.yaml", "--model", "mock/echo"}, exit: 0},
		{name: "check --model before file", args: []string{"check", "--model", "mock/echo", "modelless.nika.yaml"}, exit: 0},
		{name: "check --model= form", args: []string{"check", "--model=mock/echo", "modelless.nika.yaml", "--json"}, exit: 0,
			stdout: `{"valid":true,"files":[{"file":"modelless.nika.yaml","valid":true,"errors":[],"warnings":[]}]}` + "\n"},
		{name: "check flags on both sides", args: []string{"check", "--model", "mock/echo", "modelless.nika.yaml", "valid.nika.yaml", "--json"}, exit: 0,
			stdout: `{"valid":true,"files":[{"file":"modelless.nika.yaml","valid":true,"errors":[],"warnings":[]},{"file":"valid.nika.yaml","valid":true,"errors":[],"warnings":[]}]}` + "\n"},
		{name: "check --model without value", args: []string{"check", "valid.nika.yaml", "--model"}, exit: 2, golden: "check_model_no_value"},
		{name: "check --model unknown provider", args: []string{"check", "modelless.nika.yaml", "--model", "opnai/gpt-4o"}, exit: 2,
			stderr: "nika check: --model: unknown provider \"opnai\" in model \"opnai/gpt-4o\" — Use one of the providers: anthropic, deepseek, gemini, groq, llamacpp, lmstudio, localai, mistral, mock, ollama, openai, openrouter, vllm, xai. Did you mean `openai`?\n"},
		{name: "check --model without provider", args: []string{"check", "modelless.nika.yaml", "--model", "gpt-4o"}, exit: 2,
			stderr: "nika check: --model: bad model id \"gpt-4o\" — Write the model as `<provider>/<name>`, e.g. `openai/gpt-4o-mini` or `mock/echo`.\n"},
		{name: "graph --model mock/other", args: []string{"graph", "diamond.nika.yaml", "--model", "mock/other"}, exit: 2,
			stderr: "nika graph: --model: unknown mock model \"mock/other\" — The mock provider serves only `mock/echo`.\n"},
		{name: "check unknown flag before file", args: []string{"check", "--bogus", "valid.nika.yaml"}, exit: 2, golden: "check_unknown_flag"},
		{name: "check unknown flag after file", args: []string{"check", "valid.nika.yaml", "--bogus"}, exit: 2, golden: "check_unknown_flag"},
		{name: "check no file", args: []string{"check"}, exit: 2, golden: "check_no_file"},
		{name: "check --json no file", args: []string{"check", "--json"}, exit: 2, golden: "check_no_file"},
		{name: "check -- ends flags", args: []string{"check", "valid.nika.yaml", "--", "--json"}, exit: 2, golden: "check_dashdash"},
		{name: "check -h", args: []string{"check", "-h"}, exit: 0, golden: checkUsageGolden},
		{name: "check --help", args: []string{"check", "--help"}, exit: 0, golden: checkUsageGolden},
		{name: "help check", args: []string{"help", "check"}, exit: 0, golden: checkUsageGolden},

		// ---- check and the MCP registry (.nika/mcp_servers.json) ----
		{name: "check mcp without registry", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(""), exit: 0},
		{name: "check mcp registered", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(`{"servers": {"github": {"command": "gh-mcp"}}}`), exit: 0},
		{name: "check mcp registered, mcpServers wrapper", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(`{"mcpServers": {"github": {}}}`), exit: 0},
		{name: "check mcp registered, plain object", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(`{"github": {}}`), exit: 0},
		{name: "check mcp unregistered", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(`{"servers": {"githib": {}}}`), exit: 2, golden: "check_mcp_unregistered"},
		{name: "check mcp registry with a malformed wrapper", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(`{"servers": []}`), exit: 0,
			stderr: "nika: warning: ignoring .nika/mcp_servers.json: \"servers\" must map server names to settings\n"},
		{name: "check mcp empty registry", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(`{}`), exit: 2, golden: "check_mcp_empty"},
		{name: "check mcp malformed registry", args: []string{"check", "mcp.nika.yaml"}, dir: mcpDir(`{bad`), exit: 0, golden: "check_mcp_malformed"},

		// ---- graph ----
		{name: "graph json", args: []string{"graph", "--format", "json", "diamond.nika.yaml"}, exit: 0, golden: graphJSONGolden, check: checkGraphJSON},
		{name: "graph json, flag after file", args: []string{"graph", "diamond.nika.yaml", "--format=json"}, exit: 0, golden: graphJSONGolden},
		{name: "graph mermaid", args: []string{"graph", "diamond.nika.yaml", "--format", "mermaid"}, exit: 0, golden: graphMermaid},
		{name: "graph default is mermaid", args: []string{"graph", "diamond.nika.yaml"}, exit: 0, golden: graphMermaid},
		{name: "graph dot", args: []string{"graph", "--format", "dot", "diamond.nika.yaml"}, exit: 0, golden: "graph_dot"},
		{name: "graph single task", args: []string{"graph", "valid.nika.yaml", "--format", "json"}, exit: 0,
			stdout: `{"nodes":[{"id":"greet","wave":0}],"edges":[],"order":["greet"],"waves":[["greet"]]}` + "\n"},
		{name: "graph --model", args: []string{"graph", "modelless.nika.yaml", "--model", "mock/echo", "--format", "json"}, exit: 0,
			stdout: `{"nodes":[{"id":"greet","wave":0}],"edges":[],"order":["greet"],"waves":[["greet"]]}` + "\n"},
		{name: "graph invalid file", args: []string{"graph", "errors.nika.yaml", "--format", "json"}, exit: 2, golden: checkErrsGolden},
		{name: "graph missing file", args: []string{"graph", "missing.nika.yaml"}, exit: 2, golden: "check_missing"},
		{name: "graph bad format", args: []string{"graph", "--format", "svg", "diamond.nika.yaml"}, exit: 2,
			stderr: "nika graph: unknown format \"svg\" (use mermaid, dot or json)\n"},
		{name: "graph no file", args: []string{"graph"}, exit: 2, golden: "graph_no_file"},
		{name: "graph two files", args: []string{"graph", "diamond.nika.yaml", "valid.nika.yaml"}, exit: 2, golden: "graph_no_file"},
		{name: "graph unknown flag", args: []string{"graph", "diamond.nika.yaml", "--json"}, exit: 2, golden: "graph_unknown_flag"},
		{name: "graph -h", args: []string{"graph", "-h"}, exit: 0, golden: graphUsageGolden},

		// ---- explain ----
		{name: "explain known code", args: []string{"explain", "NIKA-PARSE-005"}, exit: 0, check: checkExplain("NIKA-PARSE-005")},
		{name: "explain lower-case code", args: []string{"explain", "nika-parse-005"}, exit: 0, check: checkExplain("NIKA-PARSE-005")},
		{name: "explain another code", args: []string{"explain", "NIKA-DAG-002"}, exit: 0, check: checkExplain("NIKA-DAG-002")},
		{name: "explain near miss", args: []string{"explain", "NIKA-PARSE-0050"}, exit: 2,
			stderr: "nika explain: \"NIKA-PARSE-0050\" is not an allocated code (did you mean NIKA-PARSE-005?)\n"},
		{name: "explain near miss lower-case", args: []string{"explain", "nika-dag-0020"}, exit: 2,
			stderr: "nika explain: \"nika-dag-0020\" is not an allocated code (did you mean NIKA-DAG-002?)\n"},
		{name: "explain unknown code", args: []string{"explain", "XYZ"}, exit: 2,
			stderr: "nika explain: \"XYZ\" is not an allocated code\n"},
		{name: "explain no argument", args: []string{"explain"}, exit: 2,
			stderr: "nika explain: give exactly one code, e.g. nika explain NIKA-PARSE-005\n"},
		{name: "explain -h", args: []string{"explain", "-h"}, exit: 0, stdout: "Usage: nika explain NIKA-XXX-NNN\n"},
		{name: "explain two arguments", args: []string{"explain", "NIKA-PARSE-005", "NIKA-DAG-002"}, exit: 2,
			stderr: "nika explain: give exactly one code, e.g. nika explain NIKA-PARSE-005\n"},

		// ---- schema ----
		{name: "schema", args: []string{"schema"}, exit: 0, check: checkSchema},
		{name: "schema -h", args: []string{"schema", "-h"}, exit: 0, stdout: "Usage: nika schema\n"},
		{name: "schema unknown flag", args: []string{"schema", "--json"}, exit: 2, stderr: "nika schema: flag provided but not defined: -json\nUsage: nika schema\n"},
		{name: "schema with an argument", args: []string{"schema", "extra"}, exit: 2,
			stderr: "nika schema: takes no arguments\n"},

		// ---- version, help, usage errors ----
		{name: "version", args: []string{"version"}, exit: 0, check: checkVersion},
		{name: "--version", args: []string{"--version"}, exit: 0, check: checkVersion},
		{name: "help", args: []string{"help"}, exit: 0, golden: usageGolden},
		{name: "--help", args: []string{"--help"}, exit: 0, golden: usageGolden},
		{name: "-h", args: []string{"-h"}, exit: 0, golden: usageGolden},
		{name: "no arguments", args: nil, exit: 2, golden: "no_args"},
		{name: "unknown command", args: []string{"frobnicate", "x.nika.yaml"}, exit: 2, golden: "unknown_command"},
	}
}

func TestCLI(t *testing.T) {
	for _, c := range cliCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := testdataDir(t)
			if c.dir != nil {
				dir = c.dir(t)
			}
			t.Run("binary", func(t *testing.T) {
				r := runBinary(t, dir, c.args...)
				if *update && c.golden != "" {
					writeGolden(t, c.golden, r)
				}
				assertCase(t, c, r)
			})
			t.Run("in-process", func(t *testing.T) {
				assertCase(t, c, runInProcess(t, dir, c.args...))
			})
		})
	}
}

func assertCase(t *testing.T, c cliCase, r result) {
	t.Helper()
	if r.code != c.exit {
		t.Errorf("nika %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), r.code, c.exit, r.stdout, r.stderr)
	}
	switch {
	case c.golden != "":
		stdout, stderr := readGolden(t, c.golden)
		diffText(t, "stdout (golden "+c.golden+")", r.stdout, stdout)
		diffText(t, "stderr (golden "+c.golden+")", r.stderr, stderr)
	case c.check == nil:
		diffText(t, "stdout", r.stdout, c.stdout)
		diffText(t, "stderr", r.stderr, c.stderr)
	}
	if c.check != nil {
		c.check(t, r)
	}
}

// diffText fails with the first differing line when got != want.
func diffText(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			t.Errorf("%s differs at line %d:\n got: %q\nwant: %q\n--- full got ---\n%s--- full want ---\n%s", what, i+1, gl, wl, got, want)
			return
		}
	}
}

// ---- goldens ----

const (
	stdoutHeader = "-- stdout --\n"
	stderrHeader = "-- stderr --\n"
	noEOLMarker  = "\\ no newline at end of stream\n"
)

// goldenPath is absolute: in-process cases change the working directory.
func goldenPath(name string) string {
	return filepath.Join(pkgDir, "testdata", "golden", name+".txt")
}

// encodeStream makes a stream safe to store between headers: a stream that
// does not end in a newline gets one plus a marker line.
func encodeStream(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n" + noEOLMarker
}

func decodeStream(s string) string {
	if strings.HasSuffix(s, "\n"+noEOLMarker) {
		return strings.TrimSuffix(s, "\n"+noEOLMarker)
	}
	return s
}

func writeGolden(t *testing.T, name string, r result) {
	t.Helper()
	body := stdoutHeader + encodeStream(r.stdout) + stderrHeader + encodeStream(r.stderr)
	if err := os.WriteFile(goldenPath(name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGolden(t *testing.T, name string) (stdout, stderr string) {
	t.Helper()
	data, err := os.ReadFile(goldenPath(name))
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update to create it, then review it)", name, err)
	}
	s := string(data)
	if !strings.HasPrefix(s, stdoutHeader) {
		t.Fatalf("golden %s: does not start with %q", name, stdoutHeader)
	}
	s = strings.TrimPrefix(s, stdoutHeader)
	var i int
	if strings.HasPrefix(s, stderrHeader) {
		i = 0
	} else if j := strings.Index(s, "\n"+stderrHeader); j >= 0 {
		i = j + 1
	} else {
		t.Fatalf("golden %s: no %q section", name, strings.TrimSpace(stderrHeader))
	}
	return decodeStream(s[:i]), decodeStream(s[i+len(stderrHeader):])
}

// ---- structured assertions ----

// decodeOne decodes stdout as exactly one JSON object followed by a newline.
func decodeOne(t *testing.T, stdout string) map[string]any {
	t.Helper()
	if !strings.HasSuffix(stdout, "\n") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("stdout is not one line ending in a newline: %q", stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON value: %s", stdout)
	}
	return obj
}

func keysOf(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func assertKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keysOf(m); !slices.Equal(got, want) {
		t.Errorf("%s keys = %v, want %v", what, got, want)
	}
}

// checkReport asserts the D21 shape and returns the files.
func checkReport(t *testing.T, r result, wantValid bool, wantFiles ...string) []map[string]any {
	t.Helper()
	if r.stderr != "" {
		t.Errorf("--json: stderr = %q, want empty", r.stderr)
	}
	obj := decodeOne(t, r.stdout)
	assertKeys(t, "report", obj, "valid", "files")
	if v, ok := obj["valid"].(bool); !ok || v != wantValid {
		t.Errorf("valid = %v, want %v", obj["valid"], wantValid)
	}
	raw, ok := obj["files"].([]any)
	if !ok {
		t.Fatalf("files is %T, want an array", obj["files"])
	}
	var files []map[string]any
	var names []string
	for i, f := range raw {
		fm, ok := f.(map[string]any)
		if !ok {
			t.Fatalf("files[%d] is %T", i, f)
		}
		assertKeys(t, fmt.Sprintf("files[%d]", i), fm, "file", "valid", "errors", "warnings")
		errs, ok := fm["errors"].([]any)
		if !ok {
			t.Errorf("files[%d].errors is %T, want an array", i, fm["errors"])
		}
		if _, ok := fm["warnings"].([]any); !ok {
			t.Errorf("files[%d].warnings is %T, want an array", i, fm["warnings"])
		}
		if v, _ := fm["valid"].(bool); v != (len(errs) == 0) {
			t.Errorf("files[%d].valid = %v with %d errors", i, fm["valid"], len(errs))
		}
		name, _ := fm["file"].(string)
		names = append(names, name)
		files = append(files, fm)
	}
	if !slices.Equal(names, wantFiles) {
		t.Errorf("files = %v, want %v", names, wantFiles)
	}
	return files
}

func findings(t *testing.T, file map[string]any, key string) []map[string]any {
	t.Helper()
	list, ok := file[key].([]any)
	if !ok {
		t.Fatalf("%s is %T, want an array", key, file[key])
	}
	var out []map[string]any
	for i, f := range list {
		fm, ok := f.(map[string]any)
		if !ok {
			t.Fatalf("%s[%d] is %T", key, i, f)
		}
		out = append(out, fm)
	}
	return out
}

var findingKeys = []string{"severity", "code", "namespace", "category", "message", "detail", "path", "line", "column"}

func assertError(t *testing.T, f map[string]any, code, namespace, path string, line, col int) {
	t.Helper()
	assertKeys(t, "error "+code, f, findingKeys...)
	want := map[string]any{"severity": "error", "code": code, "namespace": namespace, "category": "validation_error",
		"path": path, "line": json.Number(fmt.Sprint(line)), "column": json.Number(fmt.Sprint(col))}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("error %s: %s = %#v, want %#v", code, k, f[k], v)
		}
	}
	for _, k := range []string{"message", "detail"} {
		if s, _ := f[k].(string); s == "" {
			t.Errorf("error %s: empty %s", code, k)
		}
	}
}

func checkErrorsJSON(t *testing.T, r result) {
	files := checkReport(t, r, false, "errors.nika.yaml")
	if len(files) != 1 {
		return
	}
	errs := findings(t, files[0], "errors")
	if len(errs) != 3 {
		t.Fatalf("%d errors, want 3: %v", len(errs), errs)
	}
	assertError(t, errs[0], "NIKA-PARSE-005", "PARSE", "tasks[0].retrys", 7, 5)
	assertError(t, errs[1], "NIKA-DAG-002", "DAG", "tasks[1].depends_on[0]", 9, 18)
	assertError(t, errs[2], "NIKA-DAG-003", "DAG", "tasks[1].infer.prompt", 11, 26)
	if d, _ := errs[0]["detail"].(string); !strings.Contains(d, "did you mean `retry`?") {
		t.Errorf("PARSE-005 detail lacks the suggestion: %q", d)
	}
	if w := findings(t, files[0], "warnings"); len(w) != 0 {
		t.Errorf("warnings = %v, want none", w)
	}
}

func checkWarningsJSON(t *testing.T, r result) {
	files := checkReport(t, r, true, "warnings.nika.yaml", "extension.txt")
	if len(files) != 2 {
		return
	}
	type want struct {
		rule, path string
		line, col  int
	}
	wants := [][]want{
		{{"redundant-when", "tasks[0].when", 7, 11}, {"folded-prompt", "tasks[0].infer.prompt", 9, 15}, {"unused-with", "tasks[1].with.unused", 14, 7}},
		{{"file-extension", "", 1, 1}},
	}
	for i, f := range files {
		if e := findings(t, f, "errors"); len(e) != 0 {
			t.Errorf("%s: errors = %v, want none", f["file"], e)
		}
		ws := findings(t, f, "warnings")
		if len(ws) != len(wants[i]) {
			t.Errorf("%s: %d warnings, want %d: %v", f["file"], len(ws), len(wants[i]), ws)
			continue
		}
		for j, w := range ws {
			assertKeys(t, "warning", w, append([]string{"rule"}, findingKeys...)...)
			if c, present := w["code"]; !present || c != nil {
				t.Errorf("warning %d: code = %#v, want null", j, c)
			}
			exp := wants[i][j]
			got := map[string]any{"severity": w["severity"], "rule": w["rule"], "path": w["path"], "line": w["line"], "column": w["column"], "category": w["category"]}
			wantMap := map[string]any{"severity": "warning", "rule": exp.rule, "path": exp.path,
				"line": json.Number(fmt.Sprint(exp.line)), "column": json.Number(fmt.Sprint(exp.col)), "category": "validation_error"}
			for k := range wantMap {
				if got[k] != wantMap[k] {
					t.Errorf("%s warning %d: %s = %#v, want %#v", f["file"], j, k, got[k], wantMap[k])
				}
			}
			if ns, _ := w["namespace"].(string); ns == "" {
				t.Errorf("warning %d: empty namespace", j)
			}
		}
	}
}

func checkMultiJSON(t *testing.T, r result) {
	files := checkReport(t, r, false, "valid.nika.yaml", "errors.nika.yaml", "missing.nika.yaml")
	if len(files) != 3 {
		return
	}
	for i, wantValid := range []bool{true, false, false} {
		if files[i]["valid"] != wantValid {
			t.Errorf("files[%d].valid = %v, want %v", i, files[i]["valid"], wantValid)
		}
	}
	errs := findings(t, files[2], "errors")
	if len(errs) != 1 {
		t.Fatalf("missing file: %d errors, want 1", len(errs))
	}
	e := errs[0]
	assertKeys(t, "unreadable", e, findingKeys...)
	if c, present := e["code"]; !present || c != nil {
		t.Errorf("unreadable file: code = %#v, want null", c)
	}
	if e["severity"] != "error" || e["namespace"] != "PARSE" || e["category"] != "parse_error" {
		t.Errorf("unreadable file finding = %v", e)
	}
	if m, _ := e["message"].(string); !strings.HasPrefix(m, "cannot read the file: ") {
		t.Errorf("unreadable file message = %q", m)
	}
}

func checkGraphJSON(t *testing.T, r result) {
	if r.stderr != "" {
		t.Errorf("stderr = %q, want empty", r.stderr)
	}
	var g struct {
		Nodes []struct {
			ID   string `json:"id"`
			Wave int    `json:"wave"`
		} `json:"nodes"`
		Edges []struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"edges"`
		Order []string   `json:"order"`
		Waves [][]string `json:"waves"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("graph json: %v\n%s", err, r.stdout)
	}
	waves := map[string]int{}
	for _, n := range g.Nodes {
		waves[n.ID] = n.Wave
	}
	if want := map[string]int{"start": 0, "left": 1, "right": 1, "join": 2}; fmt.Sprint(waves) != fmt.Sprint(want) {
		t.Errorf("node waves = %v, want %v", waves, want)
	}
	var edges []string
	for _, e := range g.Edges {
		edges = append(edges, e.From+"->"+e.To)
	}
	sort.Strings(edges)
	if want := []string{"left->join", "right->join", "start->left", "start->right"}; !slices.Equal(edges, want) {
		t.Errorf("edges = %v, want %v (dependency -> dependent)", edges, want)
	}
	if want := []string{"start", "left", "right", "join"}; !slices.Equal(g.Order, want) {
		t.Errorf("order = %v, want %v", g.Order, want)
	}
	if got, want := fmt.Sprint(g.Waves), "[[start] [left right] [join]]"; got != want {
		t.Errorf("waves = %s, want %s", got, want)
	}
}

// checkExplain holds stdout to the spec's text for code, exactly.
func checkExplain(code string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		text, ok := spec.Explain(code)
		if !ok {
			t.Fatalf("spec.Explain(%s) not found", code)
		}
		want := strings.TrimRight(text, "\n") + "\n"
		diffText(t, "stdout", r.stdout, want)
		diffText(t, "stderr", r.stderr, "")
		if !strings.HasPrefix(r.stdout, code+" ") {
			t.Errorf("stdout does not start with %q: %q", code+" ", firstLine(r.stdout))
		}
	}
}

func checkSchema(t *testing.T, r result) {
	diffText(t, "stderr", r.stderr, "")
	if r.stdout != string(spec.WorkflowSchema()) {
		t.Errorf("stdout is not spec.WorkflowSchema()")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	for _, k := range []string{"$schema", "$id"} {
		if s, _ := doc[k].(string); s == "" {
			t.Errorf("schema has no %s", k)
		}
	}
}

var versionRE = regexp.MustCompile(`^nika [0-9A-Za-z.+-]+( \(go[^)]+\))?\n$`)

func checkVersion(t *testing.T, r result) {
	diffText(t, "stderr", r.stderr, "")
	if !strings.HasPrefix(r.stdout, "nika ") || !versionRE.MatchString(r.stdout) {
		t.Errorf("version stdout = %q, want %s", r.stdout, versionRE)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestCheckTextFormat parses every text finding of the error goldens against
// the D21 line format and checks that the caret sits under the column.
func TestCheckTextFormat(t *testing.T) {
	lineRE := regexp.MustCompile(`^(\S+):(\d+):(\d+): (error|warning)\[([A-Za-z0-9-]+)\] (?:(\S+): )?(.+) — (.+)$`)
	for _, name := range []string{"errors.nika.yaml", "warnings.nika.yaml", "syntax.nika.yaml", "modelless.nika.yaml"} {
		t.Run(name, func(t *testing.T) {
			r := runBinary(t, testdataDir(t), "check", name)
			src, err := os.ReadFile(filepath.Join(testdataDir(t), name))
			if err != nil {
				t.Fatal(err)
			}
			srcLines := strings.Split(string(src), "\n")
			out := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if len(out)%3 != 0 || len(out) == 0 {
				t.Fatalf("stderr is not groups of finding, source line and caret:\n%s", r.stderr)
			}
			for i := 0; i < len(out); i += 3 {
				m := lineRE.FindStringSubmatch(out[i])
				if m == nil {
					t.Errorf("finding line does not match D21: %q", out[i])
					continue
				}
				if m[1] != name {
					t.Errorf("file = %q, want %q", m[1], name)
				}
				var ln, col int
				fmt.Sscan(m[2], &ln)
				fmt.Sscan(m[3], &col)
				num := fmt.Sprint(ln)
				wantSrc := " " + num + " | " + srcLines[ln-1]
				if out[i+1] != wantSrc {
					t.Errorf("source line = %q, want %q", out[i+1], wantSrc)
				}
				wantCaret := " " + strings.Repeat(" ", len(num)) + " | " + strings.Repeat(" ", col-1) + "^"
				if out[i+2] != wantCaret {
					t.Errorf("caret line = %q, want %q", out[i+2], wantCaret)
				}
			}
		})
	}
}

// TestCheckWritesNothing checks that check and graph create or change no
// file in the working directory: they execute nothing.
func TestCheckWritesNothing(t *testing.T) {
	dir := copyFixtures(t, "valid.nika.yaml", "errors.nika.yaml", "warnings.nika.yaml")
	before := listDir(t, dir)
	runBinary(t, dir, "check", "valid.nika.yaml", "errors.nika.yaml", "warnings.nika.yaml")
	runBinary(t, dir, "check", "--json", "valid.nika.yaml", "errors.nika.yaml")
	runBinary(t, dir, "graph", "valid.nika.yaml")
	if after := listDir(t, dir); !slices.Equal(before, after) {
		t.Errorf("files changed: before %v, after %v", before, after)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
