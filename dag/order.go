package dag

// waveResult is the outcome of one Kahn pass over the depends_on edges.
type waveResult struct {
	wave  []int   // wave[i], or -1 when i is on a cycle or depends on one
	waves [][]int // waves[k]: the tasks of wave k in declaration order
	order []int   // canonical order: by wave, then declaration index
	done  int     // tasks that got a wave; == len(ids) iff depends_on is acyclic
}

// kahn computes the waves with Kahn's algorithm over adjacency slices,
// O(V+E). A task's wave is 0 without dependencies, else 1 + the highest wave
// among them (LANGUAGE.md §3.4); Kahn settles every dependency of a task
// before the task itself, so the maximum is final when the task is dequeued.
// Tasks never dequeued are on a cycle or downstream of one: they keep wave -1.
// extra, when not nil, adds edges i -> extra[i] (i waits on them) for the
// recover deadlock pre-check; those passes only use done.
func kahn(deps, dependents [][]int, extra [][]int) waveResult {
	n := len(deps)
	indeg := make([]int, n)
	var back [][]int // reverse of extra
	for i := range n {
		indeg[i] = len(deps[i])
	}
	if extra != nil {
		back = make([][]int, n)
		for i, ts := range extra {
			indeg[i] += len(ts)
			for _, t := range ts {
				back[t] = append(back[t], i)
			}
		}
	}
	wave := make([]int, n)
	queue := make([]int, 0, n)
	for i := range n {
		wave[i] = -1
		if indeg[i] == 0 {
			queue = append(queue, i)
			wave[i] = 0
		}
	}
	for h := 0; h < len(queue); h++ {
		v := queue[h]
		adj := dependents[v]
		for pass := 0; pass < 2; pass++ {
			if pass == 1 {
				if back == nil {
					break
				}
				adj = back[v]
			}
			for _, w := range adj {
				wave[w] = max(wave[w], wave[v]+1)
				indeg[w]--
				if indeg[w] == 0 {
					queue = append(queue, w)
				}
			}
		}
	}
	r := waveResult{wave: wave, done: len(queue)}
	if len(queue) < n {
		// Undequeued tasks may have collected a provisional wave from a
		// settled dependency; they have none.
		settled := make([]bool, n)
		for _, v := range queue {
			settled[v] = true
		}
		for i := range n {
			if !settled[i] {
				wave[i] = -1
			}
		}
	}
	if extra != nil {
		return r
	}
	// Bucket by wave in declaration order: the canonical order without a sort.
	maxWave := -1
	for _, w := range wave {
		maxWave = max(maxWave, w)
	}
	counts := make([]int, maxWave+1)
	for _, w := range wave {
		if w >= 0 {
			counts[w]++
		}
	}
	r.order = make([]int, 0, r.done)
	r.waves = make([][]int, maxWave+1)
	for k, c := range counts {
		r.waves[k] = make([]int, 0, c)
	}
	for i, w := range wave {
		if w >= 0 {
			r.waves[w] = append(r.waves[w], i)
		}
	}
	for _, ws := range r.waves {
		r.order = append(r.order, ws...)
	}
	return r
}

// waveData returns the cached Kahn pass, computing it once.
func (g *Graph) waveData() *waveResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waveDataLocked()
}

func (g *Graph) waveDataLocked() *waveResult {
	if g.waves == nil {
		r := kahn(g.deps, g.dependents, nil)
		g.waves = &r
	}
	return g.waves
}

// Wave returns the wave of id: 0 without dependencies, else 1 + the highest
// wave among its dependencies (depends_on only; unknown dependencies are
// ignored). It is -1 for an unknown id and for a task on a depends_on cycle or
// downstream of one: waves are meaningful only when Cycles is empty.
func (g *Graph) Wave(id string) int {
	i, ok := g.index[id]
	if !ok {
		return -1
	}
	return g.waveData().wave[i]
}

// Waves returns, for each wave k, the ids of wave k in declaration order.
// Tasks with wave -1 (see Wave) are left out.
func (g *Graph) Waves() [][]string {
	r := g.waveData()
	out := make([][]string, len(r.waves))
	for k, ws := range r.waves {
		out[k] = g.names(ws)
	}
	return out
}

// Order returns the canonical order (LANGUAGE.md §3.4, DECISIONS.md D1): by
// wave, then by declaration index within a wave. Tasks with wave -1 (see
// Wave) are left out, so with cycles Order is shorter than IDs.
func (g *Graph) Order() []string {
	return g.names(g.waveData().order)
}
