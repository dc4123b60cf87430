package tools

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// Modes article and selector (LANGUAGE.md §7.5), through nika:fetch: the same request, floor,
// permits and max_bytes as the other modes, then tools/htmltext's Article and Select.

func TestFetchArticleGolden(t *testing.T) {
	srv := fixtureServer(t)
	out, err := fetchLocal(t, map[string]any{"url": srv.URL + "/blog/2026/article.html?ct=" + url.QueryEscape("text/html; charset=utf-8"), "mode": "article"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "article.article.md", strings.ReplaceAll(out.(string), srv.URL, "http://server.test")+"\n")
}

func TestFetchArticle(t *testing.T) {
	srv := fixtureServer(t)
	html := "text/html; charset=utf-8"
	page := srv.URL + "/blog/2026/article.html?ct="
	cases := []struct {
		name string
		url  string
		args map[string]any
		want []string // substrings, in order; nil with code: an error
		not  []string
		code string
	}{
		{name: "good page: title, content, links against <base>", url: page + url.QueryEscape(html),
			want: []string{"# Retries that do not hurt\n\nA workflow step", "```yaml\n- id: rates", "[retry guide](" + srv.URL + "/docs/retries.html)", "the whole point of retrying"},
			not:  []string{"Popular posts", "conference tickets", "3 comments", "Privacy", "Log in", "window.track"}},
		{name: "sniffed HTML without a Content-Type", url: srv.URL + "/raw?body=" + url.QueryEscape("<!DOCTYPE html><title>Sniffed page title here</title><p>"+strings.Repeat("Some text. ", 60)+"</p>"),
			want: []string{"# Sniffed page title here\n\nSome text."}},
		{name: "a page with no readable content is empty", url: srv.URL + "/raw?ct=text/html&body=" + url.QueryEscape("<html><body><div></div></body></html>"), want: []string{}},
		{name: "non-HTML text as is", url: srv.URL + "/raw?ct=text/plain&body=" + url.QueryEscape("  plain <b>text</b>\n"), want: []string{"  plain <b>text</b>\n"}},
		{name: "binary body refused", url: srv.URL + "/raw?ct=image/png&body=" + url.QueryEscape("\x89PNG"), code: codeFetchBody},
		{name: "body over max_bytes refused before parsing", url: page + url.QueryEscape(html), args: map[string]any{"max_bytes": 1000}, code: codeFetchBody},
		{name: "non-2xx", url: srv.URL + "/status?code=404&ct=text/html&body=gone", code: codeFetchStatus},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"url": c.url, "mode": "article"}
			for k, v := range c.args {
				args[k] = v
			}
			out, err := fetchLocal(t, args)
			if c.code != "" {
				if se := spErr(t, err); se.Code != c.code {
					t.Fatalf("%v, want %s", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(string)
			if len(c.want) == 0 && got != "" {
				t.Fatalf("got %q, want \"\"", got)
			}
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q missing (or out of order) in:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("%q should not be in:\n%s", n, got)
				}
			}
		})
	}
}

func TestFetchSelector(t *testing.T) {
	srv := fixtureServer(t)
	page := srv.URL + "/docs/page.html?ct=" + url.QueryEscape("text/html; charset=utf-8")
	cases := []struct {
		name string
		url  string
		args map[string]any
		want []any
		code string
		msg  string
	}{
		{name: "good page", url: page, args: map[string]any{"selector": "h2, ol > li"}, want: []any{"Tasks", "third", "fourth"}},
		{name: "element text as mode text renders it", url: page, args: map[string]any{"selector": "h1, tbody tr:last-child, pre"},
			want: []any{"The Nika Handbook", "tasks:\n  hello:\n    exec: echo hi", "invoke\tcall a tool"}},
		{name: "attribute selector", url: page, args: map[string]any{"selector": `a[href^="https:"]`}, want: []any{"spec", "About [us]"}},
		{name: "no match", url: page, args: map[string]any{"selector": "article.post h3"}, want: []any{}},
		{name: "latin-1 page decoded", url: srv.URL + "/docs/latin1.html?ct=" + url.QueryEscape("text/html; charset=ISO-8859-1"), args: map[string]any{"selector": "title"}, want: []any{"Café"}},
		{name: "non-HTML body", url: srv.URL + "/raw?ct=application/json&body=" + url.QueryEscape(`{"h2":"x"}`), args: map[string]any{"selector": "h2"}, want: []any{}},
		{name: "bad selector", url: page, args: map[string]any{"selector": "h2 >"}, code: codeArgs, msg: "not a valid CSS selector"},
		{name: "pseudo-element", url: page, args: map[string]any{"selector": "p::first-line"}, code: codeArgs, msg: "pseudo-element"},
		{name: "missing selector", url: page, code: codeArgs, msg: "mode `selector` requires `selector`"},
		{name: "selector in another mode", url: page, args: map[string]any{"selector": "h2", "mode": "text"}, code: codeArgs, msg: "only allowed with mode `selector`"},
		{name: "binary body", url: srv.URL + "/raw?ct=application/pdf&body=%25PDF", args: map[string]any{"selector": "p"}, code: codeFetchBody},
		{name: "body over max_bytes", url: page, args: map[string]any{"selector": "p", "max_bytes": 512}, code: codeFetchBody, msg: "larger than max_bytes"},
		{name: "matches' text over max_bytes", url: srv.URL + "/raw?ct=text/html&body=" + url.QueryEscape(strings.Repeat("<div>", 200)+strings.Repeat("words ", 100)),
			args: map[string]any{"selector": "div", "max_bytes": 4000}, code: codeFetchBody, msg: "matched by `selector`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"url": c.url, "mode": "selector"}
			for k, v := range c.args {
				args[k] = v
			}
			out, err := fetchLocal(t, args)
			if c.code != "" {
				se := spErr(t, err)
				if se.Code != c.code || se.Transient || !strings.Contains(se.Error(), c.msg) {
					t.Fatalf("%v, want %s with %q", err, c.code, c.msg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(out, c.want) {
				t.Fatalf("got %#v, %v; want %#v", out, err, c.want)
			}
		})
	}
}

// The new modes go through the same floor: a redirect to a refused address stops at the hop,
// and a permitted redirect converts the final page, links resolved against the final URL.
func TestFetchModesRedirectsUnderTheFloor(t *testing.T) {
	target := fixtureServer(t)
	res := newResolver(map[string][]string{
		"origin.test":    {"127.0.0.1"},
		"pages.test":     {"127.0.0.1"},
		"internal.test":  {"127.0.0.1"},
		"evil.wild.test": {"127.0.0.1"},
	})
	var to atomic.Value
	origin := newHitServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to.Load().(string), http.StatusFound)
	})
	permits := netPermits("origin.test", "pages.test", "*.wild.test")
	modes := []map[string]any{{"mode": "article"}, {"mode": "selector", "selector": "h2"}}
	for _, m := range modes {
		mode := m["mode"].(string)
		t.Run(mode, func(t *testing.T) {
			args := map[string]any{"url": origin.at("origin.test", "/start")}
			for k, v := range m {
				args[k] = v
			}
			for _, c := range []struct{ to, code string }{
				{target.at("internal.test", "/docs/page.html?ct=text/html"), codePermits}, // outside permits.net.http
				{target.at("evil.wild.test", "/docs/page.html?ct=text/html"), codeSSRF},   // a wildcard entry never lifts the floor
			} {
				to.Store(c.to)
				before := target.hits.Load()
				_, err := fetchWith(t, res, permits, args)
				if se := spErr(t, err); se.Code != c.code {
					t.Errorf("redirect to %s: %v, want %s", c.to, err, c.code)
				}
				if target.hits.Load() != before {
					t.Errorf("the refused hop reached its server")
				}
			}
			to.Store(target.at("pages.test", "/blog/2026/article.html?ct=text/html"))
			out, err := fetchWith(t, res, permits, args)
			if err != nil {
				t.Fatal(err)
			}
			switch mode {
			case "article":
				if want := "(http://pages.test:" + target.port + "/docs/retries.html)"; !strings.Contains(out.(string), want) {
					t.Errorf("article links not resolved against the final URL (%s):\n%s", want, out)
				}
			default:
				if want := []any{"Back off, with jitter", "Make the step idempotent"}; !reflect.DeepEqual(out, want) {
					t.Errorf("selector: %#v, want %#v", out, want)
				}
			}
		})
	}
}

// A cancelled call stops with the cancellation code, whatever the mode.
func TestFetchSelectorCancelled(t *testing.T) {
	srv := fixtureServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := NewBuiltins()
	_, err := b.Execute(ctx, Call{Name: "nika:fetch", Permits: netPermits("127.0.0.1"),
		Args: map[string]any{"url": srv.URL + "/docs/page.html?ct=text/html", "mode": "selector", "selector": "p"}})
	if se := spErr(t, err); se.Code != codeCancelled {
		t.Fatalf("%v, want %s", err, codeCancelled)
	}
}
