package main

// Black-box tests of nika:fetch modes `article` and `selector` (LANGUAGE.md §7.5) under
// `nika run`: a local server, reached through an explicit permits.net.http entry for
// 127.0.0.1 (the SSRF floor refuses loopback otherwise), and `nika check` on the same files.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

const fetchModesPage = `<!DOCTYPE html><html lang="en"><head><title>Retries that do not hurt | Blog</title></head><body>
<nav><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/pricing">Pricing</a></nav>
<aside class="sidebar"><h3>Popular posts</h3><ul><li><a href="/a">Ten YAML tricks</a></li></ul></aside>
<article><h1>Retries that do not hurt</h1>
<p>A workflow step that talks to the network will fail sooner or later. The question is not whether to
retry but how: a retry that arrives too early makes an overloaded service slower, and a retry of a step
that is not idempotent charges the customer twice.</p>
<h2>Back off, with jitter</h2>
<p>Exponential backoff spaces the attempts out, and jitter keeps a thousand clients from retrying in the
same millisecond. See the <a href="/docs/retries">retry guide</a> for the codes that are transient.</p>
<h2>Make the step idempotent</h2>
<p>When a step can run twice, make the second run harmless: send an idempotency key, write to a path
named by the run, or check before you act.</p>
</article><footer>© 2026 <a href="/privacy">Privacy</a></footer></body></html>`

// fetchModesServer serves fetchModesPage at /post, and /moved redirects to it; hits counts the
// requests.
func fetchModesServer(t *testing.T) (srv *httptest.Server, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/post", http.StatusMovedPermanently)
		case "/post":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, fetchModesPage)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// fetchWorkflow is a one-task workflow fetching url with the given args (YAML flow mapping
// entries), with permits for 127.0.0.1 when permitted is true, else without a permits block
// (where the SSRF floor still applies).
func fetchWorkflow(url, args string, permitted bool) string {
	permits := ""
	if permitted {
		permits = "permits: { net: { http: [\"127.0.0.1\"] }, tools: [\"nika:fetch\"] }\n"
	}
	return fmt.Sprintf("nika: v1\nworkflow: fetch-modes\n%stasks:\n  - id: page\n    invoke: { tool: nika:fetch, args: { url: %q, %s } }\noutputs:\n  page: ${{ tasks.page.output }}\n",
		permits, url, args)
}

// runFetch runs wf and returns the exit code, the run's `page` output and the report.
func runFetch(t *testing.T, wf string) (int, any, string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.nika.yaml"), wf)
	r := runBinary(t, dir, "run", "f.nika.yaml", "--no-trace", "--quiet", "--report", "r.json")
	_, raw := readReport(t, filepath.Join(dir, "r.json"))
	var rep struct {
		Outputs map[string]any `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return r.code, rep.Outputs["page"], string(raw) + "\n" + r.stderr
}

func TestRunFetchArticle(t *testing.T) {
	srv, hits := fetchModesServer(t)
	code, out, rep := runFetch(t, fetchWorkflow(srv.URL+"/moved", "mode: article", true))
	md, _ := out.(string)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, rep)
	}
	for _, want := range []string{"# Retries that do not hurt\n\nA workflow step", "## Back off, with jitter",
		"[retry guide](" + srv.URL + "/docs/retries)", "check before you act."} {
		if !strings.Contains(md, want) {
			t.Errorf("article lacks %q:\n%s", want, md)
		}
	}
	for _, gone := range []string{"Pricing", "Popular posts", "Privacy"} {
		if strings.Contains(md, gone) {
			t.Errorf("article keeps the page's chrome (%q):\n%s", gone, md)
		}
	}
	// Without a permits block the floor still refuses the loopback server, before any request.
	before := hits.Load()
	code, _, rep = runFetch(t, fetchWorkflow(srv.URL+"/post", "mode: article", false))
	if code == 0 || !strings.Contains(rep, "NIKA-SEC-005") || hits.Load() != before {
		t.Errorf("without permits: exit %d, %d requests, want NIKA-SEC-005 and none:\n%s", code, hits.Load()-before, rep)
	}
}

func TestRunFetchSelector(t *testing.T) {
	srv, _ := fetchModesServer(t)
	code, out, rep := runFetch(t, fetchWorkflow(srv.URL+"/moved", `mode: selector, selector: "article h2, title"`, true))
	if want := []any{"Retries that do not hurt | Blog", "Back off, with jitter", "Make the step idempotent"}; code != 0 || !reflect.DeepEqual(out, want) {
		t.Fatalf("exit %d, page %#v; want %#v:\n%s", code, out, want, rep)
	}
}

// `nika check` accepts both modes and checks a literal selector before anything runs.
func TestCheckFetchModes(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string]string{"article": "mode: article", "selector": "mode: selector, selector: \"ul > li:first-child a[href]\""} {
		writeFile(t, filepath.Join(dir, name+".nika.yaml"), fetchWorkflow("https://example.com/", args, false))
		if r := runBinary(t, dir, "check", name+".nika.yaml"); r.code != 0 {
			t.Errorf("check %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
	}
	for name, c := range map[string]struct{ args, want string }{
		"bad-selector":     {`mode: selector, selector: "ul >"`, "is not a valid CSS selector"},
		"missing-selector": {"mode: selector", "mode `selector` requires `selector`"},
		"stray-selector":   {"mode: text, selector: h2", "only allowed with mode `selector`"},
		"feed":             {"mode: feed", "mode `feed` is not supported by this engine"},
	} {
		writeFile(t, filepath.Join(dir, name+".nika.yaml"), fetchWorkflow("https://example.com/", c.args, false))
		r := runBinary(t, dir, "check", name+".nika.yaml")
		if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "NIKA-BUILTIN-001") || !strings.Contains(out, c.want) {
			t.Errorf("check %s: exit %d, want NIKA-BUILTIN-001 with %q:\n%s", name, r.code, c.want, out)
		}
	}
}
