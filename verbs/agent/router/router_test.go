package router

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func unrelated(n int) []Def {
	defs := make([]Def, n)
	for i := range defs {
		defs[i] = Def{Name: fmt.Sprintf("mcp:srv/tool%d", i), Description: fmt.Sprintf("Manage widget inventory record number %d.", i)}
	}
	return defs
}

// Universe = MinUniverse+8 unrelated mcp:srv/toolN plus nika:fetch; a prompt
// about fetching a URL narrows the offer and keeps nika:fetch.
func TestRoutingNarrowsRequestToolList(t *testing.T) {
	cfg := DefaultConfig()
	universe := append(unrelated(cfg.MinUniverse+8), Def{Name: "nika:fetch", Description: "Fetch a URL over HTTP and return the body."})
	r := New(cfg, universe)
	got := r.Select(1, Query("Fetch the URL https://example.com and summarize it.", "", ""))
	if len(got) >= len(universe) || !slices.Contains(got, "nika:fetch") {
		t.Fatalf("offered %d of %d: %v", len(got), len(universe), got)
	}
	ev := Tally(1, got, r.Universe())
	if ev.Offered != len(got) || ev.Universe != len(universe) || ev.Builtin+ev.MCP+ev.Other != ev.Offered || ev.Builtin != 1 {
		t.Fatalf("tally %+v", ev)
	}
}

func TestZeroOverlapQueryFailsOpen(t *testing.T) {
	universe := append(unrelated(40), Def{Name: "nika:fetch", Description: "Fetch a URL."})
	r := New(DefaultConfig(), universe)
	if got := r.Select(1, Query("zzz qqq xxyyzz", "", "")); len(got) != len(universe) {
		t.Fatalf("offered %d, want %d", len(got), len(universe))
	}
	if got := r.Select(1, ""); len(got) != len(universe) {
		t.Fatalf("empty query offered %d", len(got))
	}
}

// Used at turn 1: offered at 2 and 3, not at 4 (absent other marks).
func TestRecentlyUsedToolStaysOfferedTwoTurns(t *testing.T) {
	universe := append(unrelated(40), Def{Name: "nika:glob", Description: "List files matching a pattern."})
	r := New(DefaultConfig(), universe)
	q := "widget"            // scores every mcp def, keeps the top 12
	r.Record(1, "nika:glob") // resolved at turn 1 (error or not)
	for _, c := range []struct {
		turn int
		want bool
	}{{2, true}, {3, true}, {4, false}, {5, false}} {
		turn, want := c.turn, c.want
		if got := slices.Contains(r.Select(turn, q), "nika:glob"); got != want {
			t.Errorf("turn %d: offered=%v, want %v", turn, got, want)
		}
	}
}

func TestPassthroughBelowMinUniverse(t *testing.T) {
	universe := unrelated(DefaultMinUniverse - 1)
	r := New(DefaultConfig(), universe)
	if r.Routed() {
		t.Fatal("routed below MinUniverse")
	}
	got := r.Select(3, "zzz")
	if len(got) != len(universe) {
		t.Fatalf("offered %d", len(got))
	}
	for i := range got {
		if got[i] != universe[i].Name {
			t.Fatalf("order changed at %d", i)
		}
	}
	if !New(DefaultConfig(), unrelated(DefaultMinUniverse)).Routed() {
		t.Fatal("not routed at MinUniverse")
	}
}

func TestOfferedKeepsUniverseOrder(t *testing.T) {
	universe := unrelated(40)
	universe = append([]Def{{Name: "nika:done", Description: "Finish."}}, universe...)
	universe = append(universe, Def{Name: "nika:fetch", Description: "Fetch a URL."}, Def{Name: "nika:compose", Description: "Check a workflow."})
	r := New(DefaultConfig(), universe)
	r.Record(1, "mcp:srv/tool3")
	got := r.SelectIndices(2, "fetch widget record 17")
	if !slices.IsSorted(got) {
		t.Fatalf("not in universe order: %v", got)
	}
	names := r.Select(2, "fetch widget record 17")
	for _, must := range []string{"nika:done", "nika:compose", "nika:fetch", "mcp:srv/tool3", "mcp:srv/tool17"} {
		if !slices.Contains(names, must) {
			t.Errorf("%s missing from %v", must, names)
		}
	}
	// pinned 2 + recent 1 + at most TopK hits
	if len(names) > 2+1+DefaultTopK {
		t.Fatalf("offered %d", len(names))
	}
}

func TestRoutingIsDeterministic(t *testing.T) {
	universe := append(unrelated(60), Def{Name: "nika:fetch", Description: "Fetch a URL."}, Def{Name: "nika:read", Description: "Read a file."})
	q := Query("read widget record 5 then fetch the url", "record 7 looks wrong", "NIKA-INVOKE-001 · widget 9 missing")
	var ref []string
	for i := range 50 {
		r := New(DefaultConfig(), universe)
		r.Record(1, "mcp:srv/tool40")
		got := r.Select(2, q)
		if i == 0 {
			ref = got
		} else if !reflect.DeepEqual(got, ref) {
			t.Fatalf("run %d: %v != %v", i, got, ref)
		}
	}
}

// The router never invents or duplicates a definition: with the one
// (synthesized) nika:compose in the universe, exactly one is offered whatever
// the query says.
func TestPoisonedDefNeverShadowsCompose(t *testing.T) {
	universe := append(unrelated(40), Def{Name: NameCompose, Description: "Statically check a draft nika workflow without running it."})
	r := New(DefaultConfig(), universe)
	for _, q := range []string{"EVIL", "widget", "zzz", "compose EVIL"} {
		n := 0
		for _, name := range r.Select(1, q) {
			if name == NameCompose {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("query %q: %d compose defs", q, n)
		}
	}
}

// Routing narrows what is advertised and never adds: a compose def that is
// not in the universe (not whitelisted) is never offered, pinned or not.
func TestComposeStaysDefaultDeny(t *testing.T) {
	r := New(DefaultConfig(), unrelated(40))
	r.Record(1, NameCompose) // even a refused call in the ledger
	for _, q := range []string{"compose a workflow", "widget", "zzz"} {
		if slices.Contains(r.Select(2, q), NameCompose) {
			t.Fatalf("query %q offered compose", q)
		}
	}
}

// BM25 on a tiny corpus against hand-computed values (K1 1.2, B 0.75).
//
//	d0 "fetch url"             |d|=2
//	d1 "read file"             |d|=2
//	d2 "fetch fetch file page" |d|=4      N=3, avgdl=8/3
//
// query "Fetch FILE fetch": distinct terms fetch, file; df=2 each,
// idf = ln(1 + 1.5/2.5) = ln 1.6.
// |d|=2: K1(1−B+B·2/(8/3)) = 1.2·0.8125 = 0.975; |d|=4: 1.2·1.375 = 1.65.
// d0 = ln1.6·2.2/1.975; d1 = the same; d2 = ln1.6·(4.4/3.65) + ln1.6·(2.2/2.65).
func TestBM25HandComputed(t *testing.T) {
	x := NewIndex([]string{"fetch url", "read file", "fetch fetch file page"}, 1.2, 0.75)
	got := x.Scores("Fetch FILE fetch")
	want := []float64{0.523548346501579, 0.523548346501579, 0.9567714096509212}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("doc %d: %.17g, want %.17g", i, got[i], want[i])
		}
	}
	hits := x.TopK("fetch file", 10)
	if len(hits) != 3 || hits[0].Doc != 2 || hits[1].Doc != 0 || hits[2].Doc != 1 {
		t.Fatalf("order %+v", hits) // score desc, then index asc on the d0/d1 tie
	}
	if h := x.TopK("fetch file", 2); len(h) != 2 || h[1].Doc != 0 {
		t.Fatalf("k=2: %+v", h)
	}
	if h := x.TopK("page", 10); len(h) != 1 || h[0].Doc != 2 || math.Abs(h[0].Score-math.Log(1+2.5/1.5)*2.2/2.65) > 1e-12 {
		t.Fatalf("page: %+v", h)
	}
	if h := x.TopK("nothing", 10); len(h) != 0 {
		t.Fatalf("nothing: %+v", h)
	}
}

func TestDocumentAndTokens(t *testing.T) {
	if d := Document("mcp:fs/read_text-file", "Read a FILE."); d != "mcp fs read text file mcp fs read text file mcp fs read text file Read a FILE." {
		t.Fatalf("document %q", d)
	}
	got := Tokens("Fetch https://Ex.com/a_b-9, ÉTÉ 42x; ")
	want := []string{"fetch", "https", "ex", "com", "a", "b", "9", "été", "42x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tokens %q", got)
	}
}

func TestQueryCaps(t *testing.T) {
	if q := Query("p", "", "d"); q != "p d" {
		t.Fatalf("%q", q)
	}
	if q := Query("", "", ""); q != "" {
		t.Fatalf("%q", q)
	}
	long := strings.Repeat("é", 5000)
	q := Query(long, long, long)
	parts := strings.Split(q, " ")
	if len(parts) != 3 || len([]rune(parts[0])) != 2048 || len([]rune(parts[1])) != 1024 || len([]rune(parts[2])) != 1022 { // whole query cut to 4096
		t.Fatalf("parts %d", len(parts))
	}
	q = Query(strings.Repeat("a", 2048), strings.Repeat("b", 1024), strings.Repeat("c", 1024))
	if len([]rune(q)) != 4096 || !strings.HasSuffix(q, "c") {
		t.Fatalf("len %d", len([]rune(q)))
	}
	if CutChars("héllo", 2) != "hé" || CutChars("ab", 5) != "ab" || CutChars("x", 0) != "" {
		t.Fatal("CutChars")
	}
}

func TestDefaultConfig(t *testing.T) {
	want := Config{MinUniverse: 32, TopK: 12, RecencyTurns: 2, K1: 1.2, B: 0.75}
	if DefaultConfig() != want || New(Config{}, nil).Config() != want {
		t.Fatalf("%+v", DefaultConfig())
	}
}
