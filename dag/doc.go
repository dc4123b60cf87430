// Package dag is the task graph of a workflow: ids and edges, cycles, waves,
// canonical order.
//
// It knows task ids and the edges between them and nothing about verbs,
// expressions or positions: the checker (spec) turns its results into findings,
// the compiler hands the same graph to the planner.
//
// Vocabulary. "a depends on b" is the depends_on edge a -> b, and cycle paths are
// written that way ("a -> c -> b -> a", DECISIONS.md D11). The renderers
// (WriteDOT, WriteMermaid, JSON) draw the execution direction instead, an arrow
// from a dependency to its dependent, because that is how a reader follows a
// run.
//
// Storage, strongly connected components and the DOT export use
// github.com/dominikbraun/graph (D11). The waves and the canonical order come
// from this package's own O(V+E) Kahn pass over adjacency slices: the library's
// topological sorts and cycle-preventing traits take seconds at 10,000 tasks
// and are never called.
//
// Determinism. Every result is a function of the calls made, never of map
// iteration: ties are broken by the declaration (file) index of the tasks, and
// cycles are rotated to start at the task declared first.
//
// Concurrency. Building (New, DependsOn, Recovers) must not run concurrently
// with anything else. Once built, every method may be called from several
// goroutines: derived results are computed once, under a lock, and the
// accessors return copies.
package dag
