package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nikahq/nika/engine"
)

// page fetches a web path with optional extra headers and returns the response (body read).
func (c *client) page(method, path, body string, header map[string]string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.ts.URL+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	cl := *c.ts.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(b)
}

// Every page answers with its status, its content type and the strict CSP; what does not exist
// is a 404 page, also under the CSP.
func TestWebPages(t *testing.T) {
	_, c := start(t, Options{})
	id := c.submit(helloYAML, nil)
	c.events(id)
	for _, tc := range []struct {
		path, ctype string
		code        int
		has         string
	}{
		{"/", "text/html", 200, `href="/runs/` + id + `"`},
		{"/?state=success&workflow=hel", "text/html", 200, id},
		{"/?state=failure", "text/html", 200, "No runs match"},
		{"/runs/" + id, "text/html", 200, `data-task="greet"`},
		{"/runs/" + id + "?task=greet", "text/html", 200, `id="task-title"`},
		{"/ui/runs/" + id + "/tasks/greet", "text/html", 200, `Hello world`},
		{"/runs/" + id + "/trace", "application/x-ndjson", 200, `"kind":"workflow_completed"`},
		{"/new", "text/html", 200, `<textarea id="workflow"`},
		{"/explain/NIKA-CANCEL-001", "text/html", 200, "NIKA-CANCEL-001"},
		{"/signin", "text/html", 200, "nothing to sign in to"},
		{"/ui/static/app.js", "text/javascript", 200, "EventSource"},
		{"/ui/static/app.css", "text/css", 200, "prefers-color-scheme: dark"},
		{"/runs/r-nope", "text/html", 404, "never existed"},
		{"/runs/" + id + "?task=nope", "text/html", 404, "no task"},
		{"/ui/runs/" + id + "/tasks/nope", "text/html", 404, "No such task"},
		{"/explain/NIKA-NOPE-001", "text/html", 404, "No code"},
		{"/ui/runs/r-nope/stream", "text/plain", 404, "no such run"},
	} {
		resp, b := c.page("GET", tc.path, "", nil)
		if resp.StatusCode != tc.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(b, tc.has) {
			t.Errorf("GET %s = %d %q, want %d %s with %q:\n%.600s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.code, tc.ctype, tc.has, b)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != contentSecurityPolicy || !strings.HasPrefix(got, "default-src 'self'") {
			t.Errorf("GET %s: CSP %q", tc.path, got)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", tc.path)
		}
		if strings.Contains(b, "<script>") || strings.Contains(b, " style=") || strings.Contains(b, " onclick=") {
			t.Errorf("GET %s has inline script or style, which the CSP would block:\n%s", tc.path, b)
		}
	}
	if resp, _ := c.page("GET", "/runs/"+id+"/trace", "", nil); !strings.Contains(resp.Header.Get("Content-Disposition"), id+".ndjson") {
		t.Errorf("trace download: Content-Disposition %q", resp.Header.Get("Content-Disposition"))
	}
	// The API is as it was: no web headers on it.
	if resp, _ := c.page("GET", "/v1/runs/"+id, "", nil); resp.Header.Get("Content-Security-Policy") != "" || resp.StatusCode != 200 {
		t.Errorf("GET /v1/runs/{id}: %d CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}

// With a token, a browser signs in once and gets an HttpOnly, SameSite=Strict cookie; the pages
// take the cookie (or the bearer header), the API only the bearer header.
func TestWebSignIn(t *testing.T) {
	const token = "s3cret-token"
	_, c := start(t, Options{AuthToken: token})
	resp, _ := c.page("GET", "/runs/r-x?task=a", "", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin?next="+url.QueryEscape("/runs/r-x?task=a") {
		t.Fatalf("a page without a session = %d %q, want 303 to the sign-in form", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{"/ui/runs/stream", "/ui/runs/r-x/tasks/a"} {
		if resp, _ := c.page("GET", p, "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session = %d, want 401", p, resp.StatusCode)
		}
	}
	if resp, _ := c.page("POST", "/ui/check", "nika: v1", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /ui/check without a session = %d, want 401", resp.StatusCode)
	}
	for _, p := range []string{"/signin", "/ui/static/app.css"} {
		if resp, _ := c.page("GET", p, "", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a session = %d, want 200", p, resp.StatusCode)
		}
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if resp, b := c.page("POST", "/signin", "token=wrong&next=%2F", form); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Set-Cookie") != "" || !strings.Contains(b, "not this server") {
		t.Errorf("a wrong token = %d cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	resp, _ = c.page("POST", "/signin", "token="+token+"&next="+url.QueryEscape("//evil.example/x"), form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in = %d to %q, want 303 to / (an off-site next is dropped)", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" || session.MaxAge <= 0 {
		t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Strict, Path=/", session)
	}
	if strings.Contains(session.Value, token) {
		t.Errorf("the cookie carries the token: %q", session.Value)
	}
	cookie := map[string]string{"Cookie": sessionCookie + "=" + session.Value}
	if resp, b := c.page("GET", "/", "", cookie); resp.StatusCode != http.StatusOK || !strings.Contains(b, "Sign out") {
		t.Errorf("GET / with the cookie = %d", resp.StatusCode)
	}
	if resp, _ := c.page("GET", "/", "", map[string]string{"Authorization": "Bearer " + token}); resp.StatusCode != http.StatusOK {
		t.Errorf("GET / with the bearer header = %d", resp.StatusCode)
	}
	if resp, _ := c.page("POST", "/v1/runs", body(helloYAML, nil), cookie); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the API with the cookie only = %d, want 401 (the API keeps the bearer header)", resp.StatusCode)
	}
	tampered := map[string]string{"Cookie": sessionCookie + "=9999999999." + strings.Repeat("A", 43)}
	if resp, _ := c.page("GET", "/", "", tampered); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / with a forged cookie = %d, want 303", resp.StatusCode)
	}
	resp, _ = c.page("POST", "/signout", "", cookie)
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign-out = %d %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	// A page of another origin cannot sign a browser in (login CSRF).
	cross := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	if resp, _ := c.page("POST", "/signin", "token="+token, cross); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site sign-in = %d, want 403", resp.StatusCode)
	}
}

func TestSessionKey(t *testing.T) {
	var k sessionKey
	if err := k.init(); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	v := k.mint(now.Add(sessionTTL))
	if !k.valid(v, now) || k.valid(v, now.Add(sessionTTL)) {
		t.Errorf("a cookie is valid until its expiry and not after")
	}
	exp, sig, _ := strings.Cut(v, ".")
	for _, bad := range []string{"", exp, exp + ".", "1" + exp + "." + sig, exp + "." + sig[1:], exp + ".!!"} {
		if k.valid(bad, now) {
			t.Errorf("valid(%q)", bad)
		}
	}
	var other sessionKey
	other.init()
	if other.valid(v, now) {
		t.Errorf("another server's cookie is valid")
	}
	for in, want := range map[string]string{"/runs/x?task=a": "/runs/x?task=a", "": "/", "//evil.example": "/",
		`/\evil.example`: "/", "https://evil.example/": "/", "runs": "/"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// escapeYAML's task output is markup, a closing script tag and an event handler: every page that
// shows it shows it as text.
const escapeYAML = `nika: v1
workflow: escape
model: mock/echo
tasks:
  - id: loud
    infer: { prompt: "<script>alert(1)</script></script><img src=x onerror=alert(2)>" }
    output:
      size: "length"
outputs:
  shown: ${{ tasks.loud.output }}
`

func TestWebEscapesTaskOutput(t *testing.T) {
	_, c := start(t, Options{})
	id := c.submit(escapeYAML, nil)
	c.events(id)
	for _, p := range []string{"/runs/" + id + "?task=loud", "/ui/runs/" + id + "/tasks/loud", "/runs/" + id} {
		_, b := c.page("GET", p, "", nil)
		for _, raw := range []string{"<script>alert", "</script><img", "<img src=x"} {
			if strings.Contains(b, raw) {
				t.Errorf("GET %s holds %q unescaped", p, raw)
			}
		}
		if !strings.Contains(b, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;") {
			t.Errorf("GET %s does not show the output as text:\n%s", p, b)
		}
	}
	// The binding is recomputed over the kept output: the 62 characters of the prompt.
	if _, b := c.page("GET", "/ui/runs/"+id+"/tasks/loud", "", nil); !strings.Contains(b, `<code>size</code>`) || !strings.Contains(b, `<span class="j-val">62</span>`) {
		t.Errorf("the panel lacks the binding size = 62:\n%s", b)
	}
	// The editor's findings quote the source: a line with markup stays text.
	src := "nika: v1\nworkflow: x\n# </script><script>alert(3)</script>\ntasks:\n  - id: a\n    bogus: 1\n"
	resp, b := c.page("POST", "/ui/check", src, map[string]string{"Content-Type": "text/yaml"})
	if resp.StatusCode != 200 || strings.Contains(b, "<script>") || !strings.Contains(b, "&lt;/script&gt;&lt;script&gt;alert(3)") {
		t.Errorf("/ui/check = %d:\n%s", resp.StatusCode, b)
	}
}

// The editor: findings at their line and column before submitting; a valid workflow with vars
// runs and the browser goes to its page; an upload is read like the text.
func TestWebNew(t *testing.T) {
	_, c := start(t, Options{})
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	bad := "nika: v1\nworkflow: bad\nmodel: mock/echo\ntasks:\n  - id: a\n    infer: { prompt: \"${{ vars.missing }}\" }\n"
	resp, b := c.page("POST", "/ui/check", bad, nil)
	if resp.StatusCode != 200 || !strings.Contains(b, `data-valid="false"`) || !strings.Contains(b, `data-line="6"`) || !strings.Contains(b, "NIKA-VAR-001") {
		t.Errorf("/ui/check of an invalid workflow = %d:\n%s", resp.StatusCode, b)
	}
	if _, b := c.page("POST", "/ui/check", helloYAML, nil); !strings.Contains(b, `data-valid="true"`) {
		t.Errorf("/ui/check of a valid workflow:\n%s", b)
	}
	enc := func(action, wf, vars string) string {
		return url.Values{"action": {action}, "workflow": {wf}, "vars": {vars}}.Encode()
	}
	if resp, b := c.page("POST", "/new", enc("check", bad, ""), form); resp.StatusCode != 200 || !strings.Contains(b, `class="finding sev-error" data-line="6"`) {
		t.Errorf("check through the form = %d:\n%s", resp.StatusCode, b)
	}
	if resp, b := c.page("POST", "/new", enc("run", bad, ""), form); resp.StatusCode != 400 || !strings.Contains(b, "NIKA-VAR-001") {
		t.Errorf("running an invalid workflow = %d:\n%s", resp.StatusCode, b)
	}
	if resp, b := c.page("POST", "/new", enc("run", helloYAML, "bogus line"), form); resp.StatusCode != 400 || !strings.Contains(b, "name=value") {
		t.Errorf("bad vars = %d:\n%s", resp.StatusCode, b)
	}
	if resp, _ := c.page("POST", "/new", enc("run", helloYAML+"#"+strings.Repeat("x", DefaultMaxBodyBytes), ""), form); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a workflow over the limit = %d, want 413", resp.StatusCode)
	}
	resp, _ = c.page("POST", "/new", enc("run", helloYAML, "name=web\n"), form)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/r-") {
		t.Fatalf("run = %d to %q", resp.StatusCode, loc)
	}
	id := strings.TrimPrefix(loc, "/runs/")
	c.events(id)
	if st := c.get(id); st.Report.Outputs["greeting"] != "Hello web" {
		t.Errorf("the run's outputs = %v", st.Report.Outputs)
	}
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	mw.WriteField("action", "run")
	mw.WriteField("workflow", "")
	fw, _ := mw.CreateFormFile("upload", "hello.nika.yaml")
	fw.Write([]byte(helloYAML))
	mw.Close()
	resp, _ = c.page("POST", "/new", mb.String(), map[string]string{"Content-Type": mw.FormDataContentType()})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload = %d", resp.StatusCode)
	}
	c.events(strings.TrimPrefix(resp.Header.Get("Location"), "/runs/"))
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ kind, data string }

// sseScanner reads a stream's lines; one per stream, as it buffers.
func sseScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	return sc
}

// readSSE reads events until the stream ends or stop says so.
func readSSE(t *testing.T, sc *bufio.Scanner, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			out = append(out, cur)
			if stop != nil && stop(cur) {
				return out
			}
			cur = sseEvent{}
		}
	}
	return out
}

func (c *client) sse(ctx context.Context, path string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.ts.URL+path, nil)
	resp, err := c.ts.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		c.t.Fatalf("GET %s = %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp
}

// The run page's stream: a task is "running" on the live stream while it runs, before any of its
// canonical events are released; then the canonical events, the run's state, and the end.
func TestWebRunStream(t *testing.T) {
	g := newGate()
	_, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}})
	id := c.submit(gatedYAML, nil)
	<-g.entered
	resp := c.sse(context.Background(), "/ui/runs/"+id+"/stream")
	defer resp.Body.Close()
	sc := sseScanner(resp.Body)
	got := readSSE(t, sc, func(e sseEvent) bool { return e.kind == "live" && strings.Contains(e.data, `"task_started"`) })
	last := got[len(got)-1]
	if !strings.Contains(last.data, `"task":"first"`) {
		t.Fatalf("the first live event = %+v", last)
	}
	g.release <- struct{}{}
	<-g.entered
	g.release <- struct{}{}
	rest := readSSE(t, sc, nil) // ends with the run
	var kinds []string
	for _, e := range rest {
		kinds = append(kinds, e.kind)
	}
	all := strings.Join(kinds, " ")
	if !strings.HasSuffix(all, "state end") || !strings.Contains(all, "canonical") {
		t.Errorf("the stream = %s", all)
	}
	if end := rest[len(rest)-1]; end.data != `"success"` {
		t.Errorf("end = %+v", end)
	}
	var canon int
	for _, e := range append(got, rest...) {
		if e.kind == "canonical" {
			canon++
			var v map[string]any
			if json.Unmarshal([]byte(e.data), &v) != nil || v["run_id"] != id {
				t.Errorf("a canonical event is not its line: %q", e.data)
			}
		}
	}
	if evs := c.events(id); canon != len(evs) {
		t.Errorf("the stream had %d canonical events, the API %d", canon, len(evs))
	}
	// A reconnecting EventSource resumes after what it had: here, nothing but the end.
	req, _ := http.NewRequest("GET", c.ts.URL+"/ui/runs/"+id+"/stream", nil)
	req.Header.Set("Last-Event-ID", "999.999")
	r2, err := c.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	if again := readSSE(t, sseScanner(r2.Body), nil); len(again) != 2 || again[0].kind != "state" || again[1].kind != "end" {
		t.Errorf("resumed stream = %+v", again)
	}
}

// The runs page's stream starts with every kept run and follows them.
func TestWebRunsStream(t *testing.T) {
	g := newGate()
	_, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := c.submit(oneGatedYAML, nil)
	<-g.entered
	resp := c.sse(ctx, "/ui/runs/stream")
	defer resp.Body.Close()
	var first runSummary
	sc := sseScanner(resp.Body)
	readSSE(t, sc, func(e sseEvent) bool {
		json.Unmarshal([]byte(e.data), &first)
		return e.kind == "run"
	})
	if first.ID != id || first.State != stateRunning || first.Tasks.Running != 1 || first.Tasks.Total != 1 {
		t.Errorf("first = %+v", first)
	}
	g.release <- struct{}{}
	var done runSummary
	readSSE(t, sc, func(e sseEvent) bool {
		json.Unmarshal([]byte(e.data), &done)
		return e.kind == "run" && done.State == stateSuccess
	})
	if done.Tasks.Success != 1 || done.Tasks.Running != 0 || done.Duration == "" {
		t.Errorf("done = %+v", done)
	}
}

// The cancel button is a form: a running run is cancelled and the browser goes back to its page.
func TestWebCancel(t *testing.T) {
	g := newGate()
	_, c := start(t, Options{Engine: engine.Options{Verbs: g.verbs}})
	id := c.submit(gatedYAML, nil)
	<-g.entered
	if _, b := c.page("GET", "/runs/"+id, "", nil); !strings.Contains(b, `id="cancel"`) || !strings.Contains(b, `class="node st-running" href=`) {
		t.Errorf("the page of a running run has no cancel button or running node:\n%s", b)
	}
	resp, _ := c.page("POST", "/runs/"+id+"/cancel", "", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs/"+id {
		t.Fatalf("cancel = %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	c.events(id)
	if st := c.get(id); st.State != stateCancelled {
		t.Errorf("state = %s", st.State)
	}
	if _, b := c.page("GET", "/runs/"+id, "", nil); strings.Contains(b, `id="cancel"`) || !strings.Contains(b, `st-cancelled`) {
		t.Errorf("the page of a cancelled run:\n%s", b)
	}
	if resp, _ := c.page("POST", "/runs/"+id+"/cancel", "", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site cancel = %d, want 403", resp.StatusCode)
	}
}

// The runs page's stream ends once the server shuts down and nothing runs, so an open page does
// not hold up the exit.
func TestWebRunsStreamEndsAtShutdown(t *testing.T) {
	s, c := start(t, Options{})
	c.events(c.submit(helloYAML, nil))
	resp := c.sse(context.Background(), "/ui/runs/stream")
	defer resp.Body.Close()
	sc := sseScanner(resp.Body)
	readSSE(t, sc, func(e sseEvent) bool { return e.kind == "run" })
	s.StopAdmitting()
	if rest := readSSE(t, sc, nil); len(rest) == 0 || rest[len(rest)-1].kind != "end" {
		t.Errorf("after StopAdmitting the stream sent %+v, want it to end", rest)
	}
}
