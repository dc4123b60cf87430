package server

import (
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/nikahq/nika/workflow"
)

// The task graph's geometry, in SVG user units (CSS pixels at scale 1).
const (
	graphPad   = 16
	nodeWidth  = 168
	nodeHeight = 30
	gapX       = 64 // between waves, where the edges run
	gapY       = 12
	labelRunes = 20 // longer ids are cut; the full id is the node's title
)

// graphNode is one task placed in the layout.
type graphNode struct {
	id, verb string
	wave     int
	row      int
}

// graphLayout is a workflow's task graph laid out by waves: one column per wave (dag's waves, so
// a task is to the right of everything it depends on), its tasks in rows.
type graphLayout struct {
	nodes         []graphNode    // declaration order
	at            map[string]int // id -> index in nodes
	edges         [][2]int       // [dependency, dependent] node indices
	width, height int
}

// layoutGraph places the tasks. Inside a wave, a task's row follows the mean row of its
// dependencies (one barycentre pass, wave by wave, ties by declaration order), which keeps most
// edges short and level without an optimiser: O(V + E) and deterministic.
func layoutGraph(w *workflow.Workflow) *graphLayout {
	g := &graphLayout{at: make(map[string]int, len(w.Tasks))}
	for _, t := range w.Tasks {
		g.at[t.ID] = len(g.nodes)
		g.nodes = append(g.nodes, graphNode{id: t.ID, verb: t.Verb})
	}
	for _, t := range w.Tasks {
		for _, d := range w.Graph.Deps(t.ID) {
			if di, ok := g.at[d]; ok {
				g.edges = append(g.edges, [2]int{di, g.at[t.ID]})
			}
		}
	}
	tallest := 0
	for k, wave := range w.Waves {
		type keyed struct {
			node int
			key  float64
		}
		ks := make([]keyed, 0, len(wave))
		for _, t := range wave {
			i := g.at[t.ID]
			g.nodes[i].wave = k
			key, n := 0.0, 0
			for _, d := range w.Graph.Deps(t.ID) {
				if di, ok := g.at[d]; ok {
					key += float64(g.nodes[di].row)
					n++
				}
			}
			if n > 0 {
				key /= float64(n)
			} else {
				key = float64(len(ks))
			}
			ks = append(ks, keyed{i, key})
		}
		slices.SortStableFunc(ks, func(a, b keyed) int {
			switch {
			case a.key < b.key:
				return -1
			case a.key > b.key:
				return 1
			}
			return a.node - b.node
		})
		for row, kv := range ks {
			g.nodes[kv.node].row = row
		}
		tallest = max(tallest, len(wave))
	}
	g.width = 2*graphPad + len(w.Waves)*nodeWidth + max(len(w.Waves)-1, 0)*gapX
	g.height = 2*graphPad + tallest*nodeHeight + max(tallest-1, 0)*gapY
	return g
}

func nodeX(n graphNode) int { return graphPad + n.wave*(nodeWidth+gapX) }
func nodeY(n graphNode) int { return graphPad + n.row*(nodeHeight+gapY) }

// svg draws the layout with each task's state as its class (st-<state>; pending without one);
// a node is a link to its task panel, so the graph works, and is keyboard navigable, without
// script. Every id is escaped.
func (g *graphLayout) svg(runID string, states map[string]string, selected string) template.HTML {
	var b strings.Builder
	b.Grow(256*len(g.nodes) + 96*len(g.edges))
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="graph" role="group" aria-label="Task graph" width="`)
	b.WriteString(strconv.Itoa(g.width))
	b.WriteString(`" height="`)
	b.WriteString(strconv.Itoa(g.height))
	b.WriteString(`" viewBox="0 0 `)
	b.WriteString(strconv.Itoa(g.width) + " " + strconv.Itoa(g.height))
	b.WriteString(`"><defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z"/></marker></defs><g class="edges">`)
	for _, e := range g.edges {
		from, to := g.nodes[e[0]], g.nodes[e[1]]
		x1, y1 := nodeX(from)+nodeWidth, nodeY(from)+nodeHeight/2
		x2, y2 := nodeX(to), nodeY(to)+nodeHeight/2
		mid := (x1 + x2) / 2
		b.WriteString(`<path data-from="`)
		template.HTMLEscape(&b, []byte(from.id))
		b.WriteString(`" data-to="`)
		template.HTMLEscape(&b, []byte(to.id))
		b.WriteString(`" d="M`)
		writeInts(&b, x1, y1)
		b.WriteString(" C")
		writeInts(&b, mid, y1, mid, y2, x2, y2)
		b.WriteString(`" marker-end="url(#arrow)"/>`)
	}
	b.WriteString(`</g><g class="nodes">`)
	base := "/runs/" + url.PathEscape(runID) + "?task="
	for _, n := range g.nodes {
		st := states[n.id]
		if st == "" {
			st = "pending"
		}
		x, y := nodeX(n), nodeY(n)
		b.WriteString(`<a class="node st-`)
		b.WriteString(st)
		if n.id == selected {
			b.WriteString(` selected`)
		}
		b.WriteString(`" href="`)
		template.HTMLEscape(&b, []byte(base+url.QueryEscape(n.id)+"#task"))
		b.WriteString(`" data-task="`)
		template.HTMLEscape(&b, []byte(n.id))
		b.WriteString(`"><title>`)
		template.HTMLEscape(&b, []byte(n.id+" ("+n.verb+"): "+st))
		b.WriteString(`</title><rect x="`)
		b.WriteString(strconv.Itoa(x))
		b.WriteString(`" y="`)
		b.WriteString(strconv.Itoa(y))
		b.WriteString(`" width="` + strconv.Itoa(nodeWidth) + `" height="` + strconv.Itoa(nodeHeight) + `" rx="5"/><text x="`)
		b.WriteString(strconv.Itoa(x + 10))
		b.WriteString(`" y="`)
		b.WriteString(strconv.Itoa(y + nodeHeight/2 + 5))
		b.WriteString(`">`)
		template.HTMLEscape(&b, []byte(cut(n.id, labelRunes)))
		b.WriteString(`</text></a>`)
	}
	b.WriteString(`</g></svg>`)
	return template.HTML(b.String())
}

func writeInts(b *strings.Builder, v ...int) {
	for i, x := range v {
		switch {
		case i%2 == 1: // x,y
			b.WriteByte(',')
		case i > 0: // between points
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(x))
	}
}

// cut shortens s to n runes, an ellipsis marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
