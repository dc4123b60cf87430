package metrics_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nikahq/nika/metrics"
	"github.com/nikahq/nika/provider"
)

// needProgram returns the path of an outside program an integration test needs. Absent, the test is
// skipped with a message naming it, unless NIKA_REQUIRE_INTEGRATION=1 (.ci/run), when it fails.
func needProgram(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " is not installed (Debian package " + pkg + ": apt-get install " + pkg + ")"
	if os.Getenv("NIKA_REQUIRE_INTEGRATION") == "1" {
		t.Fatal(msg + "; NIKA_REQUIRE_INTEGRATION=1 makes that a failure")
	}
	t.Skip(msg)
	return ""
}

// `promtool check metrics` finds nothing to say about the /metrics exposition of a scripted run
// (names, suffixes, help texts, histogram shape), with and without the task label.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := needProgram(t, "promtool", "prometheus")
	for _, taskLabel := range []bool{false, true} {
		m := metrics.New(metrics.Options{Version: "0.0.0-test", TaskLabel: taskLabel})
		m.AddProvider("openai", provider.NewFront("openai", nil, provider.FrontConfig{}))
		runScripted(t, m)
		srv := httptest.NewServer(m.Handler())
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"nika_task_runs_total", "nika_provider_concurrency_limit", "nika_provider_requests_in_flight",
			"nika_provider_requests_waiting", "nika_provider_rate_limited_total"} {
			if !strings.Contains(string(body), name+"{") {
				t.Fatalf("the exposition lacks %s:\n%s", name, body)
			}
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("TaskLabel=%v: promtool check metrics: %v\n%s", taskLabel, err, out)
		}
	}
}
