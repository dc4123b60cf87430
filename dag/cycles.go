package dag

import (
	"cmp"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"
)

// Cycle is a depends_on cycle (NIKA-DAG-001).
type Cycle struct {
	// Path starts at the cycle's task declared first, follows depends_on
	// edges and ends with that task again: ["a", "c", "b", "a"] reads "a
	// depends on c, which depends on b, which depends on a". A
	// self-dependency is ["a", "a"].
	Path []string
	// Closing is the task whose depends_on entry closes the cycle,
	// Path[len(Path)-2]: the finding is positioned at that entry, which names
	// Path[0] (DECISIONS.md D11).
	Closing string
}

// String writes the path as "a -> c -> b -> a".
func (c Cycle) String() string { return strings.Join(c.Path, " -> ") }

// RecoverCycle is a recover deadlock (NIKA-DAG-004, DECISIONS.md D2): a cycle
// in the graph of depends_on edges plus on_error.recover edges that contains
// at least one recover edge.
type RecoverCycle struct {
	// Task is the cycle's first task in file order that has a recover edge in
	// the cycle, and Target the task that edge reads: the finding is
	// positioned at Task's recover reference to Target.
	Task, Target string
	// Path is the cycle, written as Cycle.Path is (starting and ending at the
	// cycle's task declared first, which need not be Task), following both
	// kinds of edge; it contains the edge Task -> Target. A task whose
	// recover reads itself gives ["a", "a"].
	Path []string
}

// String writes the path as "a -> c -> b -> a".
func (c RecoverCycle) String() string { return strings.Join(c.Path, " -> ") }

// Cycles returns the depends_on cycles, self-dependencies included, sorted by
// the declaration index of Path[0] (a self-dependency before a longer cycle
// starting at the same task).
//
// Every cycle is reported once and none is missed where it matters: each
// self-dependency is one cycle (its own depends_on entry, its own finding),
// and each strongly connected component of more than one task yields one
// cycle, the shortest one from the component's task declared first back to
// itself (breadth-first, neighbours in declaration order, self-dependencies
// not used). Naming every elementary cycle of a component would be
// exponential and would repeat the same mistake; fixing the one named reveals
// the next, if any.
func (g *Graph) Cycles() []Cycle {
	g.mu.Lock()
	if !g.cycDone {
		g.cycles = g.findCycles()
		g.cycDone = true
	}
	cs := g.cycles
	g.mu.Unlock()
	out := make([]Cycle, len(cs))
	for i, c := range cs {
		out[i] = Cycle{Path: slices.Clone(c.Path), Closing: c.Closing}
	}
	return out
}

// findCycles runs with g.mu held.
func (g *Graph) findCycles() []Cycle {
	n := len(g.ids)
	// Kahn reaches every task exactly when depends_on is acyclic; that is the
	// common case, and it is settled without the component search.
	if g.waveDataLocked().done == n {
		return nil
	}
	type found struct {
		start int
		path  []int
	}
	var all []found
	for i, self := range g.selfLoop {
		if self {
			all = append(all, found{i, []int{i, i}})
		}
	}
	comps := components(g.store)
	comp := make([]int, n) // component number + 1; 0 for a task in no cyclic component
	for k, c := range comps {
		if len(c) < 2 {
			continue
		}
		for _, v := range c {
			comp[v] = k + 1
		}
		// The library returns components and their members in map order.
		s := slices.Min(c)
		in := func(v int) bool { return comp[v] == k+1 }
		p := shortestPath(s, s, in, func(v int) []int { return sortedNeighbours(v, g.deps[v], nil) })
		if p != nil {
			all = append(all, found{s, p})
		}
	}
	slices.SortFunc(all, func(a, b found) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(len(a.path), len(b.path)))
	})
	out := make([]Cycle, len(all))
	for i, f := range all {
		out[i] = Cycle{Path: g.names(f.path), Closing: g.ids[f.path[len(f.path)-2]]}
	}
	return out
}

// RecoverCycles returns the recover deadlocks, one per strongly connected
// component of the depends_on + recover graph that contains a recover edge,
// sorted by the declaration index of Task. A cycle of depends_on edges only
// is not one of them (it is a Cycle). Task is the component's task declared
// first among those with a recover edge inside the component, Target that
// task's first such recover target in call order, and Path the shortest way
// from Target back to Task (breadth-first, neighbours in declaration order)
// closed by the recover edge, then rotated to start at its task declared
// first.
func (g *Graph) RecoverCycles() []RecoverCycle {
	g.mu.Lock()
	if !g.rcDone {
		g.rcycles = g.findRecoverCycles()
		g.rcDone = true
	}
	cs := g.rcycles
	g.mu.Unlock()
	out := make([]RecoverCycle, len(cs))
	for i, c := range cs {
		out[i] = RecoverCycle{Task: c.Task, Target: c.Target, Path: slices.Clone(c.Path)}
	}
	return out
}

// findRecoverCycles runs with g.mu held.
func (g *Graph) findRecoverCycles() []RecoverCycle {
	if g.nRecover == 0 {
		return nil
	}
	n := len(g.ids)
	// As in findCycles, Kahn settles the acyclic case. Its leftovers are
	// also the only tasks that can be on a cycle, and a cyclic component lies
	// wholly among them, so the component search runs on that subgraph only.
	k := kahn(g.deps, g.dependents, g.recov)
	if k.done == n {
		return nil
	}
	left := make([]bool, n)
	for i, w := range k.wave {
		left[i] = w < 0
	}
	sub := graph.New(graph.IntHash, graph.Directed())
	for i := range n {
		if left[i] {
			_ = sub.AddVertex(hash(i))
		}
	}
	for i := range n {
		if !left[i] {
			continue
		}
		for _, ts := range [2][]int{g.deps[i], g.recov[i]} {
			for _, t := range ts {
				if left[t] {
					// A task may both depend on and recover from t: the
					// second AddEdge is refused as a duplicate, harmlessly.
					_ = sub.AddEdge(hash(i), hash(t))
				}
			}
		}
	}
	comps := components(sub)
	comp := make([]int, n)
	var out []RecoverCycle
	var tasks []int
	for c, members := range comps {
		for _, v := range members {
			comp[v] = c + 1
		}
		in := func(v int) bool { return comp[v] == c+1 }
		slices.Sort(members)
		task, target := -1, -1
		for _, m := range members {
			for _, r := range g.recov[m] {
				if in(r) {
					task, target = m, r
					break
				}
			}
			if task >= 0 {
				break
			}
		}
		if task < 0 {
			continue // depends_on edges only: a Cycle, or no cycle at all
		}
		var path []int
		if target == task {
			path = []int{task, task}
		} else {
			back := shortestPath(target, task, in, func(v int) []int {
				return sortedNeighbours(v, g.deps[v], g.recov[v])
			})
			if back == nil {
				continue // unreachable: target and task share a component
			}
			path = append([]int{task}, back...)
		}
		out = append(out, RecoverCycle{Task: g.ids[task], Target: g.ids[target], Path: g.names(rotate(path))})
		tasks = append(tasks, task)
	}
	// Sort by Task's declaration index; tasks[i] is out[i]'s.
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(tasks[a], tasks[b]) })
	sorted := make([]RecoverCycle, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

// shortestPath returns the shortest path src, ..., dst of at least one edge
// that stays inside in, or nil. next lists a task's neighbours in declaration
// order, which makes ties deterministic. With src == dst it is the shortest
// cycle through src.
func shortestPath(src, dst int, in func(int) bool, next func(int) []int) []int {
	parent := map[int]int{src: -1}
	queue := []int{src}
	for h := 0; h < len(queue); h++ {
		v := queue[h]
		for _, w := range next(v) {
			if w == dst {
				var rev []int
				for u := v; u != -1; u = parent[u] {
					rev = append(rev, u)
				}
				slices.Reverse(rev)
				return append(rev, dst)
			}
			if !in(w) {
				continue
			}
			if _, seen := parent[w]; seen {
				continue
			}
			parent[w] = v
			queue = append(queue, w)
		}
	}
	return nil
}

// sortedNeighbours merges a and b in declaration order, without duplicates
// and without v itself: a self-edge never shortens a path between two tasks,
// and a self-dependency is reported as its own cycle.
func sortedNeighbours(v int, a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	for _, ts := range [2][]int{a, b} {
		for _, t := range ts {
			if t != v {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// rotate turns a closed path (first == last) to start at its smallest
// declaration index.
func rotate(path []int) []int {
	ring := path[:len(path)-1]
	k := 0
	for i, v := range ring {
		if v < ring[k] {
			k = i
		}
	}
	out := make([]int, 0, len(path))
	out = append(out, ring[k:]...)
	out = append(out, ring[:k]...)
	return append(out, ring[k])
}
