package tools

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

var updateFetch = flag.Bool("update-fetch", false, "rewrite the golden files under testdata/fetch")

// fixtureServer serves testdata/fetch/NAME at /NAME with the Content-Type given in ?ct=, and a
// few behaviours by path (see the handler).
func fixtureServer(t *testing.T) *hitServer {
	t.Helper()
	return newHitServer(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/echo":
			body, _ := io.ReadAll(r.Body)
			hs := map[string]any{}
			for k := range r.Header {
				hs[strings.ToLower(k)] = r.Header.Get(k)
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "host": r.Host, "headers": hs, "body": string(body)})
		case r.URL.Path == "/status":
			var code int
			fmt.Sscan(q.Get("code"), &code)
			w.Header().Set("Content-Type", q.Get("ct"))
			w.WriteHeader(code)
			io.WriteString(w, q.Get("body"))
		case r.URL.Path == "/raw":
			if ct := q.Get("ct"); ct != "" {
				w.Header().Set("Content-Type", ct)
			} else {
				w.Header()["Content-Type"] = nil // no sniffing by the server
			}
			io.WriteString(w, q.Get("body"))
		default:
			b, err := os.ReadFile(filepath.Join("testdata", "fetch", filepath.Base(r.URL.Path)))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", q.Get("ct"))
			w.Write(b)
		}
	})
}

// fetchLocal fetches from a local server with permits for 127.0.0.1.
func fetchLocal(t *testing.T, args map[string]any) (any, error) {
	t.Helper()
	return fetchWith(t, nil, netPermits("127.0.0.1"), args)
}

// golden compares got with testdata/fetch/name, or rewrites it under -update-fetch.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "fetch", name)
	if *updateFetch {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update-fetch to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// stableJSON renders a value as indented JSON with the test server's origin replaced, so the
// golden files do not depend on the port.
func stableJSON(t *testing.T, v any, origin string) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), origin, "http://server.test") + "\n"
}

func TestFetchModesGolden(t *testing.T) {
	srv := fixtureServer(t)
	for _, page := range []string{"page", "base", "latin1"} {
		ct := "text/html; charset=utf-8"
		if page == "latin1" {
			ct = "text/html; charset=ISO-8859-1"
		}
		u := srv.URL + "/docs/" + page + ".html?ct=" + url.QueryEscape(ct)
		for _, mode := range []string{"markdown", "text", "links", "metadata"} {
			t.Run(page+"/"+mode, func(t *testing.T) {
				out, err := fetchLocal(t, map[string]any{"url": u, "mode": mode})
				if err != nil {
					t.Fatal(err)
				}
				switch mode {
				case "markdown":
					s := out.(string)
					golden(t, page+".md", strings.ReplaceAll(s, srv.URL, "http://server.test")+"\n")
				case "text":
					golden(t, page+".txt", out.(string)+"\n")
				default:
					golden(t, page+"."+mode+".json", stableJSON(t, out, srv.URL))
				}
			})
		}
	}
}

func TestFetchNonHTMLAsIs(t *testing.T) {
	srv := fixtureServer(t)
	body := "  # not html\n<b>kept</b>\n"
	for _, ct := range []string{"text/plain; charset=utf-8", "application/json", "text/markdown"} {
		for _, mode := range []string{"markdown", "text"} {
			u := srv.URL + "/raw?ct=" + url.QueryEscape(ct) + "&body=" + url.QueryEscape(body)
			out, err := fetchLocal(t, map[string]any{"url": u, "mode": mode})
			if err != nil || out != body {
				t.Errorf("%s %s: %q, %v; want the body as is", ct, mode, out, err)
			}
		}
	}
	// Without a Content-Type, HTML is sniffed.
	u := srv.URL + "/raw?body=" + url.QueryEscape("<!DOCTYPE html><p>sniffed <b>html</b></p>")
	if out, err := fetchLocal(t, map[string]any{"url": u}); err != nil || out != "sniffed **html**" {
		t.Errorf("sniffed HTML: %q, %v", out, err)
	}
	u = srv.URL + "/raw?ct=text/plain&body=" + url.QueryEscape("<a href='/x'>x</a>")
	if out, err := fetchLocal(t, map[string]any{"url": u, "mode": "links"}); err != nil || !reflect.DeepEqual(out, []any{}) {
		t.Errorf("links of a text body: %v, %v; want []", out, err)
	}
}

func TestFetchCharset(t *testing.T) {
	srv := fixtureServer(t)
	cases := []struct {
		ct, body, want string
	}{
		{"text/plain; charset=ISO-8859-1", "caf\xe9 \x80", "café €"}, // WHATWG: latin1 is windows-1252
		{"text/plain; charset=windows-1252", "\x93q\x94", "“q”"},
		{"text/plain; charset=\"utf-8\"", "\xef\xbb\xbfbom", "bom"},
		{"text/plain", "\xef\xbb\xbfdefault \xff", "default \uFFFD"},
		{"text/plain; charset=no-such-charset", "plain é", "plain é"},
		{"text/plain; charset=shift_jis", "\x93\xfa\x96\x7b", "日本"},
	}
	for _, c := range cases {
		u := srv.URL + "/raw?ct=" + url.QueryEscape(c.ct) + "&body=" + url.QueryEscape(c.body)
		out, err := fetchLocal(t, map[string]any{"url": u, "mode": "text"})
		if err != nil || out != c.want {
			t.Errorf("%s: %q, %v; want %q", c.ct, out, err, c.want)
		}
	}
}

func TestFetchMaxBytes(t *testing.T) {
	srv := fixtureServer(t)
	body := strings.Repeat("x", 100)
	u := srv.URL + "/raw?ct=text/plain&body=" + body
	if out, err := fetchLocal(t, map[string]any{"url": u, "max_bytes": 100}); err != nil || out != body {
		t.Fatalf("exactly max_bytes: %v", err)
	}
	_, err := fetchLocal(t, map[string]any{"url": u, "max_bytes": 99})
	se := spErr(t, err)
	if se.Code != codeFetchBody || se.Transient || se.Category != "tool_error" || se.Details["max_bytes"] != int64(99) {
		t.Fatalf("over max_bytes: %v %v, want FETCH-003 with max_bytes", err, se.Details)
	}
}

func TestFetchStatus(t *testing.T) {
	srv := fixtureServer(t)
	long := strings.Repeat("é", 600) // 1200 bytes: the excerpt must cut at a character boundary
	cases := []struct {
		code      int
		transient bool
	}{
		{400, false}, {401, false}, {404, false}, {408, true}, {429, true}, {500, true}, {502, true}, {503, true}, {304, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.code), func(t *testing.T) {
			u := fmt.Sprintf("%s/status?code=%d&ct=%s&body=%s", srv.URL, c.code, url.QueryEscape("text/plain; charset=utf-8"), url.QueryEscape(long))
			_, err := fetchLocal(t, map[string]any{"url": u})
			se := spErr(t, err)
			if se.Code != codeFetchStatus || se.Transient != c.transient || se.Category != "network_error" {
				t.Fatalf("%v (transient %v), want FETCH-001 transient %v", err, se.Transient, c.transient)
			}
			if se.Details["status"] != c.code || se.Details["url"] != u {
				t.Errorf("details %v", se.Details)
			}
			ex, _ := se.Details["body_excerpt"].(string)
			if c.code != 304 && (len(ex) != 1024 || !utf8.ValidString(ex) || !strings.HasPrefix(long, ex)) {
				t.Errorf("body_excerpt of %d bytes (valid %v), want the first 1024 bytes", len(ex), utf8.ValidString(ex))
			}
			if !strings.Contains(se.Message, fmt.Sprintf("returned %d", c.code)) {
				t.Errorf("message %q", se.Message)
			}
		})
	}
}

func TestFetchJQ(t *testing.T) {
	srv := fixtureServer(t)
	jsonURL := func(ct, body string) string {
		return srv.URL + "/raw?ct=" + url.QueryEscape(ct) + "&body=" + url.QueryEscape(body)
	}
	doc := `{"items":[{"n":1},{"n":2},{"n":3}],"name":"x"}`
	cases := []struct {
		name, url, jq string
		want          any
		code          string
	}{
		{"one value", jsonURL("application/json", doc), ".items | length", 3, ""},
		{"any content type", jsonURL("text/html", doc), "[.items[].n]", []any{1, 2, 3}, ""},
		{"object", jsonURL("application/json", doc), "{name}", map[string]any{"name": "x"}, ""},
		{"not JSON", jsonURL("application/json", "{bad"), ".", nil, codeFetchBody},
		{"trailing data", jsonURL("application/json", "{} {}"), ".", nil, codeFetchBody},
		{"runtime error", jsonURL("application/json", doc), `error("boom")`, nil, codeFetchBody},
		{"several values", jsonURL("application/json", doc), ".items[]", nil, codeFetchBody},
		{"no value", jsonURL("application/json", doc), "empty", nil, codeFetchBody},
		{"compile error", jsonURL("application/json", doc), ".a |", nil, "NIKA-BUILTIN-JQ-001"},
		{"impure program", jsonURL("application/json", doc), "now", nil, "NIKA-BUILTIN-JQ-001"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := fetchLocal(t, map[string]any{"url": c.url, "mode": "jq", "jq": c.jq})
			if c.code == "" {
				if err != nil || !reflect.DeepEqual(out, c.want) {
					t.Fatalf("%#v, %v; want %#v", out, err, c.want)
				}
				return
			}
			se := spErr(t, err)
			if se.Code != c.code || se.Transient {
				t.Fatalf("%v, want %s, not transient", err, c.code)
			}
		})
	}
}

func TestFetchArgumentContract(t *testing.T) {
	u := "http://127.0.0.1:9/"
	cases := []struct {
		name string
		args map[string]any
		msg  string
	}{
		{"mode jq without jq", map[string]any{"url": u, "mode": "jq"}, "requires `jq`"},
		{"jq without mode jq", map[string]any{"url": u, "jq": "."}, "only allowed with mode `jq`"},
		{"mode selector without selector", map[string]any{"url": u, "mode": "selector"}, "requires `selector`"},
		{"bad selector", map[string]any{"url": u, "mode": "selector", "selector": "p >"}, "not a valid CSS selector"},
		{"empty selector", map[string]any{"url": u, "mode": "selector", "selector": ""}, "/selector"},
		{"selector not a string", map[string]any{"url": u, "mode": "selector", "selector": []any{"p"}}, "/selector"},
		{"jq with mode selector", map[string]any{"url": u, "mode": "selector", "selector": "p", "jq": "."}, "only allowed with mode `jq`"},
		{"mode feed", map[string]any{"url": u, "mode": "feed"}, "/mode"},
		{"mode sitemap", map[string]any{"url": u, "mode": "sitemap"}, "/mode"},
		{"selector argument", map[string]any{"url": u, "selector": "p"}, "selector"},
		{"ftp scheme", map[string]any{"url": "ftp://example.com/"}, "url"},
		{"no host", map[string]any{"url": "http:///x"}, "url"},
		{"bad method", map[string]any{"url": u, "method": "TRACE"}, "/method"},
		{"bad timeout", map[string]any{"url": u, "timeout": "soon"}, "timeout"},
		{"max_bytes 0", map[string]any{"url": u, "max_bytes": 0}, "max_bytes"},
		{"header not a string", map[string]any{"url": u, "headers": map[string]any{"X": 1}}, "headers"},
		{"header value with a newline", map[string]any{"url": u, "headers": map[string]any{"X": "a\r\nInjected: 1"}}, "headers"},
		{"header name not a token", map[string]any{"url": u, "headers": map[string]any{"X Y": "a"}}, "headers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := fetchWith(t, nil, nil, c.args)
			se := spErr(t, err)
			if se.Code != codeArgs {
				t.Fatalf("%v, want %s", err, codeArgs)
			}
			if !strings.Contains(se.Message+" "+renderDetails(se.Details), c.msg) {
				t.Errorf("%v (details %v) does not mention %q", err, se.Details, c.msg)
			}
		})
	}
}

func TestFetchRequestBuilding(t *testing.T) {
	srv := fixtureServer(t)
	cases := []struct {
		name        string
		args        map[string]any
		method      string
		body        string
		contentType string
		headers     map[string]string
	}{
		{"GET defaults", map[string]any{}, "GET", "", "", map[string]string{"user-agent": "nika"}},
		{"string body verbatim", map[string]any{"method": "POST", "body": "a=1&b={x}"}, "POST", "a=1&b={x}", "", nil},
		{"bytes body verbatim", map[string]any{"method": "PUT", "body": []byte{0xff, 'z'}}, "PUT", "\xffz", "", nil},
		{"object body canonical JSON", map[string]any{"method": "PATCH", "body": map[string]any{"b": 1.5, "a": []any{true, nil}}}, "PATCH", `{"a":[true,null],"b":1.5}`, "application/json", nil},
		{"content type kept", map[string]any{"method": "POST", "body": []any{1}, "headers": map[string]any{"content-type": "application/vnd.x+json"}}, "POST", `[1]`, "application/vnd.x+json", nil},
		{"null body is JSON", map[string]any{"method": "DELETE", "body": nil}, "DELETE", "null", "application/json", nil},
		{"headers", map[string]any{"headers": map[string]any{"X-Token": "t", "User-Agent": "mine", "Host": "virtual.test"}}, "GET", "", "", map[string]string{"x-token": "t", "user-agent": "mine"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"url": srv.URL + "/echo", "mode": "jq", "jq": "."}
			for k, v := range c.args {
				args[k] = v
			}
			out, err := fetchLocal(t, args)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(map[string]any)
			hs := got["headers"].(map[string]any)
			if got["method"] != c.method || got["body"] != strings.ToValidUTF8(c.body, "\uFFFD") {
				t.Errorf("method %v body %q, want %s %q", got["method"], got["body"], c.method, c.body)
			}
			if ct, _ := hs["content-type"].(string); ct != c.contentType {
				t.Errorf("Content-Type %q, want %q", ct, c.contentType)
			}
			for k, v := range c.headers {
				if hs[k] != v {
					t.Errorf("header %s = %v, want %s", k, hs[k], v)
				}
			}
			if hs, _ := c.args["headers"].(map[string]any); hs["Host"] != nil && got["host"] != "virtual.test" {
				t.Errorf("Host %v, want virtual.test", got["host"])
			}
		})
	}
}

func TestFetchBinary(t *testing.T) {
	srv := fixtureServer(t)
	cases := []struct{ ct, body string }{
		{"image/png", "\x89PNG\r\n"},
		{"application/octet-stream", "plain bytes"},
		{"application/pdf", "%PDF-1.7"},
		{"text/plain", "nul\x00inside"},
		{"", "\x00\x01\x02"},
	}
	for _, c := range cases {
		for _, mode := range []string{"markdown", "text", "links", "metadata"} {
			u := srv.URL + "/raw?ct=" + url.QueryEscape(c.ct) + "&body=" + url.QueryEscape(c.body)
			_, err := fetchLocal(t, map[string]any{"url": u, "mode": mode})
			if se := spErr(t, err); se.Code != codeFetchBody || se.Transient {
				t.Errorf("%s in %s: %v, want FETCH-003", c.ct, mode, err)
			}
		}
	}
	// SVG is XML text, not an image to refuse.
	u := srv.URL + "/raw?ct=image/svg%2Bxml&body=" + url.QueryEscape("<svg/>")
	if _, err := fetchLocal(t, map[string]any{"url": u, "mode": "text"}); err != nil {
		t.Errorf("svg: %v", err)
	}
}

func TestFetchHEAD(t *testing.T) {
	srv := fixtureServer(t)
	u := srv.URL + "/raw?ct=" + url.QueryEscape("text/plain; charset=utf-8") + "&body=hello"
	out, err := fetchLocal(t, map[string]any{"url": u, "method": "HEAD"})
	if err != nil {
		t.Fatal(err)
	}
	m := out.(map[string]any)
	if m["url"] != u || m["status"] != 200 || m["content_type"] != "text/plain; charset=utf-8" || m["content_length"] != 5 {
		t.Fatalf("HEAD output %v", m)
	}
	if hs := m["headers"].(map[string]any); hs["content-length"] != "5" {
		t.Fatalf("headers %v", hs)
	}
	out, err = fetchLocal(t, map[string]any{"url": u, "method": "HEAD", "mode": "jq", "jq": ".headers[\"content-type\"]"})
	if err != nil || out != "text/plain; charset=utf-8" {
		t.Fatalf("HEAD jq: %v, %v", out, err)
	}
}

func TestFetchTransportFailures(t *testing.T) {
	// A port with nothing listening: connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = fetchLocal(t, map[string]any{"url": "http://" + addr + "/"})
	if se := spErr(t, err); se.Code != codeFetchTransport || !se.Transient || se.Category != "network_error" {
		t.Fatalf("refused connection: %v, want a transient FETCH-002", err)
	}

	// The timeout: the handler holds the request until the client gives up.
	started := make(chan struct{}, 1)
	slow := newHitServer(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	})
	_, err = fetchLocal(t, map[string]any{"url": slow.URL, "timeout": "50ms"})
	se := spErr(t, err)
	if se.Code != codeFetchTransport || !se.Transient || !strings.Contains(se.Message, "timed out after 50ms") {
		t.Fatalf("timeout: %v, want a transient FETCH-002 that says it timed out", err)
	}
	<-started

	// The timeout covers the whole chain: a redirect to the slow handler times out too.
	hop := newHitServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, slow.URL, http.StatusFound)
	})
	_, err = fetchLocal(t, map[string]any{"url": hop.URL, "timeout": "50ms"})
	if se := spErr(t, err); se.Code != codeFetchTransport || !strings.Contains(se.Message, "timed out") {
		t.Fatalf("timeout after a redirect: %v", err)
	}
	<-started

	// The caller's cancellation is a cancellation, not a network error.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		b := NewBuiltins()
		_, err := b.Execute(ctx, Call{Name: "nika:fetch", Args: map[string]any{"url": slow.URL}, Permits: netPermits("127.0.0.1")})
		done <- err
	}()
	<-started
	cancel()
	if se := spErr(t, <-done); se.Code != codeCancelled {
		t.Fatalf("cancelled: %v, want %s", se, codeCancelled)
	}
}

// The golden page's Markdown and text hold what matters, checked by property too: nothing
// from dropped elements leaks, and every link is absolute.
func TestFetchMarkdownProperties(t *testing.T) {
	srv := fixtureServer(t)
	u := srv.URL + "/docs/page.html?ct=text/html"
	md, err := fetchLocal(t, map[string]any{"url": u, "mode": "markdown"})
	if err != nil {
		t.Fatal(err)
	}
	txt, err := fetchLocal(t, map[string]any{"url": u, "mode": "text"})
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"script text", "color: red", "Enable JavaScript", "frame text", "svg text", "Hidden paragraph"} {
		if strings.Contains(md.(string), leak) || strings.Contains(txt.(string), leak) {
			t.Errorf("%q leaked into the output", leak)
		}
	}
	if strings.Contains(md.(string), "](/") {
		t.Error("a relative link survived")
	}
}

// The schema admits an integral float as an integer (an expression may compute 100.0), so the
// runtime must take it as that integer, as nika:edit's count does.
func TestFetchMaxBytesIntegralFloat(t *testing.T) {
	srv := fixtureServer(t)
	body := strings.Repeat("x", 100)
	u := srv.URL + "/raw?ct=text/plain&body=" + body
	if out, err := fetchLocal(t, map[string]any{"url": u, "max_bytes": 100.0}); err != nil || out != body {
		t.Fatalf("max_bytes 100.0: %v, %v", out, err)
	}
	_, err := fetchLocal(t, map[string]any{"url": u, "max_bytes": 99.0})
	if se := spErr(t, err); se.Code != codeFetchBody {
		t.Fatalf("max_bytes 99.0: %v, want FETCH-003", err)
	}
}
