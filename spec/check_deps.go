package spec

import (
	"fmt"
	"strings"

	"github.com/nikahq/nika/dag"
)

// recoverRef is one `tasks.X` read inside on_error.recover: not an edge, but
// a wait that can deadlock (D2).
type recoverRef struct {
	from *taskState
	to   string
	pos  Pos
	path string
}

// deps builds the one task graph (D11) and reports unknown ids and cycles.
func (c *checker) deps() {
	g := dag.New(c.taskIDs)
	for _, t := range c.tasks {
		if t.ID == "" || c.taskByID[t.ID] != t {
			continue
		}
		for _, d := range t.DependsOn {
			g.DependsOn(t.ID, d)
		}
	}
	for _, u := range g.Unknown() {
		t := c.taskByID[u.From]
		n := t.depNodes[u.To]
		c.errorf(CodeDAGUnknown, n, fmt.Sprintf("%s.depends_on[%d]", t.path, depIndex(t, u.To)),
			"Name a task declared in this file."+didYouMean(u.To, without(c.taskIDs, t.ID)), "`%s` depends on unknown task `%s`", t.ID, u.To)
	}
	for _, cy := range g.Cycles() {
		closing := c.taskByID[cy.Closing]
		n := closing.depNodes[cy.Path[0]]
		c.errorf(CodeDAGCycle, n, fmt.Sprintf("%s.depends_on[%d]", closing.path, depIndex(closing, cy.Path[0])),
			"Break the cycle by removing one of these `depends_on` entries: "+cy.String()+".",
			"dependency cycle: %s", cy.String())
	}
	c.a.Graph = g
}

func depIndex(t *taskState, dep string) int { return t.depIdx[dep] }

// without returns list minus one element, for suggestions that must not
// name the task itself.
func without(list []string, drop string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// recoverCycles reports D2 deadlocks once recover references are known.
func (c *checker) recoverCycles() {
	g := c.a.Graph
	if g == nil || len(c.recoverRefs) == 0 {
		return
	}
	first := map[[2]string]recoverRef{}
	for _, r := range c.recoverRefs {
		k := [2]string{r.from.ID, r.to}
		if _, ok := first[k]; !ok {
			first[k] = r
			g.Recovers(r.from.ID, r.to)
		}
	}
	for _, rc := range g.RecoverCycles() {
		r, ok := first[[2]string{rc.Task, rc.Target}]
		if !ok {
			continue
		}
		detail := fmt.Sprintf("`%s` would wait for `%s`, which waits for `%s`: recover from a task that does not depend on `%s`.", rc.Task, rc.Target, rc.Task, rc.Task)
		if rc.Target == rc.Task {
			detail = "A task cannot recover from its own record: read another task, or use a literal value."
		}
		c.errorAt(CodeDAGDeadlock, r.pos, r.path, detail,
			fmt.Sprintf("`on_error.recover` of `%s` deadlocks: %s", rc.Task, strings.Join(rc.Path, " -> ")))
	}
}
