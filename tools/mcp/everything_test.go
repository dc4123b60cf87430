package mcp

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// everythingServer finds the reference server-everything (its dist/index.js) through
// NIKA_MCP_EVERYTHING_SERVER (.ci/run installs it, pinned), and node. It skips with a message
// when either is missing, unless NIKA_REQUIRE_INTEGRATION=1 makes that a failure.
func everythingServer(t *testing.T) (node, index string) {
	t.Helper()
	skip := func(msg string) {
		if os.Getenv("NIKA_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg + "; NIKA_REQUIRE_INTEGRATION=1 forbids skipping")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed")
	}
	index = os.Getenv("NIKA_MCP_EVERYTHING_SERVER")
	if index == "" {
		skip("NIKA_MCP_EVERYTHING_SERVER is unset (the path to @modelcontextprotocol/server-everything's dist/index.js)")
	}
	if _, err := os.Stat(index); err != nil {
		skip("server-everything: " + err.Error())
	}
	return node, index
}

// The reference server-everything's long-running tool reports its progress only when the call
// carries a progress token: through the real server, CallProgress gets its notifications in
// order. (A notification sent right before the answer may lose the race with it, so only the
// steps before the last are required.)
func TestEverythingServerProgress(t *testing.T) {
	node, index := everythingServer(t)
	reg := &Registry{path: "reg.json", servers: map[string]Server{"everything": {Command: node, Args: []string{index, "stdio"}}}, invalid: map[string]string{}}
	c := NewClient(reg, Options{Getenv: os.LookupEnv})
	defer c.Close()
	var mu sync.Mutex
	var got [][2]float64
	out, err := c.CallProgress(context.Background(), "mcp:everything/trigger-long-running-operation",
		map[string]any{"duration": 0.6, "steps": 3}, func(progress, total float64, _ string) {
			mu.Lock()
			got = append(got, [2]float64{progress, total})
			mu.Unlock()
		})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.(string), "Long running operation completed") {
		t.Errorf("output %v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[0] != [2]float64{1, 3} || got[1] != [2]float64{2, 3} || len(got) == 3 && got[2] != [2]float64{3, 3} || len(got) > 3 {
		t.Errorf("progress %v, want 1/3, 2/3 (and maybe 3/3)", got)
	}
}
