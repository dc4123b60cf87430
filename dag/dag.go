package dag

import (
	"slices"
	"sync"

	"github.com/dominikbraun/graph"
)

// Graph is the task graph of one workflow. The zero value is not usable; call
// New.
type Graph struct {
	ids   []string       // declaration order; the index of an id is its declaration index
	index map[string]int // id -> declaration index

	// store holds the vertices and the depends_on edges in execution
	// direction: dependency -> dependent. A vertex is hash(declaration
	// index): integer hashes keep the library's maps cheap and let WriteDOT
	// recover the declaration order of draw.DOT's statements without parsing
	// task ids.
	store graph.Graph[int, int]

	deps       [][]int // deps[i]: the tasks i depends on, in call order, no duplicates
	dependents [][]int // dependents[i]: the tasks depending on i, in call order
	selfLoop   []bool  // selfLoop[i]: i depends on itself

	calls        []int          // DependsOn calls per known `from`, duplicates included (UnknownDep.Index)
	unknownCalls map[string]int // the same for a `from` that is not a task
	unknown      []UnknownDep

	recov    [][]int // recov[i]: the tasks i's on_error.recover reads, in call order, no duplicates
	recovSet map[[2]int]struct{}
	nRecover int

	mu      sync.Mutex // guards the derived results below
	waves   *waveResult
	cycles  []Cycle
	cycDone bool
	rcycles []RecoverCycle
	rcDone  bool
}

// hash maps a declaration index to a vertex of the library's graphs, and
// unhash maps it back. The vertex is never 0: StronglyConnectedComponents
// (v0.23.0) pops a component off its stack with `var hash K; for hash !=
// vertexHash`, so a component whose root has the zero hash is never popped,
// and depending on map order a cycle through it is silently lost (and an empty
// component appears). With 1-based hashes the zero value is never a vertex.
func hash(i int) int   { return i + 1 }
func unhash(h int) int { return h - 1 }

// components returns the strongly connected components of gr as declaration
// indices, dropping the empty components the library can return.
func components(gr graph.Graph[int, int]) [][]int {
	comps, err := graph.StronglyConnectedComponents(gr)
	if err != nil {
		// Only returned for an undirected graph, which ours never are.
		return nil
	}
	out := comps[:0]
	for _, c := range comps {
		if len(c) == 0 {
			continue
		}
		for k, h := range c {
			c[k] = unhash(h)
		}
		out = append(out, c)
	}
	return out
}

// UnknownDep is a depends_on entry naming a task that does not exist
// (NIKA-DAG-002), or made by a `from` that is not a task. Index is the
// position of the entry among from's DependsOn calls (0-based), which is its
// position in from's depends_on list when the caller adds the list in order.
type UnknownDep struct {
	From, To string
	Index    int
}

// New returns a graph over the task ids in declaration (file) order. A
// duplicate id keeps its first declaration; later ones are ignored (the checker
// reports them as NIKA-PARSE-007).
func New(ids []string) *Graph {
	g := &Graph{
		index: make(map[string]int, len(ids)),
		store: graph.New(graph.IntHash, graph.Directed()),
	}
	g.ids = make([]string, 0, len(ids))
	for _, id := range ids {
		if _, dup := g.index[id]; dup {
			continue
		}
		i := len(g.ids)
		g.index[id] = i
		g.ids = append(g.ids, id)
		// Cannot fail: i is new. An error would only mean a library bug, and
		// the graph stays usable without the vertex for everything but DOT.
		_ = g.store.AddVertex(hash(i))
	}
	n := len(g.ids)
	g.deps = make([][]int, n)
	g.dependents = make([][]int, n)
	g.selfLoop = make([]bool, n)
	g.calls = make([]int, n)
	g.recov = make([][]int, n)
	return g
}

// DependsOn records that task from depends on task to: one entry of from's
// depends_on list. Call it once per entry, in list order, so that
// UnknownDep.Index matches the entry. An unknown from or to is recorded (see
// Unknown), not an error, and adds no edge. A duplicate edge is ignored.
func (g *Graph) DependsOn(from, to string) {
	fi, fok := g.index[from]
	var call int
	if fok {
		call = g.calls[fi]
		g.calls[fi]++
	} else {
		if g.unknownCalls == nil {
			g.unknownCalls = make(map[string]int)
		}
		call = g.unknownCalls[from]
		g.unknownCalls[from]++
	}
	ti, tok := g.index[to]
	if !fok || !tok {
		g.unknown = append(g.unknown, UnknownDep{From: from, To: to, Index: call})
		return
	}
	// The library is the authority on duplicates: it refuses an edge it
	// already holds (ErrEdgeAlreadyExists), which saves a second edge set
	// here. No other error is possible with both vertices present; were one
	// to happen, skipping the edge keeps the slices consistent with the store.
	if err := g.store.AddEdge(hash(ti), hash(fi)); err != nil {
		return
	}
	g.invalidate()
	g.deps[fi] = append(g.deps[fi], ti)
	g.dependents[ti] = append(g.dependents[ti], fi)
	if fi == ti {
		g.selfLoop[fi] = true
	}
}

// Recovers records that from's on_error.recover reads task to. It is the edge
// from -> to of DECISIONS.md D2, used only to detect recover deadlocks
// (RecoverCycles): it is not a dependency and has no effect on waves, order,
// Deps or the renderers. An unknown from or to is ignored (the checker reports
// unknown references itself), and so is a duplicate.
func (g *Graph) Recovers(from, to string) {
	fi, fok := g.index[from]
	ti, tok := g.index[to]
	if !fok || !tok {
		return
	}
	if g.recovSet == nil {
		g.recovSet = make(map[[2]int]struct{})
	}
	k := [2]int{fi, ti}
	if _, dup := g.recovSet[k]; dup {
		return
	}
	g.recovSet[k] = struct{}{}
	g.recov[fi] = append(g.recov[fi], ti)
	g.nRecover++
	g.invalidate()
}

// invalidate drops derived results after a mutation. Building is not
// concurrent with reads (see the package doc), so the lock only keeps the race
// detector's view consistent.
func (g *Graph) invalidate() {
	g.mu.Lock()
	g.waves, g.cycles, g.cycDone, g.rcycles, g.rcDone = nil, nil, false, nil, false
	g.mu.Unlock()
}

// Unknown returns the depends_on entries that name an unknown task, or are
// made by an unknown task, in call order.
func (g *Graph) Unknown() []UnknownDep {
	return slices.Clone(g.unknown)
}

// IDs returns the task ids in declaration order, without duplicates.
func (g *Graph) IDs() []string {
	return slices.Clone(g.ids)
}

// Len returns the number of tasks.
func (g *Graph) Len() int { return len(g.ids) }

// Index returns the declaration index of id, and false for an unknown id.
func (g *Graph) Index(id string) (int, bool) {
	i, ok := g.index[id]
	return i, ok
}

// Deps returns the direct dependencies of id in the order they were added
// (its depends_on order), unknown ids and duplicates left out. Nil for an
// unknown id.
func (g *Graph) Deps(id string) []string {
	i, ok := g.index[id]
	if !ok {
		return nil
	}
	return g.names(g.deps[i])
}

// Dependents returns the tasks that depend directly on id, in declaration
// order. Nil for an unknown id.
func (g *Graph) Dependents(id string) []string {
	i, ok := g.index[id]
	if !ok {
		return nil
	}
	ds := slices.Clone(g.dependents[i])
	slices.Sort(ds)
	return g.names(ds)
}

// Ancestors returns every task id depends on, directly or transitively, in
// declaration order. id itself is included only when it is on a cycle.
func (g *Graph) Ancestors(id string) []string {
	return g.reach(id, g.deps)
}

// Descendants returns every task that depends on id, directly or
// transitively, in declaration order. id itself is included only when it is on
// a cycle.
func (g *Graph) Descendants(id string) []string {
	return g.reach(id, g.dependents)
}

// reach collects the tasks reachable from id in adj, sorted by declaration
// index. Sorting the result, rather than scanning a visited slice, keeps a
// small answer cheap in a large graph.
func (g *Graph) reach(id string, adj [][]int) []string {
	s, ok := g.index[id]
	if !ok {
		return nil
	}
	seen := map[int]bool{}
	stack := []int{s}
	var out []int
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range adj[v] {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
				stack = append(stack, w)
			}
		}
	}
	slices.Sort(out)
	return g.names(out)
}

// Edges returns the depends_on edges as [from, to] pairs, from depending on
// to, ordered by from's declaration index and then by call order. Unknown ids
// and duplicates are left out.
func (g *Graph) Edges() [][2]string {
	n := 0
	for _, d := range g.deps {
		n += len(d)
	}
	out := make([][2]string, 0, n)
	for i, d := range g.deps {
		for _, j := range d {
			out = append(out, [2]string{g.ids[i], g.ids[j]})
		}
	}
	return out
}

func (g *Graph) names(idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = g.ids[i]
	}
	return out
}
