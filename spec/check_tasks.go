package spec

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nikahq/nika/spec/jq"
)

var taskKeys = []string{"id", "depends_on", "when", "for_each", "max_parallel", "fail_fast", "retry", "timeout",
	"on_error", "on_finally", "with", "output", "infer", "exec", "invoke", "agent"}

var verbs = []string{"infer", "exec", "invoke", "agent"}

// reservedBindings are record fields a binding may not shadow (§3.6).
var reservedBindings = []string{"output", "status", "error", "started_at", "ended_at", "duration_ms"}

func (c *checker) taskList(n *Node) {
	v := deref(n)
	if v.Kind == KindNull {
		c.errorf(CodeParseMissing, n, "tasks", "Add at least one task: `- id: first` with one verb (infer, exec, invoke or agent).", "`tasks` is empty")
		return
	}
	if v.Kind == KindMap {
		c.errorf(CodeParseShape, n, "tasks", "`tasks` is a list of `- id:` items: write each task as `- id: name` followed by its fields.",
			"`tasks` must be a list, not a mapping")
		return
	}
	if v.Kind != KindSeq {
		c.errorf(CodeParseShape, n, "tasks", "Write `tasks:` as a list of `- id: …` items.", "`tasks` must be a list, not %s", kindName(n))
		return
	}
	if len(v.Items) == 0 {
		c.errorf(CodeParseMissing, n, "tasks", "Add at least one task: `- id: first` with one verb (infer, exec, invoke or agent).", "`tasks` is empty")
		return
	}
	// First pass: ids, so that references can be resolved in any order.
	for i, item := range v.Items {
		path := pathIndex("tasks", i)
		t := &taskState{Task: &Task{Index: i, Node: item}, path: path, node: deref(item),
			depNodes: map[string]*Node{}, depIdx: map[string]int{}, withKeys: map[string]*Node{}, withUsed: map[string]bool{}, bindings: map[string]bool{}}
		if t.node.Kind != KindMap {
			c.errorf(CodeParseShape, item, path, "Write each task as a mapping: `- id: name` followed by its fields.", "a task must be a mapping, not %s", kindName(item))
			continue
		}
		c.tasks = append(c.tasks, t)
		idn := t.node.Get("id")
		if idn == nil {
			c.errorf(CodeParseTaskID, t.node, path, "Add `id: <name>` to the task (lower-case letters, digits and `_`).", "task has no `id`")
			t.bad = true
			continue
		}
		t.idNode = idn
		if !c.literal(idn, path+".id", "`id`") {
			t.bad = true
			continue
		}
		d := deref(idn)
		if d.Kind != KindString || !reTaskID.MatchString(d.Str) {
			c.errorf(CodeParseTaskID, idn, path+".id", "Use a lower-case letter, then lower-case letters, digits and `_` (e.g. `fetch_page`).",
				"bad task id %s", quoteNode(d))
			t.bad = true
			continue
		}
		if first, dup := c.taskByID[d.Str]; dup {
			at := idn
			if d == deref(first.idNode) { // the same node again, through an alias
				at = item
			}
			c.errorf(CodeParseDuplicateID, at, path+".id", fmt.Sprintf("Task ids are unique: rename this one (the first `%s` is at %s).", d.Str, first.idNode.Pos),
				"duplicate task id `%s`", d.Str)
			t.bad = true
			continue
		}
		t.ID = d.Str
		c.taskByID[t.ID] = t
		c.taskIDs = append(c.taskIDs, t.ID)
	}
	for _, t := range c.tasks {
		c.task(t)
		if t.ID != "" && !t.bad {
			c.a.Tasks = append(c.a.Tasks, t.Task)
		}
	}
}

func (c *checker) task(t *taskState) {
	m := t.node
	c.unknownKeys(m, t.path, "a task", taskKeys, taskHints)
	// Verb: exactly one.
	var verbPairs []*Pair
	for _, p := range m.Pairs {
		if contains(verbs, p.Key.Str) {
			verbPairs = append(verbPairs, p)
		}
	}
	switch len(verbPairs) {
	case 0:
		c.errorf(CodeParseNoVerb, m, t.path, "Add exactly one verb: `infer`, `exec`, `invoke` or `agent`.", "task `%s` has no verb", t.ID)
		t.bad = true
	case 1:
	default:
		names := make([]string, len(verbPairs))
		for i, p := range verbPairs {
			names[i] = p.Key.Str
		}
		c.errorf(CodeParseManyVerbs, verbPairs[1].Key, pathKey(t.path, verbPairs[1].Key.Str),
			fmt.Sprintf("Keep one verb per task (found %s): split the task into several tasks joined by `depends_on`.", strings.Join(names, ", ")),
			"task `%s` has several verbs", t.ID)
		t.bad = true
	}
	c.dependsOn(t)
	if fe := m.Pair("for_each"); fe != nil {
		t.forEach = true
		c.forEach(t, fe.Value)
	}
	for _, k := range []string{"max_parallel", "fail_fast"} {
		p := m.Pair(k)
		if p == nil {
			continue
		}
		if !t.forEach {
			c.errorf(CodeParseShape, p.Key, pathKey(t.path, k), fmt.Sprintf("Remove `%s`, or add `for_each`: it applies only to for_each tasks.", k), "`%s` is allowed only with `for_each`", k)
			continue
		}
		if !c.literal(p.Value, pathKey(t.path, k), "`"+k+"`") {
			continue
		}
		v := deref(p.Value)
		if k == "max_parallel" {
			if v.Kind != KindInt || v.Int < 1 {
				c.errorf(CodeParseShape, p.Value, pathKey(t.path, k), "Write an integer ≥ 1 (1 runs the iterations one at a time).", "`max_parallel` must be an integer ≥ 1")
			} else {
				t.MaxParallel = int(v.Int)
			}
		} else if v.Kind != KindBool {
			c.errorf(CodeParseShape, p.Value, pathKey(t.path, k), "Write `fail_fast: true` or `fail_fast: false`.", "`fail_fast` must be a boolean")
		}
	}
	t.FailFast = true
	if v := m.Get("fail_fast"); v != nil && deref(v).Kind == KindBool {
		t.FailFast = deref(v).Bool
	}
	if w := m.Pair("when"); w != nil {
		c.when(t, w.Value)
	}
	if r := m.Get("retry"); r != nil {
		t.Retry = c.retry(r, t.path+".retry")
	}
	if to := m.Get("timeout"); to != nil {
		t.Timeout = c.timeout(to, t.path+".timeout")
	}
	if w := m.Get("with"); w != nil {
		c.with(t, w)
	}
	if o := m.Get("output"); o != nil {
		c.bindingsOf(t, o)
	}
	if oe := m.Get("on_error"); oe != nil {
		c.onError(t, oe)
	}
	if len(verbPairs) == 1 {
		p := verbPairs[0]
		t.Verb = p.Key.Str
		t.Body = c.verb(t, p, pathKey(t.path, p.Key.Str), siteBody)
	}
	if of := m.Get("on_finally"); of != nil {
		c.onFinally(t, of)
	}
}

func (c *checker) dependsOn(t *taskState) {
	n := t.node.Get("depends_on")
	if n == nil || deref(n).Kind == KindNull {
		return
	}
	path := t.path + ".depends_on"
	v := deref(n)
	if v.Kind != KindSeq {
		c.errorf(CodeParseShape, n, path, "Write `depends_on` as a list of task ids, e.g. `depends_on: [fetch]`.", "`depends_on` must be a list, not %s", kindName(n))
		return
	}
	for i, item := range v.Items {
		ip := pathIndex(path, i)
		if !c.literal(item, ip, "`depends_on`") {
			continue
		}
		d := deref(item)
		if d.Kind != KindString {
			c.errorf(CodeParseShape, item, ip, "Write the id of a task as a string.", "a `depends_on` entry must be a task id, not %s", kindName(item))
			continue
		}
		if _, dup := t.depNodes[d.Str]; dup {
			c.errorf(CodeParseShape, item, ip, fmt.Sprintf("Remove the second `%s`.", d.Str), "`%s` is listed twice in `depends_on`", d.Str)
			continue
		}
		t.depNodes[d.Str] = item
		t.depIdx[d.Str] = i
		t.DependsOn = append(t.DependsOn, d.Str)
	}
}

func (c *checker) when(t *taskState, n *Node) {
	path := t.path + ".when"
	v := deref(n)
	switch v.Kind {
	case KindBool:
		t.When = v.Bool
	case KindString:
		tmpl := c.template(n, path, siteWhen, t)
		if tmpl != nil {
			t.When = tmpl
		}
	default:
		c.errorf(CodeParseShape, n, path, "Write `when: true`, `when: false`, or one expression such as `when: ${{ tasks.a.status == 'success' }}`.",
			"`when` must be a boolean or an expression, not %s", kindName(n))
	}
}

func (c *checker) forEach(t *taskState, n *Node) {
	path := t.path + ".for_each"
	v := deref(n)
	switch v.Kind {
	case KindSeq:
		t.ForEach = c.dataValue(n, path, siteForEachItem, t)
	case KindString:
		if tmpl := c.template(n, path, siteForEach, t); tmpl != nil {
			t.ForEach = tmpl
		}
	default:
		c.errorf(CodeParseShape, n, path, "Write `for_each` as a list, or as one expression that yields a list: `for_each: ${{ vars.items }}`.",
			"`for_each` must be a list or an expression, not %s", kindName(n))
	}
}

var strategies = []string{"fixed", "linear", "exponential"}

func (c *checker) retry(n *Node, path string) *Retry {
	v := deref(n)
	if v.Kind != KindMap {
		c.errorf(CodeParseRetry, n, path, "Write `retry: { max_attempts: 3 }` (and optionally backoff_ms, backoff_strategy, backoff_max_ms, jitter, on_codes).",
			"`retry` must be a mapping, not %s", kindName(n))
		return nil
	}
	c.checkKeys(v, path, "`retry`", []string{"max_attempts", "backoff_ms", "backoff_strategy", "backoff_max_ms", "jitter", "on_codes"}, CodeParseUnknownField)
	r := &Retry{BackoffMS: 1000, Strategy: "exponential", BackoffMaxMS: 60000, Jitter: true}
	ok := true
	intField := func(key string, min int64, def int) int {
		f := v.Get(key)
		if f == nil {
			return def
		}
		if !c.literal(f, path+"."+key, "`"+key+"`") {
			ok = false
			return def
		}
		d := deref(f)
		if d.Kind != KindInt || d.Int < min || d.Int > 1<<31 {
			c.errorf(CodeParseRetry, f, path+"."+key, fmt.Sprintf("Write `%s` as an integer ≥ %d.", key, min), "`%s` must be an integer ≥ %d", key, min)
			ok = false
			return def
		}
		return int(d.Int)
	}
	if v.Get("max_attempts") == nil {
		c.errorf(CodeParseRetry, v, path, "Add `max_attempts` (the total number of attempts, ≥ 1).", "`retry` needs `max_attempts`")
		ok = false
	} else {
		r.MaxAttempts = intField("max_attempts", 1, 1)
	}
	r.BackoffMS = intField("backoff_ms", 0, 1000)
	r.BackoffMaxMS = intField("backoff_max_ms", 0, 60000)
	if f := v.Get("backoff_max_ms"); f != nil && ok && r.BackoffMaxMS < r.BackoffMS {
		def := ""
		if v.Get("backoff_ms") == nil {
			def = ", the default"
		}
		c.errorf(CodeParseRetry, f, path+".backoff_max_ms", fmt.Sprintf("Make `backoff_max_ms` at least `backoff_ms` (%d%s), or lower `backoff_ms`.", r.BackoffMS, def), "`backoff_max_ms` is below `backoff_ms`")
		ok = false
	}
	if f := v.Get("backoff_strategy"); f != nil && c.literal(f, path+".backoff_strategy", "`backoff_strategy`") {
		d := deref(f)
		if d.Kind != KindString || !contains(strategies, d.Str) {
			c.errorf(CodeParseRetry, f, path+".backoff_strategy", "Use `fixed`, `linear` or `exponential`."+didYouMean(d.Str, strategies), "unknown backoff strategy %s", quoteNode(d))
			ok = false
		} else {
			r.Strategy = d.Str
		}
	}
	if f := v.Get("jitter"); f != nil && c.literal(f, path+".jitter", "`jitter`") {
		if d := deref(f); d.Kind != KindBool {
			c.errorf(CodeParseRetry, f, path+".jitter", "Write `jitter: true` or `jitter: false`.", "`jitter` must be a boolean")
			ok = false
		} else {
			r.Jitter = d.Bool
		}
	}
	if f := v.Get("on_codes"); f != nil {
		codes, good := c.onCodes(f, path+".on_codes", CodeParseRetry, true)
		r.OnCodes = codes
		ok = ok && good
	}
	if !ok {
		return nil
	}
	return r
}

// onCodes checks a non-empty list of well-formed codes. Under retry,
// TIMEOUT-001 and CANCEL-001 are refused (they are never retried).
func (c *checker) onCodes(n *Node, path, code string, isRetry bool) ([]string, bool) {
	v := deref(n)
	if v.Kind != KindSeq || len(v.Items) == 0 {
		c.errorf(code, n, path, "Write `on_codes` as a non-empty list of codes, e.g. `[NIKA-BUILTIN-FETCH-002]`.", "`on_codes` must be a non-empty list of codes")
		return nil, false
	}
	var out []string
	ok := true
	for i, it := range v.Items {
		ip := pathIndex(path, i)
		if !c.literal(it, ip, "`on_codes`") {
			ok = false
			continue
		}
		d := deref(it)
		if d.Kind != KindString || !WellFormedCode(d.Str) {
			c.errorf(code, it, ip, "Write a code such as `NIKA-EXEC-001` (see `nika explain`).", "malformed code %s", quoteNode(d))
			ok = false
			continue
		}
		if isRetry && (d.Str == CodeTimeout || d.Str == CodeCancel) {
			c.errorf(code, it, ip, fmt.Sprintf("Remove `%s`: timeouts and cancellations are never retried; handle them with `on_error`.", d.Str), "`%s` cannot be retried", d.Str)
			ok = false
			continue
		}
		out = append(out, d.Str)
	}
	return out, ok
}

var reDuration = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)
var reDurationPart = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)`)

var unitRank = map[string]int{"h": 0, "m": 1, "s": 2, "ms": 3, "us": 4, "µs": 4, "ns": 5}

// parseTimeout checks the duration grammar of §3.9: units strictly
// descending, each at most once, 0 < value ≤ 24h.
func parseTimeout(s string) (time.Duration, string) {
	if !reDuration.MatchString(s) {
		return 0, "it is not a duration such as `30s`, `5m` or `1h30m`"
	}
	last := -1
	for _, m := range reDurationPart.FindAllStringSubmatch(s, -1) {
		r := unitRank[m[2]]
		if r <= last {
			return 0, "units must be strictly descending and used once (`1h30m`, not `30m1h`)"
		}
		last = r
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, "it is not a valid duration"
	}
	if d <= 0 || d > 24*time.Hour {
		return 0, "it must be greater than 0 and at most 24h"
	}
	return d, ""
}

func (c *checker) timeout(n *Node, path string) time.Duration {
	if !c.literal(n, path, "`timeout`") {
		return 0
	}
	v := deref(n)
	if v.Kind != KindString {
		example := "30s"
		if v.Kind == KindInt && v.Int > 0 {
			example = fmt.Sprintf("%ds", v.Int)
		}
		c.errorf(CodeParseTimeout, n, path, fmt.Sprintf("Write a duration string with its unit, such as `timeout: \"%s\"`.", example), "`timeout` must be a duration string, not %s", withArticle(v.Kind.String()))
		return 0
	}
	d, why := parseTimeout(v.Str)
	if why != "" {
		c.errorf(CodeParseTimeout, n, path, "Write a Go duration with descending units, e.g. `90s`, `2m`, `1h30m` (at most 24h).", "bad timeout %q: %s", v.Str, why)
	}
	return d
}

func (c *checker) with(t *taskState, n *Node) {
	path := t.path + ".with"
	v := deref(n)
	if v.Kind == KindNull {
		return
	}
	if v.Kind != KindMap {
		c.errorf(CodeParseShape, n, path, "Write `with` as a mapping of names to values.", "`with` must be a mapping, not %s", kindName(n))
		return
	}
	for _, p := range v.Pairs {
		name := p.Key.Str
		kp := pathKey(path, name)
		if !isIdent(name) {
			c.errorf(CodeParseShape, p.Key, kp, "Rename it to an identifier: letters, digits and `_`, not starting with a digit.", "with name %q is not an identifier", name)
			continue
		}
		if _, dup := t.withKeys[name]; dup {
			continue // PARSE-017 already
		}
		t.withKeys[name] = p.Key
		t.With = append(t.With, NamedValue{Name: name, Value: c.dataValue(p.Value, kp, siteWith, t)})
	}
}

func (c *checker) bindingsOf(t *taskState, n *Node) {
	path := t.path + ".output"
	v := deref(n)
	if v.Kind == KindNull {
		return
	}
	if v.Kind != KindMap {
		c.errorf(CodeParseShape, n, path, "Write `output` as a mapping of names to jq programs, e.g. `output: { title: \".title\" }`.", "`output` must be a mapping, not %s", kindName(n))
		return
	}
	for _, p := range v.Pairs {
		name := p.Key.Str
		kp := pathKey(path, name)
		if !isIdent(name) {
			c.errorf(CodeParseShape, p.Key, kp, "Rename it to an identifier: letters, digits and `_`, not starting with a digit.", "binding name %q is not an identifier", name)
			continue
		}
		if contains(reservedBindings, name) {
			c.errorf(CodeParseReserved, p.Key, kp, fmt.Sprintf("Rename the binding: `%s` is a field of every task record (reserved: %s).", name, strings.Join(reservedBindings, ", ")),
				"`%s` is a reserved binding name", name)
			continue
		}
		t.bindings[name] = true
		d := deref(p.Value)
		if d.Kind != KindString {
			c.errorf(CodeParseShape, p.Value, kp, "Write the binding as a jq program in a string, e.g. `\".data.title\"`.", "binding `%s` must be a jq program string, not %s", name, kindName(p.Value))
			continue
		}
		if !c.literal(p.Value, kp, "a jq binding") {
			continue
		}
		prog, err := jq.Compile(d.Str)
		if err != nil {
			c.errorf(CodeVarStatic, p.Value, kp, "Fix the jq program; bindings are pure jq over the task's raw output (`.`), without variables, imports or impure builtins.",
				"jq binding `%s` does not compile: %s", name, oneLine(err.Error()))
			continue
		}
		t.Bindings = append(t.Bindings, &Binding{Name: name, Source: d.Str, Program: prog})
	}
}

func (c *checker) onError(t *taskState, n *Node) {
	path := t.path + ".on_error"
	v := deref(n)
	if v.Kind != KindMap {
		c.errorf(CodeParseOnError, n, path, "Write one of `on_error: { recover: … }`, `{ skip: true }` or `{ fail_workflow: true }`.", "`on_error` must be a mapping, not %s", kindName(n))
		return
	}
	c.checkKeys(v, path, "`on_error`", []string{"recover", "skip", "fail_workflow", "on_codes"}, CodeParseOnError)
	oe := &OnError{}
	var actions []*Pair
	for _, p := range v.Pairs {
		if contains([]string{"recover", "skip", "fail_workflow"}, p.Key.Str) {
			actions = append(actions, p)
		}
	}
	if len(actions) != 1 {
		at := v
		if len(actions) > 1 {
			at = actions[1].Key
		}
		c.errorf(CodeParseOnError, at, path, "Keep exactly one action: `recover: <value>`, `skip: true` or `fail_workflow: true`.", "`on_error` must have exactly one action, found %d", len(actions))
		return
	}
	a := actions[0]
	switch a.Key.Str {
	case "recover":
		oe.HasRecover = true
		t.hasRecov = true
		oe.Recover = c.dataValue(a.Value, path+".recover", siteRecover, t)
	case "skip", "fail_workflow":
		if d := deref(a.Value); d.Kind != KindBool || !d.Bool {
			c.errorf(CodeParseOnError, a.Value, path+"."+a.Key.Str, fmt.Sprintf("Write `%s: true` (remove `on_error` to fail the task normally).", a.Key.Str), "`%s` must be `true`", a.Key.Str)
			return
		}
		oe.Skip = a.Key.Str == "skip"
		oe.FailWorkflow = a.Key.Str == "fail_workflow"
	}
	if f := v.Get("on_codes"); f != nil {
		codes, ok := c.onCodes(f, path+".on_codes", CodeParseOnError, false)
		if !ok {
			return
		}
		oe.OnCodes = codes
	}
	t.OnError = oe
}

func (c *checker) onFinally(t *taskState, n *Node) {
	path := t.path + ".on_finally"
	v := deref(n)
	if v.Kind == KindNull {
		return
	}
	if v.Kind != KindSeq {
		c.errorf(CodeParseShape, n, path, "Write `on_finally` as a list of steps, each with one verb.", "`on_finally` must be a list, not %s", kindName(n))
		return
	}
	for i, item := range v.Items {
		ip := pathIndex(path, i)
		m := deref(item)
		if m.Kind != KindMap {
			c.errorf(CodeParseShape, item, ip, "Write each step as a mapping with one verb, e.g. `- exec: { command: [\"rm\", \"-f\", \"x\"] }`.", "an `on_finally` step must be a mapping")
			continue
		}
		allowed := append([]string{"when", "timeout"}, verbs...)
		for _, p := range m.Pairs {
			k := p.Key.Str
			if contains(allowed, k) {
				continue
			}
			if hint, ok := engineKeys[k]; ok {
				c.errorf(CodeParseEngineKey, p.Key, pathKey(ip, k), fmt.Sprintf("Remove `%s`; set it with %s.", k, hint), "`%s` is engine configuration, not workflow YAML", k)
				continue
			}
			detail := fmt.Sprintf("Remove `%s`: on_finally steps have only a verb, `when` and `timeout` (no id, retry or with).", k)
			if s := suggest(k, allowed); s != "" {
				detail = fmt.Sprintf("Rename `%s` to `%s` (did you mean `%s`?) or remove it.", k, s, s)
			}
			c.errorf(CodeParseUnknownField, p.Key, pathKey(ip, k), detail, "unknown field `%s` in an on_finally step", k)
		}
		item := &FinallyItem{Timeout: 30 * time.Second}
		var vp []*Pair
		for _, p := range m.Pairs {
			if contains(verbs, p.Key.Str) {
				vp = append(vp, p)
			}
		}
		if len(vp) == 0 {
			c.errorf(CodeParseNoVerb, m, ip, "Add exactly one verb: `infer`, `exec`, `invoke` or `agent`.", "on_finally step has no verb")
			continue
		}
		if len(vp) > 1 {
			c.errorf(CodeParseManyVerbs, vp[1].Key, pathKey(ip, vp[1].Key.Str), "Keep one verb per step; add another step for the second.", "on_finally step has several verbs")
			continue
		}
		if w := m.Get("when"); w != nil {
			d := deref(w)
			switch d.Kind {
			case KindBool:
				item.When = d.Bool
			case KindString:
				if tmpl := c.template(w, ip+".when", siteFinallyWhen, t); tmpl != nil {
					item.When = tmpl
				}
			default:
				c.errorf(CodeParseShape, w, ip+".when", "Write a boolean or one expression.", "`when` must be a boolean or an expression, not %s", kindName(w))
			}
		}
		if to := m.Get("timeout"); to != nil {
			item.Timeout = c.timeout(to, ip+".timeout")
		}
		item.Verb = vp[0].Key.Str
		item.Body = c.verb(t, vp[0], pathKey(ip, item.Verb), siteFinally)
		if item.Verb == "infer" || item.Verb == "agent" {
			item.Model, item.ModelVar = c.modelOf(deref(vp[0].Value))
		}
		t.OnFinally = append(t.OnFinally, item)
	}
}
