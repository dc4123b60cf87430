package tools

import (
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nikahq/nika/spec"
)

// webhook is a test webhook that records what it received and answers with status.
type webhook struct {
	*hitServer
	mu          sync.Mutex
	method      string
	contentType string
	body        string
}

func newWebhook(t *testing.T, status int) *webhook {
	t.Helper()
	w := &webhook{}
	w.hitServer = newHitServer(t, func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.method, w.contentType, w.body = r.Method, r.Header.Get("Content-Type"), string(b)
		w.mu.Unlock()
		if status >= 300 && status < 400 {
			rw.Header().Set("Location", "/elsewhere")
		}
		rw.WriteHeader(status)
		io.WriteString(rw, strings.Repeat("ü", 700))
	})
	return w
}

func notifyCall(target string, args map[string]any, permits *spec.Permits) Call {
	a := map[string]any{"channel": "webhook", "target": target, "message": "deploy finished"}
	for k, v := range args {
		a[k] = v
	}
	return Call{Name: "nika:notify", Args: a, Permits: permits,
		Now: func() time.Time { return time.Date(2026, 6, 13, 11, 30, 0, 5e6, time.FixedZone("CEST", 2*3600)) }}
}

func TestNotifyWebhookBody(t *testing.T) {
	cases := []struct {
		name string
		call func(target string) Call
		want string
	}{
		{"every field", func(target string) Call {
			c := notifyCall(target, map[string]any{"severity": "critical", "data": map[string]any{"z": []any{1, "é"}, "a": nil}}, netPermits("127.0.0.1"))
			c.Workflow, c.Task = "release", "announce"
			return c
		}, `{"data":{"a":null,"z":[1,"é"]},"message":"deploy finished","severity":"critical","task":"announce","timestamp":"2026-06-13T09:30:00.005Z","workflow":"release"}`},
		{"defaults", func(target string) Call {
			return notifyCall(target, nil, netPermits("127.0.0.1"))
		}, `{"data":null,"message":"deploy finished","severity":"info","task":null,"timestamp":"2026-06-13T09:30:00.005Z","workflow":null}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hook := newWebhook(t, http.StatusAccepted)
			out, err := NewBuiltins().Execute(context.Background(), c.call(hook.URL+"/hook"))
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]any{"delivered": true, "status": 202}; !reflect.DeepEqual(out, want) {
				t.Fatalf("output %v, want %v", out, want)
			}
			hook.mu.Lock()
			defer hook.mu.Unlock()
			if hook.method != http.MethodPost || hook.contentType != "application/json" {
				t.Errorf("request %s with Content-Type %q, want POST application/json", hook.method, hook.contentType)
			}
			if hook.body != c.want {
				t.Errorf("body\n got %s\nwant %s", hook.body, c.want)
			}
		})
	}
}

func TestNotifyFailures(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/hook"
	closed.Close()

	cases := []struct {
		name      string
		status    int    // the webhook's answer; 0 for no webhook
		target    string // when status is 0
		permits   *spec.Permits
		args      map[string]any
		code      string
		transient bool
	}{
		{"500", 500, "", netPermits("127.0.0.1"), nil, codeNotify, true},
		{"503", 503, "", netPermits("127.0.0.1"), nil, codeNotify, true},
		{"408", 408, "", netPermits("127.0.0.1"), nil, codeNotify, true},
		{"429", 429, "", netPermits("127.0.0.1"), nil, codeNotify, true},
		{"404", 404, "", netPermits("127.0.0.1"), nil, codeNotify, false},
		{"400", 400, "", netPermits("127.0.0.1"), nil, codeNotify, false},
		{"redirect not followed", 307, "", netPermits("127.0.0.1"), nil, codeNotify, false},
		{"connection refused", 0, closedURL, netPermits("127.0.0.1"), nil, codeNotify, true},
		{"DNS failure", 0, "http://missing.test/hook", nil, nil, codeNotify, true},
		{"SSRF floor", 200, "", nil, nil, codeSSRF, false},
		{"outside permits.net.http", 200, "", netPermits("hooks.example.com"), nil, codePermits, false},
		{"unsupported channel", 200, "", netPermits("127.0.0.1"), map[string]any{"channel": "slack"}, codeArgs, false},
		{"bad severity", 200, "", netPermits("127.0.0.1"), map[string]any{"severity": "loud"}, codeArgs, false},
		{"empty message", 200, "", netPermits("127.0.0.1"), map[string]any{"message": ""}, codeArgs, false},
		{"target not http", 200, "", netPermits("127.0.0.1"), map[string]any{"target": "file:///etc/passwd"}, codeArgs, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := c.target
			var hook *webhook
			if c.status != 0 {
				hook = newWebhook(t, c.status)
				target = hook.URL + "/hook"
			}
			b := NewBuiltins()
			b.Resolver = newResolver(nil)
			_, err := b.Execute(context.Background(), notifyCall(target, c.args, c.permits))
			se := spErr(t, err)
			if se.Code != c.code || se.Transient != c.transient {
				t.Fatalf("%v (transient %v), want %s transient %v", err, se.Transient, c.code, c.transient)
			}
			if c.code == codeNotify && se.Category != "network_error" {
				t.Errorf("category %s", se.Category)
			}
			if c.code == codeNotify && c.status != 0 {
				ex, _ := se.Details["body_excerpt"].(string)
				if se.Details["status"] != c.status || len(ex) > 1024 || len(ex) < 1023 || !strings.HasPrefix(strings.Repeat("ü", 700), ex) {
					t.Errorf("details %v", se.Details)
				}
			}
			if hook != nil && c.code != codeNotify && hook.hits.Load() != 0 {
				t.Errorf("a refused notification reached the webhook")
			}
			if hook != nil && c.status == 307 && hook.hits.Load() != 1 {
				t.Errorf("%d requests; the redirect must not be followed", hook.hits.Load())
			}
		})
	}
}
