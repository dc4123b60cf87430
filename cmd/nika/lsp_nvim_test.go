package main

// The end-to-end test of `nika lsp` with a real editor client: Neovim's
// built-in LSP client, headless, runs lsp/testdata/nvim_diagnostics.lua,
// which opens a broken workflow, waits for its diagnostics, hovers,
// completes, fixes one finding in the buffer and waits again. What Neovim
// received must be what `nika check --json` prints, before and after the
// edit. Without nvim the test is skipped with a message naming the package,
// unless NIKA_REQUIRE_INTEGRATION=1 (.ci/run) makes that a failure.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLSPWithNeovim(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		msg := "nvim not found: install Debian's neovim (apt-get install -y neovim) to run the Neovim end-to-end test"
		if os.Getenv("NIKA_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg + "; NIKA_REQUIRE_INTEGRATION=1 makes that a failure")
		}
		t.Skip(msg)
	}
	testdata := filepath.Join(pkgDir, "..", "..", "lsp", "testdata")
	src, err := os.ReadFile(filepath.Join(testdata, "broken.nika.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "broken.nika.yaml")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "received.json")
	home := filepath.Join(dir, "home")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a timing assertion
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "--clean", "-n", "-i", "NONE",
		"-c", "luafile "+filepath.Join(testdata, "nvim_diagnostics.lua"))
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home,
		"XDG_STATE_HOME="+home, "XDG_CACHE_HOME="+home, "NIKA_LSP_BIN="+nikaBin, "NIKA_LSP_FILE="+file, "NIKA_LSP_OUT="+out)
	cmd.Stdin = strings.NewReader("")
	combined, err := cmd.CombinedOutput()
	if err != nil {
		why, _ := os.ReadFile(out + ".err")
		t.Fatalf("nvim: %v: %s\n%s", err, why, combined)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the script wrote nothing: %v\n%s", err, combined)
	}
	var got struct {
		First, Second struct {
			Version     int
			Diagnostics []lspDiagnostic
		}
		Text  string
		Hover struct {
			Contents struct{ Value string }
		}
		Completion struct {
			Items []struct{ Label string }
		}
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	sameFindings(t, "Neovim on open", fromDiagnostics(t, string(src), got.First.Diagnostics), checkFindings(t, dir, file))

	// After the edit: the buffer's text, checked by nika check as a file.
	edited := filepath.Join(dir, "edited.nika.yaml")
	if err := os.WriteFile(edited, []byte(got.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Text, "model: mock/echo") || strings.Contains(got.Text, "modle") {
		t.Fatalf("the buffer was not edited as the script says:\n%s", got.Text)
	}
	sameFindings(t, "Neovim after the edit", fromDiagnostics(t, got.Text, got.Second.Diagnostics), checkFindings(t, dir, edited))
	if len(got.Second.Diagnostics) != len(got.First.Diagnostics)-1 {
		t.Errorf("%d diagnostics after fixing one of %d", len(got.Second.Diagnostics), len(got.First.Diagnostics))
	}
	if !strings.Contains(got.Hover.Contents.Value, "NIKA-INVOKE-001") {
		t.Errorf("hover through Neovim: %q", got.Hover.Contents.Value)
	}
	if !hasLabel(got.Completion.Items, "nika:fetch") {
		t.Errorf("completion through Neovim has no nika:fetch: %+v", got.Completion.Items)
	}
	if got.ExitCode != 0 {
		t.Errorf("nika lsp exited %d after Neovim's shutdown, want 0", got.ExitCode)
	}
}
