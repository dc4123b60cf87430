package guard

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func sigOf(name, args, content string, isErr bool) Signature {
	return Sign([]Call{{Name: name, Args: []byte(args)}}, []Observation{{Content: content, IsError: isErr}})
}

// 3 identical nika:read turns then a text answer: the nudge lands once at
// turn 3 (repeated_actions, period 1) and the run recovers at turn 4.
func TestNudgeLandsOnceAndLoopRecovers(t *testing.T) {
	g := New(DefaultConfig())
	s := sigOf("nika:read", `{"path":"a.txt"}`, "hello", false)
	var nudges []NudgeEvent
	for turn := 1; turn <= 3; turn++ {
		v := g.Observe(s, false)
		if v.Kind == Stalled {
			t.Fatalf("turn %d: unexpected stall", turn)
		}
		if ev, ok := v.NudgeEvent(turn); ok {
			nudges = append(nudges, ev)
			if !strings.HasPrefix(v.Text, "[loop-guard]") {
				t.Fatalf("nudge text %q", v.Text)
			}
		}
	}
	// Turn 4 is a text answer: no dispatch, no Observe.
	want := []NudgeEvent{{Period: 1, Reason: ReasonRepeatedActions, Turn: 3}}
	if fmt.Sprint(nudges) != fmt.Sprint(want) {
		t.Fatalf("nudges = %+v, want %+v", nudges, want)
	}
	b, _ := json.Marshal(nudges[0])
	if string(b) != `{"period":1,"reason":"repeated_actions","turn":3}` {
		t.Fatalf("agent_nudge payload %s", b)
	}
}

// 6 identical turns scripted: the guard stalls at turn 5 {period 1, repeats 5},
// so exactly 5 provider requests are made.
func TestIdenticalCyclesStallAtFifthRepeat(t *testing.T) {
	g := New(DefaultConfig())
	s := sigOf("nika:read", `{"path":"a.txt"}`, "same", false)
	want := []Kind{Continue, Continue, Nudge, Continue, Stalled}
	requests := 0
	for turn := 1; turn <= 6; turn++ {
		requests++
		v := g.Observe(s, false)
		if v.Kind != want[turn-1] {
			t.Fatalf("turn %d: kind %v, want %v", turn, v.Kind, want[turn-1])
		}
		if v.Kind == Stalled {
			if v.StallDetails() != (StallDetails{Period: 1, Repeats: 5}) {
				t.Fatalf("details %+v", v.StallDetails())
			}
			ev, ok := v.StalledEvent(turn)
			if !ok || ev != (StalledEvent{Period: 1, Repeats: 5, Turn: 5}) {
				t.Fatalf("stalled event %+v", ev)
			}
			break
		}
	}
	if requests != 5 {
		t.Fatalf("requests = %d, want 5", requests)
	}
}

// Same call, results "progress {i}%": never nudged, never stalled.
func TestPollingWithChangingResultsNeverTrips(t *testing.T) {
	g := New(DefaultConfig())
	for i := 1; i <= 100; i++ {
		v := g.Observe(sigOf("mcp:ci/status", `{"job":7}`, fmt.Sprintf("progress %d%%", i), false), false)
		if v.Kind != Continue {
			t.Fatalf("turn %d: %+v", i, v)
		}
	}
}

// Two all-error turns with different args draw an error_streak nudge, period 0.
func TestErrorStreakDrawsNudge(t *testing.T) {
	g := New(DefaultConfig())
	if v := g.Observe(sigOf("nika:read", `{"path":"x"}`, "NIKA-INVOKE-001 · nope", true), true); v.Kind != Continue {
		t.Fatalf("turn 1: %+v", v)
	}
	v := g.Observe(sigOf("nika:read", `{"path":"y"}`, "NIKA-INVOKE-001 · nope", true), true)
	want := Verdict{Kind: Nudge, Reason: ReasonErrorStreak, Period: 0, Text: ErrorStreakText}
	if v != want {
		t.Fatalf("turn 2: %+v", v)
	}
	if g.Streak() != 0 || g.Reflections() != 1 {
		t.Fatalf("streak %d reflections %d", g.Streak(), g.Reflections())
	}
	ev, _ := v.NudgeEvent(2)
	if ev != (NudgeEvent{Period: 0, Reason: ReasonErrorStreak, Turn: 2}) {
		t.Fatalf("event %+v", ev)
	}
}

func cycleSigs(p int) []Signature {
	out := make([]Signature, p)
	for i := range out {
		out[i] = sigOf("nika:read", fmt.Sprintf(`{"i":%d}`, i), "r", false)
	}
	return out
}

// Injected cycles of period 2, 4, 8 stall at StallAfter repeats with the right period.
func TestGuardReachesPeriods2_4_8(t *testing.T) {
	for _, p := range []int{2, 4, 8} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			cfg := DefaultConfig()
			g := New(cfg)
			cyc := cycleSigs(p)
			for turn := 1; turn <= 100; turn++ {
				v := g.Observe(cyc[(turn-1)%p], false)
				if v.Kind == Stalled {
					if v.Period != p || v.Repeats != cfg.StallAfter || turn != p*cfg.StallAfter {
						t.Fatalf("stalled at turn %d: %+v", turn, v)
					}
					return
				}
			}
			t.Fatal("never stalled")
		})
	}
}

// Window: 8 behaves as 40.
func TestGuardClampsSmallWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = 8
	g := New(cfg)
	if g.Config().Window != 40 {
		t.Fatalf("window %d", g.Config().Window)
	}
	ref := New(DefaultConfig())
	cyc := cycleSigs(8)
	for turn := 1; turn <= 40; turn++ {
		a, b := g.Observe(cyc[(turn-1)%8], false), ref.Observe(cyc[(turn-1)%8], false)
		if a != b {
			t.Fatalf("turn %d: %+v vs %+v", turn, a, b)
		}
		if turn == 40 && (a.Kind != Stalled || a.Period != 8 || a.Repeats != 5) {
			t.Fatalf("turn 40: %+v", a)
		}
	}
}

func TestSignatureIgnoresKeyOrderAndNumberSpelling(t *testing.T) {
	same := [][2]string{
		{`{"a":1,"b":{"x":[1,{"p":true,"q":null}],"y":"s"}}`, `{"b":{"y":"s","x":[1,{"q":null,"p":true}]},"a":1}`},
		{`{"n":1}`, `{"n":1.0}`},
		{`{"n":1}`, `{"n":1e0}`},
		{`{"n":1}`, ` { "n" : 10e-1 } `},
		{`{"n":-0.0}`, `{"n":0}`},
		{`{"n":0.5}`, `{"n":5e-1}`},
	}
	for _, c := range same {
		if sigOf("t", c[0], "", false) != sigOf("t", c[1], "", false) {
			t.Errorf("%s vs %s: different", c[0], c[1])
		}
	}
	diff := [][2]string{
		{`{"n":1}`, `{"n":2}`},
		{`{"n":1}`, `{"n":"1"}`},
		{`{"n":1}`, `{"n":1.5}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":null}`, `{"a":false}`},
		{`{"a":1}`, `{"b":1}`},
		{`{"a":1`, `{"a":1}`},
		{`{"a":1`, `{"a":2`},
	}
	for _, c := range diff {
		if sigOf("t", c[0], "", false) == sigOf("t", c[1], "", false) {
			t.Errorf("%s vs %s: same", c[0], c[1])
		}
	}
	// Observations are part of the signature.
	base := sigOf("t", `{}`, "x", false)
	if base == sigOf("t", `{}`, "x", true) || base == sigOf("t", `{}`, "y", false) || base == sigOf("u", `{}`, "x", false) {
		t.Error("observation or name ignored")
	}
	// Request order matters.
	c1 := []Call{{"a", []byte(`{}`)}, {"b", []byte(`{}`)}}
	c2 := []Call{{"b", []byte(`{}`)}, {"a", []byte(`{}`)}}
	if Sign(c1, nil) == Sign(c2, nil) {
		t.Error("call order ignored")
	}
}

// Byte stream of §7.1, checked literally for a small input.
func TestCanonicalBytes(t *testing.T) {
	got := Canonical([]byte(`{"b":[true,null],"a":1.5,"c":-2}`))
	var want []byte
	u64 := func(x uint64) {
		for i := range 8 {
			want = append(want, byte(x>>(8*i)))
		}
	}
	want = append(want, 'o')
	u64(3)
	u64(1)
	want = append(want, 'a', 'd')
	u64(0x3FF8000000000000) // 1.5
	u64(1)
	want = append(want, 'b', 'a')
	u64(2)
	want = append(want, 't', 'n')
	u64(1)
	want = append(want, 'c', 'i')
	u64(uint64(0xFFFFFFFFFFFFFFFE)) // -2
	if string(got) != string(want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
	raw := Canonical([]byte(`nope`))
	if raw[0] != 'r' || string(raw[9:]) != "nope" || raw[1] != 4 {
		t.Fatalf("raw %x", raw)
	}
}

func FuzzSignatureCanonical(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,2,{"c":null}]}`, `1e0`, `"x"`, `[true,false]`, `{`, ``, `-0`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s1 := Sign([]Call{{"x", b}}, nil)
		v, ok := decode(b)
		if !ok {
			return
		}
		// Re-encoding (keys sorted, numbers respelled) must not change the hash.
		re, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if s2 := Sign([]Call{{"x", re}}, nil); s1 != s2 {
			t.Fatalf("%q and %q hash differently", b, re)
		}
	})
}

// With NudgeAfter >= StallAfter, stall still fires at NudgeAfter+1.
func TestStallIsNeverMaskedByNudge(t *testing.T) {
	for _, cfg := range []Config{
		{NudgeAfter: 5, StallAfter: 5},
		{NudgeAfter: 6, StallAfter: 3},
	} {
		g := New(cfg)
		s := sigOf("a", `{}`, "r", false)
		for turn := 1; ; turn++ {
			v := g.Observe(s, false)
			if turn == cfg.NudgeAfter && v.Kind != Nudge {
				t.Fatalf("%+v turn %d: %+v", cfg, turn, v)
			}
			if v.Kind == Stalled {
				if turn != cfg.NudgeAfter+1 || v.Repeats != cfg.NudgeAfter+1 {
					t.Fatalf("%+v: stalled at %d (%+v)", cfg, turn, v)
				}
				break
			}
			if turn > 20 {
				t.Fatal("never stalled")
			}
		}
	}
}

func TestNudgeTextsExact(t *testing.T) {
	if got := RepeatedActionsText(1); got != "[loop-guard] Your recent actions form a 1-turn cycle that keeps returning identical results. Running them again will not tell you anything new. Summarize what the results you already have show, then either try a different action or finish now with your best answer." {
		t.Fatalf("repeated_actions(1) = %q", got)
	}
	if got := RepeatedActionsText(12); !strings.Contains(got, " a 12-turn cycle ") {
		t.Fatalf("repeated_actions(12) = %q", got)
	}
	if ErrorStreakText != "[loop-guard] Every tool call in your recent turns failed. Read the error messages again and state the most likely cause. Then correct the arguments, pick another tool, or finish now with your best answer." {
		t.Fatalf("error_streak = %q", ErrorStreakText)
	}
}

// Table test of the §7.3 verdict order.
func TestVerdictOrder(t *testing.T) {
	A, B := sigOf("a", `{}`, "1", true), sigOf("b", `{}`, "2", true)
	type step struct {
		sig     Signature
		allErr  bool
		want    Kind
		reason  Reason
		period  int
		repeats int
	}
	cases := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"defaults same ok turn", DefaultConfig(), []step{
			{A, false, Continue, "", 0, 0}, {A, false, Continue, "", 0, 0},
			{A, false, Nudge, ReasonRepeatedActions, 1, 3}, {A, false, Continue, "", 0, 0},
			{A, false, Stalled, "", 1, 5},
		}},
		{"cycle nudge beats error streak", DefaultConfig(), []step{
			{A, true, Continue, "", 0, 0}, {B, true, Nudge, ReasonErrorStreak, 0, 0},
			{A, true, Continue, "", 0, 0}, // budget spent
			{B, true, Continue, "", 0, 0},
		}},
		{"cycle nudge first when both due", Config{MaxReflections: 2, ErrorStreakNudge: 3}, []step{
			{A, true, Continue, "", 0, 0}, {A, true, Continue, "", 0, 0},
			{A, true, Nudge, ReasonRepeatedActions, 1, 3}, // streak 3 too; cycle wins, streak kept
			{A, true, Nudge, ReasonRepeatedActions, 1, 4}, // repeats 4, one reflection left
		}},
		{"stall beats nudge budget", Config{NudgeAfter: 2, StallAfter: 3, MaxReflections: 5}, []step{
			{A, false, Continue, "", 0, 0}, {A, false, Nudge, ReasonRepeatedActions, 1, 2},
			{A, false, Stalled, "", 1, 3},
		}},
		{"mixed turn resets streak", DefaultConfig(), []step{
			{A, true, Continue, "", 0, 0}, {B, false, Continue, "", 0, 0},
			{A, true, Continue, "", 0, 0}, {sigOf("c", `{}`, "", true), true, Nudge, ReasonErrorStreak, 0, 0},
		}},
		{"period 2 nudge", DefaultConfig(), []step{
			{A, false, Continue, "", 0, 0}, {B, false, Continue, "", 0, 0},
			{A, false, Continue, "", 0, 0}, {B, false, Continue, "", 0, 0},
			{A, false, Continue, "", 0, 0}, {B, false, Nudge, ReasonRepeatedActions, 2, 3},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := New(c.cfg)
			for i, s := range c.steps {
				v := g.Observe(s.sig, s.allErr)
				if v.Kind != s.want || v.Reason != s.reason || v.Period != s.period || (s.want != Continue && s.reason != ReasonErrorStreak && v.Repeats != s.repeats) {
					t.Fatalf("step %d: %+v, want %+v", i+1, v, s)
				}
				if v.Kind == Nudge {
					want := ErrorStreakText
					if v.Reason == ReasonRepeatedActions {
						want = RepeatedActionsText(v.Period)
					}
					if v.Text != want {
						t.Fatalf("step %d text %q", i+1, v.Text)
					}
				}
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	want := Config{NudgeAfter: 3, StallAfter: 5, MaxReflections: 1, ErrorStreakNudge: 2, Window: 40}
	if DefaultConfig() != want || New(Config{}).Config() != want {
		t.Fatalf("%+v", DefaultConfig())
	}
}

// Tie on repeats keeps the smaller period; a lone signature is no cycle.
func TestDominantCycleTieAndMinimum(t *testing.T) {
	g := New(DefaultConfig())
	g.Observe(1, false)
	if p, r := g.dominantCycle(); p != 0 || r != 0 {
		t.Fatalf("%d %d", p, r)
	}
	g = New(Config{NudgeAfter: 100, StallAfter: 100})
	for _, s := range []Signature{1, 2, 1, 2, 2, 1, 2, 2} {
		g.Observe(s, false)
	}
	// p=1: [2,2] → 2; p=3: [1,2,2]x2 → 2. Tie → smaller period.
	if p, r := g.dominantCycle(); p != 1 || r != 2 {
		t.Fatalf("got period %d repeats %d", p, r)
	}
	// Sliding window: older signatures fall out.
	g = New(Config{StallAfter: 2, NudgeAfter: 1, Window: 1}) // window clamped to 16
	for i := range 100 {
		g.Observe(Signature(i), false)
	}
	if g.n != 16 || g.at(15) != 99 || g.at(0) != 84 {
		t.Fatalf("window n=%d newest=%d oldest=%d", g.n, g.at(15), g.at(0))
	}
}
