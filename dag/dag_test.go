package dag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// spec describes a graph compactly: ids in declaration order, then the
// depends_on calls and recover calls in the order they are made.
type spec struct {
	ids  []string
	deps [][2]string // {from, to}: from depends on to
	recs [][2]string // {from, to}: from's recover reads to
}

func (s spec) build() *Graph {
	g := New(s.ids)
	for _, d := range s.deps {
		g.DependsOn(d[0], d[1])
	}
	for _, r := range s.recs {
		g.Recovers(r[0], r[1])
	}
	return g
}

// cycles renders Cycles as "path|closing" strings for compact tables.
func cycles(g *Graph) []string {
	var out []string
	for _, c := range g.Cycles() {
		out = append(out, c.String()+"|"+c.Closing)
	}
	return out
}

func recoverCycles(g *Graph) []string {
	var out []string
	for _, c := range g.RecoverCycles() {
		out = append(out, c.Task+"~>"+c.Target+": "+c.String())
	}
	return out
}

func TestWavesAndOrder(t *testing.T) {
	tests := []struct {
		name  string
		spec  spec
		waves [][]string
		order []string
		wave  map[string]int
	}{
		{
			name:  "empty",
			spec:  spec{},
			waves: [][]string{},
			order: []string{},
		},
		{
			name:  "chain",
			spec:  spec{ids: []string{"a", "b", "c"}, deps: [][2]string{{"b", "a"}, {"c", "b"}}},
			waves: [][]string{{"a"}, {"b"}, {"c"}},
			order: []string{"a", "b", "c"},
			wave:  map[string]int{"a": 0, "b": 1, "c": 2},
		},
		{
			name: "diamond",
			spec: spec{
				ids:  []string{"a", "b", "c", "d"},
				deps: [][2]string{{"b", "a"}, {"c", "a"}, {"d", "c"}, {"d", "b"}},
			},
			waves: [][]string{{"a"}, {"b", "c"}, {"d"}},
			order: []string{"a", "b", "c", "d"},
			wave:  map[string]int{"a": 0, "b": 1, "c": 1, "d": 2},
		},
		{
			// The wave is 1 + the highest dependency wave, not the shortest
			// distance from a root.
			name: "wave is the longest path",
			spec: spec{
				ids:  []string{"a", "b", "c", "d"},
				deps: [][2]string{{"b", "a"}, {"c", "b"}, {"d", "a"}, {"d", "c"}},
			},
			waves: [][]string{{"a"}, {"b"}, {"c"}, {"d"}},
			order: []string{"a", "b", "c", "d"},
			wave:  map[string]int{"d": 3},
		},
		{
			// Declared late, wave 0: comes first. Ties within a wave follow the
			// declaration order, not the call order or the dependency order.
			name: "canonical order ties by declaration",
			spec: spec{
				ids:  []string{"report", "zeta", "alpha", "fetch", "mid"},
				deps: [][2]string{{"report", "mid"}, {"mid", "fetch"}, {"zeta", "fetch"}, {"alpha", "fetch"}},
			},
			waves: [][]string{{"fetch"}, {"zeta", "alpha", "mid"}, {"report"}},
			order: []string{"fetch", "zeta", "alpha", "mid", "report"},
			wave:  map[string]int{"report": 2, "fetch": 0},
		},
		{
			name:  "independent tasks keep declaration order",
			spec:  spec{ids: []string{"c", "a", "b"}},
			waves: [][]string{{"c", "a", "b"}},
			order: []string{"c", "a", "b"},
		},
		{
			name: "unknown and duplicate deps are ignored",
			spec: spec{
				ids:  []string{"a", "b"},
				deps: [][2]string{{"b", "a"}, {"b", "a"}, {"b", "nope"}, {"ghost", "a"}},
			},
			waves: [][]string{{"a"}, {"b"}},
			order: []string{"a", "b"},
		},
		{
			// With cycles, tasks on or after a cycle have wave -1 and are left
			// out of Waves and Order.
			name: "cycle and downstream get -1",
			spec: spec{
				ids:  []string{"root", "a", "b", "after", "free"},
				deps: [][2]string{{"a", "root"}, {"a", "b"}, {"b", "a"}, {"after", "b"}, {"free", "root"}},
			},
			waves: [][]string{{"root"}, {"free"}},
			order: []string{"root", "free"},
			wave:  map[string]int{"root": 0, "a": -1, "b": -1, "after": -1, "free": 1, "unknown": -1},
		},
		{
			name:  "self dependency gets -1",
			spec:  spec{ids: []string{"a", "b"}, deps: [][2]string{{"a", "a"}}},
			waves: [][]string{{"b"}},
			order: []string{"b"},
			wave:  map[string]int{"a": -1, "b": 0},
		},
		{
			// Recover edges are not dependencies.
			name: "recover edges do not move waves",
			spec: spec{
				ids:  []string{"a", "b"},
				recs: [][2]string{{"a", "b"}, {"b", "b"}},
			},
			waves: [][]string{{"a", "b"}},
			order: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.spec.build()
			if got := g.Waves(); !reflect.DeepEqual(got, tt.waves) {
				t.Errorf("Waves() = %q, want %q", got, tt.waves)
			}
			if got := g.Order(); !reflect.DeepEqual(got, tt.order) {
				t.Errorf("Order() = %q, want %q", got, tt.order)
			}
			for id, w := range tt.wave {
				if got := g.Wave(id); got != w {
					t.Errorf("Wave(%q) = %d, want %d", id, got, w)
				}
			}
		})
	}
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name   string
		spec   spec
		cycles []string // "path|closing"
	}{
		{
			name: "acyclic",
			spec: spec{ids: []string{"a", "b"}, deps: [][2]string{{"b", "a"}}},
		},
		{
			name:   "self dependency",
			spec:   spec{ids: []string{"x", "a"}, deps: [][2]string{{"a", "a"}}},
			cycles: []string{"a -> a|a"},
		},
		{
			name:   "two-cycle",
			spec:   spec{ids: []string{"a", "b"}, deps: [][2]string{{"a", "b"}, {"b", "a"}}},
			cycles: []string{"a -> b -> a|b"},
		},
		{
			// c is the first to call DependsOn, and a DFS from the first
			// edge would say c -> b -> a -> c. The path starts at a, the
			// cycle's task declared first, and b's entry closes it.
			name: "rotated to the task declared first",
			spec: spec{
				ids:  []string{"x", "a", "b", "c"},
				deps: [][2]string{{"c", "b"}, {"b", "a"}, {"a", "c"}, {"a", "x"}},
			},
			cycles: []string{"a -> c -> b -> a|b"},
		},
		{
			name: "two independent cycles both reported, by first task",
			spec: spec{
				ids: []string{"p", "c", "d", "a", "b"},
				deps: [][2]string{
					{"a", "b"}, {"b", "a"}, // declared later, added first
					{"c", "d"}, {"d", "c"},
					{"p", "a"},
				},
			},
			cycles: []string{"c -> d -> c|d", "a -> b -> a|b"},
		},
		{
			// One component {a, b, c, d} holding several cycles; one is
			// named: the shortest from a, neighbours in declaration order.
			// a's depends_on lists d before b, but b is declared first.
			name: "nested component names one shortest cycle",
			spec: spec{
				ids: []string{"a", "b", "c", "d"},
				deps: [][2]string{
					{"a", "d"}, {"a", "b"},
					{"b", "c"}, {"c", "a"}, // a -> b -> c -> a
					{"d", "a"},             // a -> d -> a
					{"c", "b"}, {"b", "d"}, // more cycles: b -> c -> b, b -> d -> a -> b
				},
			},
			cycles: []string{"a -> d -> a|d"},
		},
		{
			name: "ties between shortest cycles go to declaration order",
			spec: spec{
				ids:  []string{"a", "b", "c"},
				deps: [][2]string{{"a", "c"}, {"a", "b"}, {"b", "a"}, {"c", "a"}},
			},
			cycles: []string{"a -> b -> a|b"},
		},
		{
			// A self-dependency is its own entry and its own finding, even
			// inside a larger component; the component's cycle avoids it.
			name: "self dependency inside a component",
			spec: spec{
				ids:  []string{"a", "b"},
				deps: [][2]string{{"a", "b"}, {"b", "a"}, {"a", "a"}},
			},
			cycles: []string{"a -> a|a", "a -> b -> a|b"},
		},
		{
			name: "long cycle with a tail",
			spec: spec{
				ids: []string{"t", "e", "d", "c", "b", "a"},
				deps: [][2]string{
					{"t", "e"},
					{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}, {"e", "a"},
				},
			},
			cycles: []string{"e -> a -> b -> c -> d -> e|d"},
		},
		{
			name: "unknown deps add no cycle",
			spec: spec{ids: []string{"a"}, deps: [][2]string{{"a", "b"}, {"b", "a"}}},
		},
		{
			// A cycle through a recover edge is not a depends_on cycle.
			name: "recover edges are not dependencies",
			spec: spec{
				ids:  []string{"a", "b"},
				deps: [][2]string{{"b", "a"}},
				recs: [][2]string{{"a", "b"}, {"a", "a"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.spec.build()
			if got := cycles(g); !reflect.DeepEqual(got, tt.cycles) {
				t.Errorf("Cycles() = %q, want %q", got, tt.cycles)
			}
			// Rebuilding must give the same answer whatever the library's
			// map order did.
			for range 10 {
				if got := cycles(tt.spec.build()); !reflect.DeepEqual(got, tt.cycles) {
					t.Fatalf("rebuilt Cycles() = %q, want %q", got, tt.cycles)
				}
			}
		})
	}
}

func TestCycleFields(t *testing.T) {
	g := spec{
		ids:  []string{"a", "b", "c"},
		deps: [][2]string{{"a", "c"}, {"c", "b"}, {"b", "a"}},
	}.build()
	cs := g.Cycles()
	want := []Cycle{{Path: []string{"a", "c", "b", "a"}, Closing: "b"}}
	if !reflect.DeepEqual(cs, want) {
		t.Fatalf("Cycles() = %#v, want %#v", cs, want)
	}
	if s := cs[0].String(); s != "a -> c -> b -> a" {
		t.Errorf("String() = %q", s)
	}
	// The result is a copy: editing it does not change the graph's answer.
	cs[0].Path[0] = "zzz"
	if got := g.Cycles()[0].Path[0]; got != "a" {
		t.Errorf("Cycles() shares its slices: Path[0] = %q", got)
	}
}

func TestRecoverCycles(t *testing.T) {
	tests := []struct {
		name string
		spec spec
		want []string // "task~>target: path"
	}{
		{
			name: "no recover edges",
			spec: spec{ids: []string{"a", "b"}, deps: [][2]string{{"a", "b"}, {"b", "a"}}},
		},
		{
			name: "recover of itself",
			spec: spec{ids: []string{"x", "a"}, recs: [][2]string{{"a", "a"}}},
			want: []string{"a~>a: a -> a"},
		},
		{
			name: "recover of a direct dependency is fine",
			spec: spec{ids: []string{"a", "b"}, deps: [][2]string{{"b", "a"}}, recs: [][2]string{{"b", "a"}}},
		},
		{
			name: "recover of a transitive dependent",
			spec: spec{
				ids:  []string{"a", "b", "c"},
				deps: [][2]string{{"b", "a"}, {"c", "b"}},
				recs: [][2]string{{"a", "c"}},
			},
			want: []string{"a~>c: a -> c -> b -> a"},
		},
		{
			// A depends_on-only cycle is NIKA-DAG-001 and nothing else, even
			// when recover edges exist elsewhere.
			name: "depends_on-only cycle is not a recover cycle",
			spec: spec{
				ids:  []string{"a", "b", "c"},
				deps: [][2]string{{"a", "b"}, {"b", "a"}, {"c", "a"}},
				recs: [][2]string{{"c", "b"}},
			},
		},
		{
			// The path starts at the cycle's task declared first (a), which is
			// not the task holding the recover reference (b).
			name: "path rotated, task is the recover holder",
			spec: spec{
				ids:  []string{"a", "b", "c"},
				deps: [][2]string{{"a", "c"}, {"c", "b"}},
				recs: [][2]string{{"b", "a"}},
			},
			want: []string{"b~>a: a -> c -> b -> a"},
		},
		{
			// Two recover edges in one component: reported once, at the
			// first task in file order that has one.
			name: "reported once per cycle at the first recover holder",
			spec: spec{
				ids:  []string{"a", "b", "c"},
				deps: [][2]string{{"b", "a"}, {"c", "b"}},
				recs: [][2]string{{"b", "c"}, {"a", "c"}},
			},
			want: []string{"a~>c: a -> c -> b -> a"},
		},
		{
			name: "two separate recover deadlocks, sorted by task",
			spec: spec{
				ids:  []string{"p", "q", "a", "b"},
				deps: [][2]string{{"b", "a"}, {"q", "p"}},
				recs: [][2]string{{"a", "b"}, {"p", "q"}},
			},
			want: []string{"p~>q: p -> q -> p", "a~>b: a -> b -> a"},
		},
		{
			// A recover edge joining a depends_on cycle: both kinds of
			// finding, each once (the depends_on cycle is checked in
			// TestCycles' style below).
			name: "recover edge into a depends_on cycle",
			spec: spec{
				ids:  []string{"a", "b", "c"},
				deps: [][2]string{{"a", "b"}, {"b", "a"}, {"c", "a"}},
				recs: [][2]string{{"a", "c"}},
			},
			want: []string{"a~>c: a -> c -> a"},
		},
		{
			name: "unknown recover targets are ignored",
			spec: spec{ids: []string{"a"}, recs: [][2]string{{"a", "nope"}, {"ghost", "a"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.spec.build()
			if got := recoverCycles(g); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RecoverCycles() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRecoverIntoDependsCycleAlsoReportsTheCycle(t *testing.T) {
	g := spec{
		ids:  []string{"a", "b", "c"},
		deps: [][2]string{{"a", "b"}, {"b", "a"}, {"c", "a"}},
		recs: [][2]string{{"a", "c"}},
	}.build()
	if got, want := cycles(g), []string{"a -> b -> a|b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Cycles() = %q, want %q", got, want)
	}
}

func TestUnknown(t *testing.T) {
	g := New([]string{"a", "b", "c"})
	g.DependsOn("a", "b")
	g.DependsOn("a", "zz")
	g.DependsOn("a", "b") // duplicate: counts as an entry
	g.DependsOn("a", "yy")
	g.DependsOn("ghost", "a")
	g.DependsOn("c", "zz")
	g.DependsOn("ghost", "nope")
	want := []UnknownDep{
		{From: "a", To: "zz", Index: 1},
		{From: "a", To: "yy", Index: 3},
		{From: "ghost", To: "a", Index: 0},
		{From: "c", To: "zz", Index: 0},
		{From: "ghost", To: "nope", Index: 1},
	}
	if got := g.Unknown(); !reflect.DeepEqual(got, want) {
		t.Errorf("Unknown() = %+v, want %+v", got, want)
	}
	if got := g.Deps("a"); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("Deps(a) = %q", got)
	}
}

func TestAccessors(t *testing.T) {
	// d depends on c then a (call order), b on a, c on b; e is loose.
	g := spec{
		ids:  []string{"a", "b", "c", "d", "e", "a"}, // duplicate id ignored
		deps: [][2]string{{"d", "c"}, {"d", "a"}, {"c", "b"}, {"b", "a"}},
	}.build()
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	check("IDs", g.IDs(), []string{"a", "b", "c", "d", "e"})
	check("Len", g.Len(), 5)
	check("Deps(d)", g.Deps("d"), []string{"c", "a"})
	check("Deps(e)", g.Deps("e"), []string{})
	check("Deps(zz)", g.Deps("zz"), []string(nil))
	check("Dependents(a)", g.Dependents("a"), []string{"b", "d"})
	check("Dependents(zz)", g.Dependents("zz"), []string(nil))
	check("Ancestors(d)", g.Ancestors("d"), []string{"a", "b", "c"})
	check("Ancestors(a)", g.Ancestors("a"), []string{})
	check("Descendants(a)", g.Descendants("a"), []string{"b", "c", "d"})
	check("Descendants(c)", g.Descendants("c"), []string{"d"})
	check("Descendants(zz)", g.Descendants("zz"), []string(nil))
	check("Edges", g.Edges(), [][2]string{{"b", "a"}, {"c", "b"}, {"d", "c"}, {"d", "a"}})
	i, ok := g.Index("c")
	check("Index(c)", []any{i, ok}, []any{2, true})
	_, ok = g.Index("zz")
	check("Index(zz) ok", ok, false)

	// On a cycle, a task is its own ancestor.
	c := spec{ids: []string{"a", "b"}, deps: [][2]string{{"a", "b"}, {"b", "a"}}}.build()
	check("Ancestors on a cycle", c.Ancestors("a"), []string{"a", "b"})
}

func TestMutationInvalidates(t *testing.T) {
	g := New([]string{"a", "b"})
	if got := g.Order(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("Order() = %q", got)
	}
	if len(g.Cycles()) != 0 || len(g.RecoverCycles()) != 0 {
		t.Fatal("unexpected cycles")
	}
	g.DependsOn("a", "b")
	if got := g.Order(); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Errorf("Order() after DependsOn = %q", got)
	}
	g.DependsOn("b", "a")
	if got := cycles(g); len(got) != 1 {
		t.Errorf("Cycles() after DependsOn = %q", got)
	}
	g.Recovers("a", "a")
	if got := recoverCycles(g); len(got) != 1 {
		t.Errorf("RecoverCycles() after Recovers = %q", got)
	}
}

// diamond: b and c depend on a, d on c and b (in that order).
func diamond() *Graph {
	return spec{
		ids:  []string{"a", "b", "c", "d"},
		deps: [][2]string{{"b", "a"}, {"c", "a"}, {"d", "c"}, {"d", "b"}},
	}.build()
}

func TestWriteMermaid(t *testing.T) {
	var b bytes.Buffer
	if err := diamond().WriteMermaid(&b); err != nil {
		t.Fatal(err)
	}
	want := `flowchart TD
    n0["a"]
    n1["b"]
    n2["c"]
    n3["d"]
    n0 --> n1
    n0 --> n2
    n2 --> n3
    n1 --> n3
`
	if b.String() != want {
		t.Errorf("WriteMermaid:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := New([]string{"end", `q"#`}).WriteMermaid(&b); err != nil {
		t.Fatal(err)
	}
	if want := "flowchart TD\n    n0[\"end\"]\n    n1[\"q#quot;#35;\"]\n"; b.String() != want {
		t.Errorf("WriteMermaid escaping:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteDOT(t *testing.T) {
	var b bytes.Buffer
	if err := diamond().WriteDOT(&b); err != nil {
		t.Fatal(err)
	}
	want := `strict digraph {
	"a";
	"b";
	"c";
	"d";
	"a" -> "b";
	"a" -> "c";
	"c" -> "d";
	"b" -> "d";
}
`
	if b.String() != want {
		t.Errorf("WriteDOT:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := New([]string{`q"x`, `back\slash`}).WriteDOT(&b); err != nil {
		t.Fatal(err)
	}
	want = "strict digraph {\n\t\"q\\\"x\";\n\t\"back\\\\slash\";\n}\n"
	if b.String() != want {
		t.Errorf("WriteDOT escaping:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := New(nil).WriteDOT(&b); err != nil {
		t.Fatal(err)
	}
	if want := "strict digraph {\n}\n"; b.String() != want {
		t.Errorf("WriteDOT empty = %q, want %q", b.String(), want)
	}
}

func TestWriteDOTDeterministic(t *testing.T) {
	// Enough vertices and edges that draw.DOT's map iteration would show.
	ids := make([]string, 60)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%d", i)
	}
	g := New(ids)
	for i := 1; i < len(ids); i++ {
		g.DependsOn(ids[i], ids[i-1])
		g.DependsOn(ids[i], ids[i/2])
	}
	var first bytes.Buffer
	if err := g.WriteDOT(&first); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		var b bytes.Buffer
		if err := g.WriteDOT(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), first.Bytes()) {
			t.Fatalf("call %d differs:\n%s\nfirst:\n%s", i, b.String(), first.String())
		}
	}
	// Every node and edge is there, exactly once.
	lines := strings.Count(first.String(), "\n")
	if want := 2 + len(ids) + len(g.Edges()); lines != want {
		t.Errorf("%d lines, want %d", lines, want)
	}
}

func TestJSON(t *testing.T) {
	raw, err := json.Marshal(diamond().JSON())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"nodes":[{"id":"a","wave":0},{"id":"b","wave":1},{"id":"c","wave":1},{"id":"d","wave":2}],` +
		`"edges":[{"from":"a","to":"b"},{"from":"a","to":"c"},{"from":"c","to":"d"},{"from":"b","to":"d"}],` +
		`"order":["a","b","c","d"],"waves":[["a"],["b","c"],["d"]]}`
	if string(raw) != want {
		t.Errorf("JSON:\n%s\nwant:\n%s", raw, want)
	}

	raw, err = json.Marshal(New(nil).JSON())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"nodes":[],"edges":[],"order":[],"waves":[]}`; string(raw) != want {
		t.Errorf("empty JSON = %s, want %s", raw, want)
	}

	cyc := spec{ids: []string{"a", "b", "c"}, deps: [][2]string{{"a", "b"}, {"b", "a"}}}.build()
	raw, err = json.Marshal(cyc.JSON())
	if err != nil {
		t.Fatal(err)
	}
	want = `{"nodes":[{"id":"a","wave":-1},{"id":"b","wave":-1},{"id":"c","wave":0}],` +
		`"edges":[{"from":"b","to":"a"},{"from":"a","to":"b"}],"order":["c"],"waves":[["c"]]}`
	if string(raw) != want {
		t.Errorf("cyclic JSON:\n%s\nwant:\n%s", raw, want)
	}
}

// TestNoPanics calls everything on degenerate graphs.
func TestNoPanics(t *testing.T) {
	graphs := map[string]*Graph{
		"nil ids":   New(nil),
		"empty ids": New([]string{}),
		"dups":      New([]string{"a", "a", "a"}),
		"empty id":  spec{ids: []string{""}, deps: [][2]string{{"", ""}}, recs: [][2]string{{"", ""}}}.build(),
		"weird": spec{
			ids:  []string{"a", "b"},
			deps: [][2]string{{"a", "a"}, {"a", "a"}, {"x", "y"}, {"b", "x"}, {"a", "b"}, {"b", "a"}},
			recs: [][2]string{{"a", "a"}, {"a", "a"}, {"b", "a"}, {"x", "a"}},
		}.build(),
	}
	for name, g := range graphs {
		t.Run(name, func(t *testing.T) {
			for _, id := range []string{"", "a", "b", "x"} {
				g.Wave(id)
				g.Deps(id)
				g.Dependents(id)
				g.Ancestors(id)
				g.Descendants(id)
				g.Index(id)
			}
			g.IDs()
			g.Edges()
			g.Unknown()
			g.Cycles()
			g.RecoverCycles()
			g.Waves()
			g.Order()
			g.JSON()
			var b bytes.Buffer
			if err := g.WriteDOT(&b); err != nil {
				t.Error(err)
			}
			if err := g.WriteMermaid(&b); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestConcurrentReads runs the lazy computations from many goroutines; it
// matters under -race.
func TestConcurrentReads(t *testing.T) {
	g := spec{
		ids:  []string{"a", "b", "c", "d"},
		deps: [][2]string{{"b", "a"}, {"c", "b"}, {"b", "c"}, {"d", "a"}},
		recs: [][2]string{{"a", "d"}},
	}.build()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			g.Cycles()
			g.RecoverCycles()
			g.Order()
			g.Waves()
			g.Wave("d")
			g.JSON()
			_ = g.WriteDOT(&bytes.Buffer{})
		})
	}
	wg.Wait()
}

// TestRandomGraphs checks Cycles and RecoverCycles against a brute-force
// reachability matrix on random small graphs: every reported path is a real
// cycle of the right kind, starts at the task declared first, and there is
// exactly one report per self-dependency and per cyclic component.
func TestRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 400 {
		n := 1 + r.IntN(9)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("t%d", i)
		}
		s := spec{ids: ids}
		for range r.IntN(2 * n) {
			s.deps = append(s.deps, [2]string{ids[r.IntN(n)], ids[r.IntN(n)]})
		}
		for range r.IntN(3) {
			s.recs = append(s.recs, [2]string{ids[r.IntN(n)], ids[r.IntN(n)]})
		}
		g := s.build()
		name := fmt.Sprintf("round %d %+v", round, s)

		dep := make([][]bool, n)
		both := make([][]bool, n)
		rec := make([][]bool, n)
		for i := range n {
			dep[i], both[i], rec[i] = make([]bool, n), make([]bool, n), make([]bool, n)
		}
		for _, d := range s.deps {
			a, _ := g.Index(d[0])
			b, _ := g.Index(d[1])
			dep[a][b], both[a][b] = true, true
		}
		for _, d := range s.recs {
			a, _ := g.Index(d[0])
			b, _ := g.Index(d[1])
			rec[a][b], both[a][b] = true, true
		}
		depR, bothR := closure(dep), closure(both)

		// Depends_on cycles.
		wantCount := 0
		seen := map[int]bool{}
		for i := range n {
			if dep[i][i] {
				wantCount++
			}
			if seen[i] {
				continue
			}
			size := 0
			for j := range n {
				if depR[i][j] && depR[j][i] {
					seen[j] = true
					size++
				}
			}
			if size > 1 {
				wantCount++
			}
		}
		cs := g.Cycles()
		if len(cs) != wantCount {
			t.Fatalf("%s: %d cycles %v, want %d", name, len(cs), cs, wantCount)
		}
		prev := -1
		for _, c := range cs {
			p := indices(g, c.Path)
			if p[0] != p[len(p)-1] || c.Closing != c.Path[len(c.Path)-2] {
				t.Fatalf("%s: bad cycle %v", name, c)
			}
			for k := 0; k+1 < len(p); k++ {
				if !dep[p[k]][p[k+1]] {
					t.Fatalf("%s: %v uses a missing edge", name, c)
				}
			}
			for j := range n {
				// A self-dependency is reported where it is, even inside a
				// component; any other cycle starts at its component's first.
				if len(p) > 2 && depR[p[0]][j] && depR[j][p[0]] && j < p[0] {
					t.Fatalf("%s: %v does not start at its component's first task", name, c)
				}
			}
			if p[0] < prev {
				t.Fatalf("%s: cycles not sorted: %v", name, cs)
			}
			prev = p[0]
		}
		if (len(cs) == 0) != (len(g.Order()) == n) {
			t.Fatalf("%s: Order has %d of %d tasks with %d cycles", name, len(g.Order()), n, len(cs))
		}

		// Recover cycles: one per component of both kinds of edge that holds a
		// recover edge.
		wantCount = 0
		seen = map[int]bool{}
		for i := range n {
			if seen[i] {
				continue
			}
			var members []int
			for j := range n {
				if i == j || bothR[i][j] && bothR[j][i] {
					members = append(members, j)
				}
			}
			has := false
			for _, a := range members {
				seen[a] = true
				for _, b := range members {
					if rec[a][b] {
						has = true
					}
				}
			}
			if has {
				wantCount++
			}
		}
		rcs := g.RecoverCycles()
		if len(rcs) != wantCount {
			t.Fatalf("%s: %d recover cycles %v, want %d", name, len(rcs), rcs, wantCount)
		}
		for _, c := range rcs {
			p := indices(g, c.Path)
			task, _ := g.Index(c.Task)
			target, _ := g.Index(c.Target)
			if p[0] != p[len(p)-1] || !rec[task][target] || slices.Min(p) != p[0] {
				t.Fatalf("%s: bad recover cycle %+v", name, c)
			}
			usesTaskEdge := false
			for k := 0; k+1 < len(p); k++ {
				if !both[p[k]][p[k+1]] {
					t.Fatalf("%s: %+v uses a missing edge", name, c)
				}
				if p[k] == task && p[k+1] == target {
					usesTaskEdge = true
				}
				if rec[p[k]][p[k+1]] && p[k] < task {
					t.Fatalf("%s: %+v: an earlier task holds a recover edge of the path", name, c)
				}
			}
			if !usesTaskEdge {
				t.Fatalf("%s: %+v does not use Task -> Target", name, c)
			}
		}
	}
}

// closure returns the transitive closure (paths of one or more edges).
func closure(adj [][]bool) [][]bool {
	n := len(adj)
	r := make([][]bool, n)
	for i := range n {
		r[i] = slices.Clone(adj[i])
	}
	for k := range n {
		for i := range n {
			if !r[i][k] {
				continue
			}
			for j := range n {
				if r[k][j] {
					r[i][j] = true
				}
			}
		}
	}
	return r
}

func indices(g *Graph, ids []string) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i], _ = g.Index(id)
	}
	return out
}

// TestLongCycle runs the library's recursive SCC search over a 10,000-task
// cycle: no stack trouble, one cycle through every task.
func TestLongCycle(t *testing.T) {
	const n = 10000
	ids := d33IDs(n)
	g := New(ids)
	for i := 1; i < n; i++ {
		g.DependsOn(ids[i], ids[i-1])
	}
	g.DependsOn(ids[0], ids[n-1])
	cs := g.Cycles()
	if len(cs) != 1 {
		t.Fatalf("got %d cycles, want 1", len(cs))
	}
	if c := cs[0]; len(c.Path) != n+1 || c.Path[0] != "t0" || c.Path[1] != ids[n-1] || c.Closing != "t1" {
		t.Fatalf("path of length %d from %s to %s, closing %s", len(c.Path), c.Path[0], c.Path[1], c.Closing)
	}
	if len(g.Order()) != 0 {
		t.Errorf("Order() has %d tasks, want 0", len(g.Order()))
	}
}
