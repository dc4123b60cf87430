package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nika:inspect answers from the running planner (LANGUAGE.md §7.2): the
// records of the settled tasks (secrets masked), the token cost so far, the
// task graph, and the attempts running now. Every view read here is
// deterministic because the reader depends on what it reads.
func TestRunInspect(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(pkgDir, "testdata", "run", "inspect.nika.yaml"), filepath.Join(dir, "i.nika.yaml"))
	cmd := exec.Command(nikaBin, "run", "i.nika.yaml", "--no-trace", "--quiet")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), "INSPECT_TOKEN=s3cr3t-value")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	want := `{"ask_output":"four words in all","ask_status":"success",` +
		`"cost":{"tokens_in":5,"tokens_out":5,"usd":null},` +
		`"graph":{"edges":[["ask","look"],["shout","look"],["ask","cost"],["ask","threads"],["shout","threads"]],"tasks":["ask","shout","look","cost","graph","threads"],"waves":[["ask","shout","graph"],["look","cost","threads"]],"workflow":"inspected"},` +
		`"sees_itself":false,"self_running":true,"settled_deps":true,"shout":"••••••"}` + "\n"
	if string(out) != want {
		t.Errorf("stdout\n%s\nwant\n%s", out, want)
	}
}
