package main

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// A provider whose engine variable is not valid is left out of `nika serve`'s set, and the
// operator hears of it at start-up (before the listening line), not at the first submission;
// providers left out only for a missing key are not mentioned.
func TestServeWarnsOfABadEngineVariable(t *testing.T) {
	cmd := exec.Command(nikaBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = t.TempDir()
	cmd.Env = append(append([]string(nil), testEnv...), "NIKA_VLLM_MAX_INFLIGHT=abc")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var before []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on") {
		before = append(before, sc.Text())
	}
	log := strings.Join(before, "\n")
	if !strings.Contains(log, "nika serve: warning: provider vllm is left out") || !strings.Contains(log, "NIKA_VLLM_MAX_INFLIGHT") {
		t.Errorf("the start-up log does not name the bad variable:\n%s", log)
	}
	if strings.Contains(log, "anthropic") || len(before) != 1 {
		t.Errorf("the start-up log mentions more than the bad variable:\n%s", log)
	}
}
