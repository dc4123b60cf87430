package main

// Browser tests of the web view (issue 18): the real `nika serve` binary, driven by a real
// headless Chromium through github.com/chromedp/chromedp. Every wait is on something the page
// shows (a class, an element, a URL), never a sleep; the contexts' deadlines only stop a broken
// test from hanging.
//
// Screenshots go to the test's artifact directory (kept with `go test -artifacts -outputdir DIR`);
// NIKA_WEB_SCREENSHOT=FILE also writes the run page's picture there (docs/run-page.png:
// `NIKA_WEB_SCREENSHOT=$PWD/docs/run-page.png go test ./cmd/nika -run TestWebBrowser`).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const webToken = "web-test-token-0123456789"

// webBriefYAML fans out three infer tasks on the mock, joins them in an agent on the scripted
// OpenAI-compatible server below (one turn of three tool calls in one batch), then writes a brief.
const webBriefYAML = `nika: v1
workflow: research-brief
model: mock/echo
permits:
  tools: ["nika:hash", "nika:wait"]
vars:
  topic: "moving billing to Go"
tasks:
  - id: strategy
    infer: { prompt: "Strategic view on ${{ vars.topic }}." }
  - id: cost
    infer: { prompt: "Cost view on ${{ vars.topic }}." }
  - id: risk
    infer: { prompt: "Risk view on ${{ vars.topic }}." }
  - id: research
    depends_on: [strategy, cost, risk]
    agent:
      model: openai/gpt-test
      prompt: "Check the three views, then answer."
      tools: ["nika:wait", "nika:hash"]
      max_turns: 4
  - id: brief
    depends_on: [research]
    infer: { prompt: "Brief: ${{ tasks.research.output }}" }
outputs:
  brief: ${{ tasks.brief.output }}
`

// webFanYAML is what the test types into /new.
const webFanYAML = `nika: v1
workflow: three-angles
model: mock/echo
vars:
  topic: "the web view"
tasks:
  - id: strategy
    infer: { prompt: "Strategy of ${{ vars.topic }}." }
  - id: cost
    infer: { prompt: "Cost of ${{ vars.topic }}." }
  - id: risk
    infer: { prompt: "Risk of ${{ vars.topic }}." }
  - id: synthesize
    depends_on: [strategy, cost, risk]
    infer: { prompt: "Merge ${{ tasks.strategy.output }} and the rest." }
outputs:
  recommendation: ${{ tasks.synthesize.output }}
`

// webHoldYAML runs until it is cancelled.
const webHoldYAML = `nika: v1
workflow: long-wait
permits:
  tools: ["nika:wait"]
tasks:
  - id: hold
    invoke: { tool: nika:wait, args: { duration: "10m" } }
  - id: after
    depends_on: [hold]
    invoke: { tool: nika:wait, args: { duration: "1ms" } }
`

// batchOpenAI answers the agent: the first turn asks for three tools in one response (two waits
// of different lengths and a hash, so the lanes show calls running at once), the second answers.
// The first answer waits for hold to close, so the test sees the run while it runs.
type batchOpenAI struct{ hold chan struct{} }

func (f batchOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if !strings.Contains(string(b), `"role":"tool"`) {
		select {
		case <-f.hold:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","tool_calls":[
 {"id":"call_a","type":"function","function":{"name":"nika_wait","arguments":"{\"duration\":\"240ms\"}"}},
 {"id":"call_b","type":"function","function":{"name":"nika_hash","arguments":"{\"content\":\"alpha\"}"}},
 {"id":"call_c","type":"function","function":{"name":"nika_wait","arguments":"{\"duration\":\"120ms\"}"}}]}}],
 "usage":{"prompt_tokens":41,"completion_tokens":26}}`)
		return
	}
	io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"The three views agree: go ahead."}}],"usage":{"prompt_tokens":96,"completion_tokens":9}}`)
}

// needChromium returns the browser to drive: skipped when missing, unless
// NIKA_REQUIRE_INTEGRATION=1 (.ci/run) makes that a failure.
func needChromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/lib/chromium/chromium"} { // Debian's binary, without the wrapper script
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return needOutsideProgram(t, "chromium", "chromium")
}

// browser is one headless Chromium tab and what it reported on its console.
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1440, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx}
	if err := chromedp.Listen(ctx, b.observe); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("chromium: Log.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("chromium: Runtime.enable: %v", err)
	}
	return b
}

// observe records console errors, uncaught exceptions and the browser's own error entries (a
// CSP violation, a failed load).
func (b *browser) observe(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			msg = "console.error: " + strings.Join(parts, " ")
		}
	case *runtime.EventExceptionThrown:
		msg = "uncaught: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError {
			msg = "log: " + e.Entry.Text + " " + e.Entry.URL
		}
	}
	if msg != "" {
		b.mu.Lock()
		b.errs = append(b.errs, msg)
		b.mu.Unlock()
	}
}

// do runs actions, failing the test with what was being done.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		html, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
		b.t.Fatalf("%s: %v\nat %s:\n%s", what, err, loc, html)
	}
}

// until waits for a JavaScript predicate to hold.
func (b *browser) until(what, expr string) {
	b.t.Helper()
	b.do(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(55*time.Second))(ctx, t)
		return err
	}))
}

func (b *browser) eval(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// screenshot writes the viewport as a PNG into the screenshot directory, and to also when set.
func (b *browser) screenshot(name string, also ...string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, p := range append([]string{filepath.Join(screenshotDir(b.t), name)}, also...) {
		if p == "" {
			continue
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			b.t.Fatalf("screenshot %s: %v", p, err)
		}
		b.t.Logf("screenshot: %s", p)
	}
}

// dark turns the emulated prefers-color-scheme to dark, or back.
func (b *browser) dark(on bool) {
	b.t.Helper()
	scheme := "light"
	if on {
		scheme = "dark"
	}
	p := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, p); err != nil {
		b.t.Fatalf("emulating %s: %v", scheme, err)
	}
}

// scripts turns the page's script on or off (Emulation.setScriptExecutionDisabled).
func (b *browser) scripts(on bool) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on}); err != nil {
		b.t.Fatalf("turning script on=%v: %v", on, err)
	}
}

func (b *browser) noConsoleErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errs {
		b.t.Errorf("the browser reported an error: %s", e)
	}
}

// submitAPI submits a workflow over the API with the bearer token and returns its run id.
func submitAPI(t *testing.T, s *served, yaml string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"workflow": yaml})
	req, _ := http.NewRequest("POST", s.url+"/v1/runs", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+webToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		RunID string `json:"run_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &out) != nil {
		t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	return out.RunID
}

// allNodes is a predicate: every node of the graph has the state's class.
func allNodes(state string) string {
	return fmt.Sprintf(`(() => { const ns = document.querySelectorAll("#graph a.node"); return ns.length > 0 && Array.from(ns).every(n => n.classList.contains("st-%s")); })()`, state)
}

// TestWebBrowser signs in with the token, submits a workflow through /new (its findings shown
// inline before), watches its tasks turn green, opens an agent task from the keyboard and finds
// one lane per tool call of its parallel batch, and cancels a running run; the browser reports
// no error on the way.
func TestWebBrowser(t *testing.T) {
	chromium := needChromium(t)
	model := batchOpenAI{hold: make(chan struct{})}
	fake := httptest.NewServer(model)
	defer fake.Close()
	released := false
	defer func() { // a failing test must not leave the fake server's handler waiting
		if !released {
			close(model.hold)
		}
	}()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ceiling.yaml"), []byte(`tools: ["nika:hash", "nika:wait"]`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServeEnv(t, dir, []string{"OPENAI_BASE_URL=" + fake.URL + "/v1", "OPENAI_API_KEY=sk-test"},
		"--auth-token", webToken, "--permits", "ceiling.yaml")
	b := newBrowser(t, chromium)

	// Sign in: a page asked for without a session goes to the form, and back after it.
	b.do("opening the runs page", chromedp.Navigate(s.url+"/new"), chromedp.WaitVisible(chromedp.ID("token")))
	b.screenshot("signin.png")
	b.do("signing in", chromedp.SendKeys(chromedp.ID("token"), webToken), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("workflow")))
	if loc := b.eval(`location.pathname`); loc != "/new" {
		t.Fatalf("after signing in the browser is at %s, want /new", loc)
	}
	if cookie := b.eval(`document.cookie`); strings.Contains(cookie, "nika_session") {
		t.Errorf("script can read the session cookie: %q", cookie)
	}

	// The editor: an invalid workflow shows its finding at its line, before anything is submitted.
	bad := strings.Replace(webFanYAML, "${{ vars.topic }}", "${{ vars.topik }}", 1)
	b.do("typing an invalid workflow", chromedp.SetValue(chromedp.ID("workflow"), bad),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error { // SetValue fires no input event
			_, err := chromedp.Evaluate[chromedp.Void](`document.getElementById("workflow").dispatchEvent(new Event("input"))`)(ctx, t)
			return err
		}))
	b.until("the inline finding", `document.querySelector('#findings .finding.sev-error[data-line="8"]') !== null`)
	if txt := b.eval(`document.querySelector('#findings .finding.sev-error').textContent`); !strings.Contains(txt, "NIKA-VAR-001") || !strings.Contains(txt, "8:") {
		t.Errorf("the finding reads %q", txt)
	}
	b.screenshot("new-findings.png")
	b.do("fixing it", chromedp.SetValue(chromedp.ID("workflow"), webFanYAML), chromedp.SetValue(chromedp.ID("vars"), "topic=browsers"),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`document.getElementById("workflow").dispatchEvent(new Event("input"))`)(ctx, t)
			return err
		}))
	b.until("the workflow checks valid", `document.querySelector('#findings .findings[data-valid="true"]') !== null`)
	b.do("submitting", chromedp.Click(chromedp.ID("submit")), chromedp.WaitVisible(chromedp.CSS("#graph svg")))
	b.until("every task turns green", allNodes("success"))
	b.until("the run is over", `document.getElementById("run").dataset.ended === "true"`)
	if out := b.eval(`document.getElementById("outputs").textContent`); !strings.Contains(out, "Merge Strategy of browsers.") {
		t.Errorf("the outputs read %q", out)
	}
	b.screenshot("run-fan-out.png")

	// The runs page lists it, live.
	b.do("the runs page", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#runs tbody tr")))
	b.until("the run's row", `document.querySelector('#runs tbody tr[data-workflow="three-angles"][data-state="success"]') !== null`)
	b.screenshot("runs.png")

	// An agent task: opened from the keyboard, its batch is one lane per tool call.
	id := submitAPI(t, s, webBriefYAML)
	b.do("the agent run", chromedp.Navigate(s.url+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`#graph a.node[data-task="research"]`)))
	b.until("the agent task runs, after its dependencies", `(() => { const c = t => document.querySelector('#graph a.node[data-task="' + t + '"]').classList;
		return c("strategy").contains("st-success") && c("risk").contains("st-success") && c("research").contains("st-running") && c("brief").contains("st-pending"); })()`)
	b.screenshot("run-live.png")
	close(model.hold)
	released = true
	b.until("every task turns green", allNodes("success"))
	b.do("choosing the agent task from the keyboard", chromedp.Focus(chromedp.CSS(`#graph a.node[data-task="research"]`)),
		chromedp.KeyEvent("\r"))
	b.until("the batch's lanes", `document.querySelectorAll('#task[data-task="research"] .batch .lane').length === 3`)
	if got := b.eval(`Array.from(document.querySelectorAll('#task .batch .lane')).map(l => l.dataset.index + ":" + l.querySelector("text.name").textContent + ":" + l.querySelector("text.fold").textContent).join(" | ")`); got != "0:#0 nika:wait:fold 1 | 1:#1 nika:hash:fold 2 | 2:#2 nika:wait:fold 3" {
		t.Errorf("the lanes read %q", got)
	}
	if q := b.eval(`location.search`); q != "?task=research" {
		t.Errorf("choosing a task left the address at %q", q)
	}
	b.until("the run is over", `document.getElementById("run").dataset.ended === "true"`)
	b.do("the panel settles", chromedp.WaitVisible(chromedp.CSS(`#task[data-task="research"] .batch`)),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	b.screenshot("run-agent.png", os.Getenv("NIKA_WEB_SCREENSHOT"))
	b.dark(true)
	b.screenshot("run-agent-dark.png")
	b.dark(false)

	// Cancel a running run from its page.
	id = submitAPI(t, s, webHoldYAML)
	b.do("the held run", chromedp.Navigate(s.url+"/runs/"+id), chromedp.WaitVisible(chromedp.ID("cancel")))
	b.until("the task runs", `document.querySelector('#graph a.node[data-task="hold"]').classList.contains("st-running")`)
	b.screenshot("run-running.png")
	b.do("cancelling", chromedp.Click(chromedp.ID("cancel")))
	b.until("the run is cancelled", allNodes("cancelled")+` && document.querySelector("#run-state .badge").textContent === "cancelled"`)
	b.until("no cancel button once it ended", `document.getElementById("cancel") === null`)
	b.screenshot("run-cancelled.png")

	// Without script, the static parts still work: the graph's nodes are links to their panel.
	b.scripts(false)
	b.do("a run page without script", chromedp.Navigate(s.url+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`#graph a.node[data-task="hold"]`)),
		chromedp.Click(chromedp.CSS(`#graph a.node[data-task="after"]`)), chromedp.WaitVisible(chromedp.ID("task-title")))
	if got := b.eval(`location.search + " " + document.getElementById("task").dataset.status`); got != "?task=after cancelled" {
		t.Errorf("without script, choosing a task gave %q", got)
	}
	b.scripts(true)

	// Signing out ends the session for this browser.
	b.do("signing out", chromedp.Click(chromedp.CSS("form.signout button")), chromedp.WaitVisible(chromedp.ID("token")))
	b.do("a page after signing out", chromedp.Navigate(s.url+"/runs/"+url.PathEscape(id)), chromedp.WaitVisible(chromedp.ID("token")))
	b.noConsoleErrors()
}

// screenshotDir is where the browser tests leave their screenshots for people to look at:
// $NIKA_SCREENSHOT_DIR when set (.ci/run sets .ci/artifacts/screenshots, kept after the run),
// else the test's artifact directory (kept with go test -artifacts -outputdir DIR).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NIKA_SCREENSHOT_DIR")
	if dir == "" {
		return t.ArtifactDir()
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
