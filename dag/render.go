package dag

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/dominikbraun/graph/draw"
)

// The renderers draw the depends_on edges only, in execution direction: an
// arrow from a dependency to its dependent. Nodes come in declaration order,
// edges in Edges order (by the dependent's declaration index, then its
// depends_on order), so the output is a function of the workflow alone.

// WriteDOT writes the graph in Graphviz DOT through draw.DOT.
//
// draw.DOT ranges over the library's adjacency maps, so its statements come
// in a different order on every call, and it writes vertex hashes unquoted
// and unescaped into its template. The store's hashes are declaration
// indices, so each statement is parsed back to its indices, the statements
// are sorted, and the indices are replaced by the escaped task ids; the rest
// of each statement (the attribute list) is kept as draw.DOT wrote it, and
// the template's blank lines are dropped.
func (g *Graph) WriteDOT(w io.Writer) error {
	var buf bytes.Buffer
	if err := draw.DOT(g.store, &buf); err != nil {
		return err
	}
	rank := make(map[[2]int]int) // [dependency, dependent] -> position in Edges order
	for i, d := range g.deps {
		for _, j := range d {
			rank[[2]int{j, i}] = len(rank)
		}
	}
	var head, tail []string
	var stmts []dotStatement
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "":
		case strings.HasPrefix(t, `"`):
			s, err := parseDOTStatement(t)
			if err != nil {
				return err
			}
			if s.from >= len(g.ids) || s.to >= len(g.ids) {
				return fmt.Errorf("dag: draw.DOT statement names an unknown vertex: %q", t)
			}
			stmts = append(stmts, s)
		case len(stmts) == 0:
			head = append(head, line)
		default:
			tail = append(tail, line)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.SortFunc(stmts, func(a, b dotStatement) int {
		an, bn := a.to < 0, b.to < 0
		switch {
		case an && bn:
			return cmp.Compare(a.from, b.from)
		case an:
			return -1
		case bn:
			return 1
		}
		return cmp.Compare(rank[[2]int{a.from, a.to}], rank[[2]int{b.from, b.to}])
	})
	var out bytes.Buffer
	for _, l := range head {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	for _, s := range stmts {
		out.WriteByte('\t')
		out.WriteString(dotID(g.ids[s.from]))
		if s.to >= 0 {
			out.WriteString(" -> ")
			out.WriteString(dotID(g.ids[s.to]))
		}
		// The library writes a zero weight on every statement; it means
		// nothing for a task graph.
		out.WriteString(strings.Replace(s.rest, " [  weight=0 ]", "", 1))
		out.WriteByte('\n')
	}
	for _, l := range tail {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	_, err := w.Write(out.Bytes())
	return err
}

// dotStatement is one statement of draw.DOT's output.
type dotStatement struct {
	from, to int    // declaration indices; to == -1 for a node statement
	rest     string // what follows the ids: the attribute list and ";"
}

// parseDOTStatement reads `"3" [ ... ];` or `"3" -> "7" [ ... ];` as
// draw.DOT writes them with integer hashes.
func parseDOTStatement(t string) (dotStatement, error) {
	s := dotStatement{to: -1}
	from, rest, ok := quotedInt(t)
	if !ok {
		return s, fmt.Errorf("dag: unexpected draw.DOT statement %q", t)
	}
	s.from = from
	if r, ok := strings.CutPrefix(rest, " -> "); ok {
		to, rest2, ok := quotedInt(r)
		if !ok {
			return s, fmt.Errorf("dag: unexpected draw.DOT statement %q", t)
		}
		s.to, rest = to, rest2
	}
	s.rest = rest
	return s, nil
}

// quotedInt reads a leading `"H"`, a vertex hash, and returns its declaration
// index and what follows it.
func quotedInt(t string) (int, string, bool) {
	if !strings.HasPrefix(t, `"`) {
		return 0, "", false
	}
	end := strings.IndexByte(t[1:], '"')
	if end < 0 {
		return 0, "", false
	}
	h, err := strconv.Atoi(t[1 : 1+end])
	if err != nil || h < 1 {
		return 0, "", false
	}
	return unhash(h), t[2+end:], true
}

// dotID quotes a task id as a DOT string: only `"` needs a backslash there,
// and a backslash or line break is escaped so that any id stays one token.
func dotID(id string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(id) + `"`
}

// WriteMermaid writes the graph as a Mermaid flowchart: "flowchart TD", one
// node per task in declaration order, then one edge per depends_on edge from
// the dependency to the dependent.
//
// Node ids are n<declaration index> with the task id as a quoted label,
// because a task id is not always a valid Mermaid id: "end" closes a
// subgraph, and ids starting with "o" or "x" can merge into an arrow.
func (g *Graph) WriteMermaid(w io.Writer) error {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i, id := range g.ids {
		fmt.Fprintf(&b, "    n%d[\"%s\"]\n", i, mermaidLabel(id))
	}
	for i, d := range g.deps {
		for _, j := range d {
			fmt.Fprintf(&b, "    n%d --> n%d\n", j, i)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mermaidLabel escapes a label with Mermaid's entity codes; '#' first, since
// the codes themselves start with it.
func mermaidLabel(s string) string {
	r := strings.NewReplacer("#", "#35;", `"`, "#quot;", "\n", " ", "\r", " ")
	return r.Replace(s)
}

// JSON is the graph as `nika graph --format json` prints it.
type JSON struct {
	Nodes []JSONNode `json:"nodes"` // every task, in declaration order
	Edges []JSONEdge `json:"edges"` // in Edges order
	Order []string   `json:"order"` // the canonical order (Order)
	Waves [][]string `json:"waves"` // Waves
}

// JSONNode is one task and its wave (-1 on or after a cycle, see Wave).
type JSONNode struct {
	ID   string `json:"id"`
	Wave int    `json:"wave"`
}

// JSONEdge is one depends_on edge in execution direction: From is the
// dependency, To the dependent (To depends on From). This is the reverse of
// an Edges pair.
type JSONEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// JSON returns the graph as a value to marshal. Every slice is non-nil, so an
// empty graph encodes as empty arrays rather than nulls.
func (g *Graph) JSON() JSON {
	r := g.waveData()
	j := JSON{
		Nodes: make([]JSONNode, len(g.ids)),
		Edges: []JSONEdge{},
		Order: g.names(r.order),
		Waves: g.Waves(),
	}
	for i, id := range g.ids {
		j.Nodes[i] = JSONNode{ID: id, Wave: r.wave[i]}
	}
	for _, e := range g.Edges() {
		j.Edges = append(j.Edges, JSONEdge{From: e[1], To: e[0]})
	}
	return j
}
