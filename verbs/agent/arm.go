package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/router"
	"github.com/nikahq/nika/verbs/internal/fields"
	"github.com/nikahq/nika/workflow"
)

// run is the driver's state of one attempt, owned by the goroutine that runs the job.
type run struct {
	v      *Verb
	job    workflow.Job
	prov   provider.Provider
	arming core.Arming
	loop   *core.Loop
	byName map[string]provider.ToolDef // the universe by name: lookups only
	obs    Observer                    // nil = none; this run's only
	turn   int                         // the turn of the core's last request, for live notes
}

// arm is AGENT.md §3: parameters, schema, whitelist, universe, model, budgets, then the core,
// which builds the router and the guard.
func (v *Verb) arm(ctx context.Context, job workflow.Job) (*run, *spec.Error) {
	r := &run{v: v, job: job}
	a := &r.arming
	a.Model, a.Router, a.Guard = job.Model, v.Config.Router, v.Config.Guard
	if job.Permits != nil {
		a.Permits = &core.Permits{Tools: job.Permits.Tools}
	}
	if err := armFields(a, job.Fields); err != nil {
		return nil, err
	}
	if err := (dispatch.Config{MaxParallel: v.Config.MaxParallelTools, CallTimeout: v.Config.ToolTimeout}).Validate(); err != nil {
		return nil, apiErr("max_parallel_tools", "%v", err)
	}
	if doc, ok := job.Fields["schema"]; ok && doc != nil {
		if _, err := core.CompileSchema(doc); err != nil {
			return nil, err
		}
		a.Schema = doc
	}
	if err := r.buildUniverse(ctx); err != nil {
		return nil, err
	}
	if job.Model == "" {
		return nil, paramErr("model", "no model resolves for this task")
	}
	if v.Providers == nil {
		return nil, apiErr("model", "no model providers are configured")
	}
	p, ferr := v.Providers.For(job.Model)
	if ferr != nil {
		return nil, paramErr("model", "%s", ferr.Message)
	}
	r.prov = p
	if ns, ok := p.(provider.NativeSchema); ok && ns.SupportsSchema(job.Model) {
		a.Native = true
	}
	l, err := core.New(*a)
	if err != nil {
		return nil, err
	}
	r.loop = l
	return r, nil
}

// armFields reads the task's fields (§1.1) into a.
func armFields(a *core.Arming, f map[string]any) *spec.Error {
	prompt, ok, err := fields.String(f, "prompt")
	switch {
	case err != nil:
		return paramErr("prompt", "%s", err.Message)
	case !ok || strings.TrimSpace(prompt) == "":
		return paramErr("prompt", "`prompt` is empty after evaluation")
	}
	a.Prompt = prompt
	if a.System, _, err = fields.String(f, "system"); err != nil {
		return paramErr("system", "%s", err.Message)
	}
	if n, ok, err := fields.Integer(f, "max_turns"); err != nil {
		return paramErr("max_turns", "%s", err.Message)
	} else if ok {
		if n < 1 || n > MaxMaxTurns {
			return paramErr("max_turns", "must be from 1 to %d, not %d", MaxMaxTurns, n)
		}
		a.MaxTurns, a.Blame = n, core.BlameCaller
	} else {
		a.MaxTurns, a.Blame = DefaultMaxTurns, core.BlameContract
	}
	if n, ok, err := fields.Integer(f, "max_tokens_total"); err != nil {
		return paramErr("max_tokens_total", "%s", err.Message)
	} else if ok {
		if n < 1 {
			return paramErr("max_tokens_total", "must be a positive integer, not %d", n)
		}
		a.MaxTokens = n
	}
	if t, ok, err := fields.Number(f, "temperature"); err != nil {
		return paramErr("temperature", "%s", err.Message)
	} else if ok {
		if t < 0 || t > 2 {
			return paramErr("temperature", "must be from 0 to 2, not %v", t)
		}
		a.Temperature = &t
	}
	globs, perr := toolGlobs(f["tools"])
	if perr != nil {
		return perr
	}
	a.Tools = globs
	return nil
}

func toolGlobs(x any) ([]string, *spec.Error) {
	switch l := x.(type) {
	case nil:
		return nil, nil
	case []string:
		return append([]string(nil), l...), nil
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, paramErr("tools", "entry %d is %s, not a string", i, fields.KindOf(e))
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, paramErr("tools", "must be a list of tool globs, not %s", fields.KindOf(x))
}

// buildUniverse is §3.1: the builtins of this build and the MCP tools of the servers the
// whitelist and permits.tools can reach, as one list sorted by name (§2), minus loop-owned,
// denied, unclean and duplicate names, then the synthesized nika:done and nika:compose,
// stable-sorted by author rank. A server whose tools cannot be listed fails the arming with
// NIKA-AGENT-006, transient when the source's error is.
func (r *run) buildUniverse(ctx context.Context) *spec.Error {
	a := &r.arming
	r.byName = map[string]provider.ToolDef{}
	if len(a.Tools) == 0 {
		return nil
	}
	bs := catalog.All() // sorted by name
	var u []provider.ToolDef
	add := func(d provider.ToolDef) {
		r.byName[d.Name] = d
		u = append(u, d)
	}
	for _, b := range bs {
		n := b.Name
		if n == router.NameDone || n == router.NameCompose || b.AgentOnly || !a.Admits(n) || !core.Clean(n) {
			continue
		}
		if _, dup := r.byName[n]; dup || r.v.Builtins == nil || !r.v.Builtins.Has(n) {
			continue
		}
		add(provider.ToolDef{Name: n, Description: b.Description, Parameters: b.Params})
	}
	mcpDefs, err := r.mcpDefs(ctx)
	if err != nil {
		return err
	}
	for _, d := range mcpDefs {
		if d.Name == router.NameDone || d.Name == router.NameCompose || !a.Admits(d.Name) || !core.Clean(d.Name) {
			continue
		}
		if _, dup := r.byName[d.Name]; dup {
			continue
		}
		add(provider.ToolDef{Name: d.Name, Description: d.Description, Parameters: d.Params})
	}
	// AGENT.md §2: the builtins and the MCP tools form one list sorted by name (mcp: before
	// nika:); author rank (below) then reorders it by the whitelist.
	sort.SliceStable(u, func(i, j int) bool { return u[i].Name < u[j].Name })
	for _, n := range []string{router.NameDone, router.NameCompose} {
		if !a.Admits(n) {
			continue
		}
		if b, ok := catalog.Lookup(n); ok {
			add(provider.ToolDef{Name: n, Description: b.Description, Parameters: b.Params})
		}
	}
	sort.SliceStable(u, func(i, j int) bool { return a.Rank(u[i].Name) < a.Rank(u[j].Name) })
	a.Universe = u
	return nil
}

// mcpDefs lists the tools of every registered server that some glob of the whitelist (and of
// permits.tools, when the workflow has permits) can reach, sorted by name. Servers no glob can
// reach are neither started nor listed. A source whose registry cannot be used (tools.Broken)
// fails the arming when the globs can reach some mcp: tool.
func (r *run) mcpDefs(ctx context.Context) ([]tools.Def, *spec.Error) {
	src := r.v.Tools
	if src == nil {
		return nil, nil
	}
	globs := r.arming.Tools
	failed := func(msg string, details map[string]any, err error) *spec.Error {
		details["detail"] = err.Error()
		e := spec.NewError(CodeDefs, msg, details).Wrap(err)
		var se *spec.Error
		e.Transient = errors.As(err, &se) && se.Transient
		return e
	}
	if b, ok := src.(tools.Broken); ok && tools.CanAdmitMCP(globs) && (r.job.Permits == nil || tools.CanAdmitMCP(r.job.Permits.Tools)) {
		if err := b.Err(); err != nil {
			return nil, failed(fmt.Sprintf("the MCP tools could not be listed: %v", err), map[string]any{}, err)
		}
	}
	var out []tools.Def
	for _, s := range src.Servers() {
		if !tools.CanAdmitServer(globs, s) || r.job.Permits != nil && !tools.CanAdmitServer(r.job.Permits.Tools, s) {
			continue
		}
		defs, err := src.List(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fields.Cancelled(ctx, err)
			}
			return nil, failed(fmt.Sprintf("the tools of MCP server %q could not be listed: %v", s, err), map[string]any{"server": s}, err)
		}
		out = append(out, defs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
