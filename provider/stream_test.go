package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/spec"
)

// streamAdapter is a fake StreamAdapter: plain answers Exchange, stream answers ExchangeStream.
type streamAdapter struct {
	plain  func(ctx context.Context, req Request) Outcome
	stream func(ctx context.Context, req Request, obs *StreamObserver) Outcome
}

func (a streamAdapter) Exchange(ctx context.Context, req Request) Outcome { return a.plain(ctx, req) }
func (a streamAdapter) ExchangeStream(ctx context.Context, req Request, obs *StreamObserver) Outcome {
	return a.stream(ctx, req, obs)
}

// recorder is a StreamObserver that writes what it hears as lines: "text <delta>", "call <index>
// <id> <name> <input>", "restart <send> <reason>".
type recorder struct{ lines []string }

func (r *recorder) observer() *StreamObserver {
	return &StreamObserver{
		OnText: func(d string) { r.lines = append(r.lines, "text "+d) },
		OnToolCall: func(c StreamCall) {
			r.lines = append(r.lines, fmt.Sprintf("call %d %s %s %s", c.Index, c.Block.ID, c.Block.Name, c.Block.Input))
		},
		OnRestart: func(send int, cause *spec.Error) {
			r.lines = append(r.lines, fmt.Sprintf("restart %d %s", send, ReasonOf(cause)))
		},
	}
}

func twoCalls() Outcome {
	return Outcome{Response: &Response{Message: Message{Role: RoleAssistant, Blocks: []Block{
		TextBlock("Reading both."),
		ToolUseBlock("c1", "nika:read", json.RawMessage(`{"path":"a"}`)),
		ToolUseBlock("c2", "nika:read", json.RawMessage(`{"path":"b"}`)),
	}}, StopReason: StopToolUse, Usage: Usage{InputTokens: 10, OutputTokens: 5, Reported: true}}}
}

func TestFrontCompleteStreamPassesThroughAndCompletes(t *testing.T) {
	defer goleak.VerifyNone(t)
	final := twoCalls()
	var plain atomic.Int64
	a := streamAdapter{
		plain: func(context.Context, Request) Outcome { plain.Add(1); return final },
		stream: func(_ context.Context, _ Request, obs *StreamObserver) Outcome {
			obs.Text("Reading ")
			obs.ToolCall(StreamCall{Index: 1, Block: final.Response.Message.Blocks[2]}) // out of order
			obs.ToolCall(StreamCall{Index: 1, Block: final.Response.Message.Blocks[2]}) // repeated: dropped
			return final                                                                // "both." and call 0 were not streamed
		},
	}
	rec := &recorder{}
	o := NewFront("fake", a, FrontConfig{}).CompleteStream(context.Background(), req("a"), rec.observer())
	if o.Err != nil || !reflect.DeepEqual(o, final) {
		t.Fatalf("outcome = %+v, want the adapter's", o)
	}
	want := []string{
		"text Reading ",
		`call 1 c2 nika:read {"path":"b"}`,
		"text both.",
		`call 0 c1 nika:read {"path":"a"}`,
	}
	if !slices.Equal(rec.lines, want) {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(rec.lines, "\n"), strings.Join(want, "\n"))
	}
	if plain.Load() != 0 {
		t.Errorf("Exchange called %d times, want 0 (the adapter streams)", plain.Load())
	}
}

func TestFrontCompleteStreamRestartsOnTransientFailure(t *testing.T) {
	final := twoCalls()
	var sends atomic.Int64
	a := streamAdapter{
		plain: func(context.Context, Request) Outcome { t.Error("Exchange called"); return final },
		stream: func(_ context.Context, _ Request, obs *StreamObserver) Outcome {
			obs.Text("Reading both.")
			obs.ToolCall(StreamCall{Index: 0, Block: final.Response.Message.Blocks[1]})
			if sends.Add(1) == 1 { // the stream is cut in the second call
				return failWith(200, ReasonNetwork, 0)
			}
			obs.ToolCall(StreamCall{Index: 1, Block: final.Response.Message.Blocks[2]})
			return final
		},
	}
	sl := &sleepRecorder{}
	rec := &recorder{}
	o := NewFront("fake", a, FrontConfig{Sleep: sl.Sleep}).CompleteStream(context.Background(), req("a"), rec.observer())
	if o.Err != nil || !reflect.DeepEqual(o, final) {
		t.Fatalf("outcome = %+v, want the second send's", o)
	}
	want := []string{
		"text Reading both.",
		`call 0 c1 nika:read {"path":"a"}`,
		"restart 2 network",
		"text Reading both.",
		`call 0 c1 nika:read {"path":"a"}`, // announced again after the restart
		`call 1 c2 nika:read {"path":"b"}`,
	}
	if !slices.Equal(rec.lines, want) {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(rec.lines, "\n"), strings.Join(want, "\n"))
	}
	if got := sl.got(); !slices.Equal(got, []time.Duration{500 * time.Millisecond}) {
		t.Errorf("sleeps = %v, want one back-off of 500ms, as for a plain request", got)
	}
}

// TestFrontCompleteStreamSamePolicy runs one script of answers through Complete and through
// CompleteStream: the sends, the waits, the limiter and its statistics must not tell them apart
// (a streamed request is one send per attempt, its usage counted like a plain one's).
func TestFrontCompleteStreamSamePolicy(t *testing.T) {
	script := []Outcome{
		failWith(429, ReasonRateLimited, 1234),
		failWith(503, ReasonServerError, 0),
		failWith(0, ReasonNetwork, 0),
		twoCalls(),
	}
	run := func(stream bool) (outs []Outcome, sends int64, waits []time.Duration, st Stats, restarts []string) {
		var n atomic.Int64
		next := func() Outcome { return script[min(int(n.Add(1))-1, len(script)-1)] }
		a := streamAdapter{
			plain:  func(context.Context, Request) Outcome { return next() },
			stream: func(context.Context, Request, *StreamObserver) Outcome { return next() },
		}
		clock := newFakeClock()
		sl := &sleepRecorder{hook: clock.Advance}
		f := NewFront("fake", a, FrontConfig{Sleep: sl.Sleep, TPM: 1000, RPM: 100})
		f.lim.clock = clock
		rec := &recorder{}
		for range 3 {
			n.Store(0)
			if stream {
				outs = append(outs, f.CompleteStream(context.Background(), req("a"), rec.observer()))
			} else {
				outs = append(outs, f.Complete(context.Background(), []Request{req("a")})[0])
			}
		}
		for _, l := range rec.lines {
			if strings.HasPrefix(l, "restart") {
				restarts = append(restarts, l)
			}
		}
		return outs, n.Load(), sl.got(), f.Stats(), restarts
	}
	po, ps, pw, pst, _ := run(false)
	so, ss, sw, sst, restarts := run(true)
	if !reflect.DeepEqual(po, so) || ps != ss || !slices.Equal(pw, sw) || pst != sst {
		t.Errorf("plain: %d sends, waits %v, stats %+v\nstream: %d sends, waits %v, stats %+v", ps, pw, pst, ss, sw, sst)
	}
	if want := []string{"restart 2 rate_limited", "restart 3 server_error", "restart 4 network"}; !slices.Equal(restarts[:3], want) || len(restarts) != 9 {
		t.Errorf("restarts = %q, want %q three times", restarts, want)
	}
}

func TestFrontCompleteStreamMaxSends(t *testing.T) {
	var sends atomic.Int64
	a := streamAdapter{stream: func(context.Context, Request, *StreamObserver) Outcome {
		sends.Add(1)
		return failWith(200, ReasonNetwork, 0)
	}}
	rec := &recorder{}
	o := NewFront("fake", a, FrontConfig{Sleep: (&sleepRecorder{}).Sleep}).CompleteStream(context.Background(), req("a"), rec.observer())
	if ReasonOf(o.Err) != ReasonNetwork || !o.Err.Transient {
		t.Fatalf("outcome = %+v, want transient network", o)
	}
	if sends.Load() != DefaultMaxSends || len(rec.lines) != DefaultMaxSends-1 {
		t.Errorf("%d sends, observed %q; want %d sends and a restart before each but the first", sends.Load(), rec.lines, DefaultMaxSends)
	}
}

// TestFrontCompleteStreamPlain: with NoStream, or over an adapter that cannot stream, the request
// goes plain and the observer hears the whole reply once it is in.
func TestFrontCompleteStreamPlain(t *testing.T) {
	final := twoCalls()
	want := []string{"text Reading both.", `call 0 c1 nika:read {"path":"a"}`, `call 1 c2 nika:read {"path":"b"}`}
	var streamed atomic.Int64
	for name, f := range map[string]*Front{
		"NoStream": NewFront("fake", streamAdapter{
			plain:  func(context.Context, Request) Outcome { return final },
			stream: func(context.Context, Request, *StreamObserver) Outcome { streamed.Add(1); return final },
		}, FrontConfig{NoStream: true}),
		"plain adapter": NewFront("fake", adapterFunc(func(context.Context, Request) Outcome { return final }), FrontConfig{}),
	} {
		rec := &recorder{}
		o := f.CompleteStream(context.Background(), req("a"), rec.observer())
		if !reflect.DeepEqual(o, final) || !slices.Equal(rec.lines, want) {
			t.Errorf("%s: outcome %+v, observed %q; want the reply, %q", name, o, rec.lines, want)
		}
	}
	if streamed.Load() != 0 {
		t.Errorf("ExchangeStream called %d times with NoStream", streamed.Load())
	}
}

func TestFrontCompleteNeverStreams(t *testing.T) {
	final := twoCalls()
	f := NewFront("fake", streamAdapter{
		plain: func(context.Context, Request) Outcome { return final },
		stream: func(context.Context, Request, *StreamObserver) Outcome {
			t.Error("ExchangeStream called by Complete")
			return final
		},
	}, FrontConfig{})
	if out := f.Complete(context.Background(), []Request{req("a"), req("b")}); !reflect.DeepEqual(out, []Outcome{final, final}) {
		t.Errorf("outcomes = %+v", out)
	}
}

func TestFrontCompleteStreamObserverPanic(t *testing.T) {
	a := streamAdapter{stream: func(_ context.Context, _ Request, obs *StreamObserver) Outcome {
		obs.Text("x")
		return okText("x")
	}}
	obs := &StreamObserver{OnText: func(string) { panic("observer bug") }}
	o := NewFront("fake", a, FrontConfig{}).CompleteStream(context.Background(), req("a"), obs)
	if o.Err == nil || o.Err.Category != "internal_error" || !strings.Contains(o.Err.Message, "observer bug") {
		t.Errorf("outcome = %+v, want an internal_error naming the panic", o)
	}
	// A panic while the Front announces what the adapter did not stream is one too.
	obs = &StreamObserver{OnToolCall: func(StreamCall) { panic("observer bug") }}
	plain := NewFront("fake", adapterFunc(func(context.Context, Request) Outcome { return twoCalls() }), FrontConfig{})
	if o := plain.CompleteStream(context.Background(), req("a"), obs); o.Err == nil || o.Err.Category != "internal_error" {
		t.Errorf("outcome = %+v, want an internal_error", o)
	}
}

func TestFrontCompleteStreamNilObserver(t *testing.T) {
	final := twoCalls()
	a := streamAdapter{stream: func(_ context.Context, _ Request, obs *StreamObserver) Outcome {
		obs.Text("Reading both.")
		obs.ToolCall(StreamCall{Index: 0, Block: final.Response.Message.Blocks[1]})
		return final
	}}
	if o := NewFront("fake", a, FrontConfig{}).CompleteStream(context.Background(), req("a"), nil); !reflect.DeepEqual(o, final) {
		t.Errorf("outcome = %+v", o)
	}
	var nilObs *StreamObserver
	nilObs.Text("x")
	nilObs.ToolCall(StreamCall{})
	nilObs.Restart(2, nil)
}

// TestStreamOverPlainProvider: Stream over a provider that is not a Streamer (the mock) answers
// through Complete and announces the reply.
func TestStreamOverPlainProvider(t *testing.T) {
	r := Request{Model: MockModel, Messages: []Message{UserText("Say it.")},
		Tools: []ToolDef{{Name: "nika:read", Parameters: json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}`)}}}
	rec := &recorder{}
	o := Stream(context.Background(), NewMock(), r, rec.observer())
	plain := NewMock().Complete(context.Background(), []Request{r})[0]
	if !reflect.DeepEqual(o, plain) {
		t.Fatalf("Stream = %+v, want Complete's %+v", o, plain)
	}
	want := []string{"text Say it.", `call 0 mock-call-1 nika:read {"path":""}`}
	if !slices.Equal(rec.lines, want) {
		t.Errorf("observed %q, want %q", rec.lines, want)
	}
	// A Streamer is called through CompleteStream.
	f := NewFront("fake", streamAdapter{stream: func(_ context.Context, _ Request, obs *StreamObserver) Outcome {
		obs.Text("streamed")
		return okText("streamed")
	}}, FrontConfig{})
	rec = &recorder{}
	if o := Stream(context.Background(), f, req("a"), rec.observer()); o.Err != nil || !slices.Equal(rec.lines, []string{"text streamed"}) {
		t.Errorf("Stream over a Front: %+v, observed %q", o, rec.lines)
	}
}
