package main

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// `nika worker --metrics-addr 127.0.0.1:0` names its /metrics on stderr and serves there the
// build info and the limiter of each provider it built (the worker's: every job it runs shares it).
func TestDevserverWorkerMetrics(t *testing.T) {
	dir := t.TempDir()
	addr := startDevServer(t, dir)
	cmd := exec.Command(nikaBin, "worker", "--temporal", addr, "--task-queue", "metrics", "--metrics-addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), "OPENAI_API_KEY=sk-test")
	const ready = "nika worker: serving metrics at "
	logs := startUntil(t, cmd, false, ready)
	var url string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.HasPrefix(line, ready) {
			url = strings.TrimPrefix(line, ready)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %q: %v (worker stderr: %s)", url, err, logs.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	for _, want := range []string{
		`nika_build_info{go_version=`,
		`nika_provider_concurrency_limit{provider="openai"} `,
		`nika_provider_requests_in_flight{provider="openai"} 0`,
		`nika_provider_requests_waiting{provider="openai"} 0`,
		`nika_provider_rate_limited_total{provider="openai"} 0`,
		`process_start_time_seconds `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %q:\n%s", want, body)
		}
	}
}
