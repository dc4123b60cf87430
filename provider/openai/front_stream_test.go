package openai_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/openai"
)

// TestFrontStreamsThroughRealConstruction builds the provider as the engine does
// (provider.ConfigFromEnv, provider.NewHTTPClient, openai.New, provider.NewFront): a Front's
// CompleteStream streams over it, and NIKA_OPENAI_STREAM=0 makes it send plain requests, the reply
// then told to the observer whole. A wrapper that hid the adapter's StreamAdapter would fail here.
func TestFrontStreamsThroughRealConstruction(t *testing.T) {
	var mu sync.Mutex
	var asked []bool // whether each request asked for a stream
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		streamed := strings.Contains(string(b), `"stream":true`)
		mu.Lock()
		asked = append(asked, streamed)
		mu.Unlock()
		if !streamed {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"message":{"content":"Hello there."},"finish_reason":"stop"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{"Hello", " there."} {
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"`+d+`"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		stream string
		deltas []string
		asked  bool
	}{
		{"", []string{"Hello", " there."}, true},
		{"1", []string{"Hello", " there."}, true},
		{"0", []string{"Hello there."}, false},
	} {
		env := map[string]string{"NIKA_OPENAI_API_KEY": "sk-test", "NIKA_OPENAI_BASE_URL": srv.URL + "/v1", "NIKA_OPENAI_STREAM": tc.stream}
		lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		cfg, err := provider.ConfigFromEnv("openai", lookup)
		if err != nil {
			t.Fatal(err)
		}
		prof, _ := openai.Lookup("openai")
		a, err := openai.New(prof, lookup, provider.NewHTTPClient(cfg.MaxLimit))
		if err != nil {
			t.Fatal(err)
		}
		var deltas []string
		o := provider.Stream(context.Background(), provider.NewFront("openai", a, cfg),
			provider.Request{Model: "openai/gpt-4o", Messages: []provider.Message{provider.UserText("hi")}},
			&provider.StreamObserver{OnText: func(d string) { deltas = append(deltas, d) }})
		if o.Err != nil || provider.Text(o.Response.Message) != "Hello there." {
			t.Fatalf("STREAM=%q: outcome %+v %v", tc.stream, o.Response, o.Err)
		}
		mu.Lock()
		last := asked[len(asked)-1]
		mu.Unlock()
		if !slices.Equal(deltas, tc.deltas) || last != tc.asked {
			t.Errorf("STREAM=%q: deltas %q, asked for a stream %v; want %q, %v", tc.stream, deltas, last, tc.deltas, tc.asked)
		}
	}
}
