// Package router decides which tool definitions a turn of the agent loop
// offers (AGENT.md §8): pass-through below MinUniverse, else pinned intrinsics,
// recently used tools and the BM25 top-k of the routing query, in universe
// order, failing open to the whole universe. It is deterministic and pure: no
// goroutines, no clock, and no map iteration in any output path. A Router is
// used from the loop goroutine only.
package router

import (
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Config is RouterConfig of AGENT.md §8.1. Integer fields <= 0 and float
// fields <= 0 (or NaN) take their defaults.
type Config struct {
	MinUniverse  int     // below this many defs every turn offers the whole universe
	TopK         int     // BM25 hits kept per turn
	RecencyTurns int     // a tool used at turn u stays offered while t−u <= RecencyTurns
	K1, B        float64 // Okapi BM25 parameters
}

// Defaults of AGENT.md §8.1.
const (
	DefaultMinUniverse  = 32
	DefaultTopK         = 12
	DefaultRecencyTurns = 2
	DefaultK1           = 1.2
	DefaultB            = 0.75
)

// DefaultConfig returns the §8.1 defaults.
func DefaultConfig() Config {
	return Config{
		MinUniverse:  DefaultMinUniverse,
		TopK:         DefaultTopK,
		RecencyTurns: DefaultRecencyTurns,
		K1:           DefaultK1,
		B:            DefaultB,
	}
}

func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.MinUniverse <= 0 {
		c.MinUniverse = d.MinUniverse
	}
	if c.TopK <= 0 {
		c.TopK = d.TopK
	}
	if c.RecencyTurns <= 0 {
		c.RecencyTurns = d.RecencyTurns
	}
	if !(c.K1 > 0) {
		c.K1 = d.K1
	}
	if !(c.B > 0) {
		c.B = d.B
	}
	return c
}

// Intrinsic names that are pinned when present (§8.3 step 2).
const (
	NameDone    = "nika:done"
	NameCompose = "nika:compose"
)

// Def is one definition of the frozen tool universe, in universe order.
type Def struct {
	Name        string
	Description string
}

// Router routes one run's frozen universe. Build it with New.
type Router struct {
	cfg  Config
	defs []Def
	// idx is built at the first selection that narrows (a universe of at least MinUniverse):
	// most agents offer a few tools and never need it, and building it is most of the cost of
	// arming one (issue 20).
	idx      *Index
	lastUsed map[string]int // lookups only; never iterated
}

// New builds a router over the frozen universe (copied).
func New(cfg Config, universe []Def) *Router {
	return &Router{cfg: cfg.normalized(), defs: append([]Def(nil), universe...), lastUsed: make(map[string]int)}
}

// index is the BM25 index over the universe's documents, built once.
func (r *Router) index() *Index {
	if r.idx == nil {
		docs := make([]string, len(r.defs))
		for i, d := range r.defs {
			docs[i] = Document(d.Name, d.Description)
		}
		r.idx = NewIndex(docs, r.cfg.K1, r.cfg.B)
	}
	return r.idx
}

// Config returns the effective configuration.
func (r *Router) Config() Config { return r.cfg }

// Routed reports whether selection narrows at all (len(universe) >= MinUniverse).
func (r *Router) Routed() bool { return len(r.defs) >= r.cfg.MinUniverse }

// Universe returns the number of definitions in the universe.
func (r *Router) Universe() int { return len(r.defs) }

// Record updates the recency ledger: name was resolved at turn. The fold
// calls it for every resolved call, errors included (§8.3 step 3).
func (r *Router) Record(turn int, name string) {
	r.lastUsed[name] = turn
}

// Select returns the names of the definitions offered at turn, in universe order.
func (r *Router) Select(turn int, query string) []string {
	idx := r.SelectIndices(turn, query)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = r.defs[j].Name
	}
	return out
}

// SelectIndices is Select returning universe indices (ascending).
func (r *Router) SelectIndices(turn int, query string) []int {
	n := len(r.defs)
	all := func() []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	if n < r.cfg.MinUniverse {
		return all()
	}
	hits := r.index().TopK(query, r.cfg.TopK)
	if len(hits) == 0 {
		return all() // fail open
	}
	marked := make([]bool, n)
	for _, h := range hits {
		marked[h.Doc] = true
	}
	for i, d := range r.defs {
		if d.Name == NameDone || d.Name == NameCompose {
			marked[i] = true
			continue
		}
		if u, ok := r.lastUsed[d.Name]; ok && turn-u <= r.cfg.RecencyTurns {
			marked[i] = true
		}
	}
	out := make([]int, 0, n)
	for i, m := range marked {
		if m {
			out = append(out, i)
		}
	}
	return out
}

// Query builds the routing query of §8.2: the prompt cut to 2048 characters,
// the last assistant text cut to 1024, the previous turn's observation digest
// cut to 1024; non-empty parts joined with one space, the whole cut to 4096.
func Query(prompt, lastText, digest string) string {
	parts := make([]string, 0, 3)
	for _, p := range [...]struct {
		s   string
		cap int
	}{{prompt, 2048}, {lastText, 1024}, {digest, 1024}} {
		if s := CutChars(p.s, p.cap); s != "" {
			parts = append(parts, s)
		}
	}
	return CutChars(strings.Join(parts, " "), 4096)
}

// CutChars returns the first n characters (code points) of s, never splitting
// one. An invalid byte counts as one character.
func CutChars(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	count := 0
	for i := 0; i < len(s); {
		if count == n {
			return s[:i]
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		count++
	}
	return s
}

// Document returns the BM25 document text of a definition (§8.3 step 4):
// s s s description, where s is the name with ':', '/', '_' and '-' replaced
// by spaces, so name terms count three times.
func Document(name, description string) string {
	s := strings.Map(func(r rune) rune {
		switch r {
		case ':', '/', '_', '-':
			return ' '
		}
		return r
	}, name)
	return s + " " + s + " " + s + " " + description
}

// Tokens splits s into maximal runs of letters or digits
// (unicode.IsLetter || unicode.IsDigit), lower-cased.
func Tokens(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		in := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(s[start:]))
	}
	return out
}

// Index is an Okapi BM25 index over a fixed list of documents.
type Index struct {
	k1, b float64
	tf    []map[string]int // per document; lookups only
	dl    []float64
	df    map[string]int // lookups only
	avgdl float64
}

// NewIndex indexes docs (already in document form; see Document).
func NewIndex(docs []string, k1, b float64) *Index {
	x := &Index{k1: k1, b: b, tf: make([]map[string]int, len(docs)), dl: make([]float64, len(docs)), df: make(map[string]int)}
	total := 0.0
	for i, d := range docs {
		toks := Tokens(d)
		m := make(map[string]int, len(toks))
		for _, t := range toks {
			if m[t] == 0 {
				x.df[t]++
			}
			m[t]++
		}
		x.tf[i] = m
		x.dl[i] = float64(len(toks))
		total += x.dl[i]
	}
	if len(docs) > 0 {
		x.avgdl = total / float64(len(docs))
	}
	return x
}

// queryTerms returns the distinct query tokens in first-occurrence order.
func queryTerms(query string) []string {
	toks := Tokens(query)
	seen := make(map[string]bool, len(toks))
	out := toks[:0]
	for _, t := range toks {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Scores returns the BM25 score of every document for query:
// Σ over distinct query tokens, in first-occurrence order, of
// idf·tf·(K1+1) / (tf + K1·(1 − B + B·|d|/avgdl)) with
// idf = ln(1 + (N − df + 0.5)/(df + 0.5)).
func (x *Index) Scores(query string) []float64 {
	terms := queryTerms(query)
	n := float64(len(x.tf))
	scores := make([]float64, len(x.tf))
	for _, t := range terms {
		df := x.df[t]
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, m := range x.tf {
			tf := float64(m[t])
			if tf == 0 {
				continue
			}
			norm := x.k1 * (1 - x.b + x.b*x.dl[i]/x.avgdl)
			scores[i] += idf * tf * (x.k1 + 1) / (tf + norm)
		}
	}
	return scores
}

// Hit is one scored document.
type Hit struct {
	Doc   int
	Score float64
}

// TopK returns the documents with score > 0, by score descending then index
// ascending, at most k of them.
func (x *Index) TopK(query string, k int) []Hit {
	scores := x.Scores(query)
	hits := make([]Hit, 0, len(scores))
	for i, s := range scores {
		if s > 0 {
			hits = append(hits, Hit{Doc: i, Score: s})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool {
		if hits[a].Score != hits[b].Score {
			return hits[a].Score > hits[b].Score
		}
		return hits[a].Doc < hits[b].Doc
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}
