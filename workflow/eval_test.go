package workflow

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/nikahq/nika/spec"
)

// evalSource is the workflow every test value comes from: the values are
// checked by spec.CheckSource, so the templates are the real compiled ones.
// %s is replaced by the body of task t's `with:` (indented by six spaces).
const evalSource = `nika: v1
workflow: evaltest
model: mock/echo
vars:
  n: 10
  f: 0.1
  big: 1e21
  three: 3.0
  ok: true
  none: null
  nan: .nan
  s: hi
  list: [1, "two", 3.5]
  obj: { b: 2, a: [true, null] }
env:
  REGION: eu
secrets:
  KEY: { source: env, key: NIKA_TEST_KEY }
tasks:
  - id: up
    invoke: { tool: "mcp:fake/echo" }
  - id: t
    depends_on: [up]
    when: ${{ tasks.up.output }}
    with:
%s
    infer:
      prompt: "${{ with }}"
      system: ${{ vars.obj }}
  - id: loop
    for_each: [a, b]
    with:
      at: "${{ item }}#${{ index }}"
    exec: { command: "echo ${{ with.at }}" }
`

// scope is the runtime scope matching evalSource.
func scope() Scope {
	return Scope{
		Vars: map[string]any{
			"n": 10, "f": 0.1, "big": 1e21, "three": 3.0, "ok": true, "none": nil, "nan": math.NaN(), "s": "hi",
			"list": []any{1, "two", 3.5},
			"obj":  map[string]any{"b": 2, "a": []any{true, nil}},
		},
		Env:     map[string]any{"REGION": "eu"},
		Secrets: map[string]any{"KEY": "s3cret"},
		Tasks: map[string]any{
			"up": map[string]any{"status": "success", "output": nil, "error": nil, "started_at": nil, "ended_at": nil, "duration_ms": 0},
		},
	}
}

// checked checks evalSource with the given with: entries and returns the
// analysis.
func checked(t *testing.T, with ...string) *spec.Analysis {
	t.Helper()
	if len(with) == 0 {
		with = []string{"unused: 1"}
	}
	src := fmt.Sprintf(evalSource, "      "+strings.Join(with, "\n      "))
	a := spec.CheckSource("eval.nika.yaml", []byte(src), spec.CheckOptions{})
	if !a.Valid() {
		for _, f := range a.Findings {
			if f.Severity == spec.SeverityError {
				t.Errorf("finding: %+v", f)
			}
		}
		t.Fatalf("the test workflow does not check:\n%s", src)
	}
	return a
}

// withValue returns the checked value of with entry name of task t.
func withValue(t *testing.T, a *spec.Analysis, name string) spec.Value {
	t.Helper()
	for _, nv := range a.Task("t").With {
		if nv.Name == name {
			return nv.Value
		}
	}
	t.Fatalf("no with entry %q", name)
	return nil
}

// value checks one with: entry `v: <yaml>` and returns its checked value.
func value(t *testing.T, yaml string) spec.Value {
	t.Helper()
	return withValue(t, checked(t, "v: "+yaml), "v")
}

func TestEvalTyped(t *testing.T) {
	tests := []struct {
		yaml string
		want any
	}{
		// whole-string keeps its type, quoted or not
		{`${{ vars.n }}`, 10},
		{`"${{ vars.n }}"`, 10},
		{`'${{ vars.n }}'`, 10},
		{`${{ vars.f }}`, 0.1},
		{`${{ vars.three }}`, 3.0},
		{`${{ vars.ok }}`, true},
		{`${{ vars.none }}`, nil},
		{`${{ vars.list }}`, []any{1, "two", 3.5}},
		{`${{ vars.obj }}`, map[string]any{"b": 2, "a": []any{true, nil}}},
		{`"${{ [vars.n, {k: vars.s}] }}"`, []any{10, map[string]any{"k": "hi"}}},
		{`${{ tasks.up.status }}`, "success"},
		{`${{ secrets.KEY }}`, "s3cret"},
		{`${{ env.REGION }}`, "eu"},
		// mixed renders
		{`"n=${{ vars.n }}"`, "n=10"},
		{`" ${{ vars.n }}"`, " 10"},
		{`"${{ vars.n }}${{ vars.n }}"`, "1010"},
		{`"f=${{ vars.f }}"`, "f=0.1"},
		{`"big=${{ vars.big }}"`, "big=1e+21"},
		{`"three=${{ vars.three }}"`, "three=3"},
		{`"half=${{ vars.n / 4 }}"`, "half=2.5"},
		{`"ok=${{ vars.ok }}"`, "ok=true"},
		{`"none=${{ vars.none }}"`, "none=null"},
		{`"s=${{ vars.s }}"`, "s=hi"},
		{`"list=${{ vars.list }}"`, `list=[1,"two",3.5]`},
		{`"obj=${{ vars.obj }}"`, `obj={"a":[true,null],"b":2}`},
		{`"m=${{ {z: 1, a: {y: '<&>', b: vars.list}} }}"`, `m={"a":{"b":[1,"two",3.5],"y":"<&>"},"z":1}`},
		{`"key=${{ secrets.KEY }}"`, "key=s3cret"},
		// literals pass through
		{`plain`, "plain"},
		{`42`, 42},
		{`[1, {a: null}]`, []any{1, map[string]any{"a": nil}}},
		// escapes: \${{ yields a literal ${{, and is never evaluated
		{`'\${{ vars.n }}'`, "${{ vars.n }}"},
		{`\${{ vars.n }}`, "${{ vars.n }}"},
		{`"\\${{ vars.n }}"`, "${{ vars.n }}"},
		{`'\${{ x }} is ${{ vars.n }}'`, "${{ x }} is 10"},
		// nested structures with templates at depth
		{`{a: [{b: "${{ vars.n }}", c: "n=${{ vars.n }}", d: [x, "${{ vars.obj }}"]}], e: "${{ env.REGION }}"}`,
			map[string]any{
				"a": []any{map[string]any{"b": 10, "c": "n=10", "d": []any{"x", map[string]any{"b": 2, "a": []any{true, nil}}}}},
				"e": "eu",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			v := value(t, tt.yaml)
			got, err := Eval(v, scope())
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Eval = %#v (%T), want %#v (%T)", got, got, tt.want, tt.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	bytesScope := func(output any) func(*Scope) {
		return func(s *Scope) { s.Tasks["up"].(map[string]any)["output"] = output }
	}
	tests := []struct {
		name, yaml string
		setup      func(*Scope)
		code       string
		expression string
		message    string
	}{
		{name: "NaN", yaml: `"x=${{ vars.nan }}"`, code: spec.CodeVarRuntime, expression: "vars.nan", message: "NaN"},
		{name: "Inf", yaml: `"x=${{ vars.f / 0 }}"`, code: spec.CodeVarRuntime, expression: "vars.f / 0", message: "Inf"},
		{name: "NaN in array", yaml: `"x=${{ [vars.nan] }}"`, code: spec.CodeVarRuntime, expression: "[vars.nan]"},
		{name: "bytes mixed", yaml: `"x=${{ tasks.up.output }}"`, setup: bytesScope([]byte("hi")), code: "NIKA-VAR-007", expression: "tasks.up.output"},
		{name: "member of null", yaml: `${{ tasks.up.output.title }}`, code: spec.CodeVarRuntime, expression: "tasks.up.output.title"},
		{name: "member of null mixed", yaml: `"t: ${{ tasks.up.output.title }}"`, code: spec.CodeVarRuntime, expression: "tasks.up.output.title"},
		{name: "and on non-bool", yaml: `"${{ tasks.up.output && true }}"`, setup: bytesScope("yes"), code: spec.CodeVarRuntime, expression: "tasks.up.output && true"},
		{name: "index out of range", yaml: `${{ vars.list[7] }}`, code: spec.CodeVarRuntime, expression: "vars.list[7]"},
		{name: "at depth", yaml: `{a: [1, {b: "${{ tasks.up.output.x }}"}]}`, code: spec.CodeVarRuntime, expression: "tasks.up.output.x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := checked(t, "v: "+tt.yaml)
			v := withValue(t, a, "v")
			s := scope()
			if tt.setup != nil {
				tt.setup(&s)
			}
			got, err := Eval(v, s)
			if err == nil {
				t.Fatalf("Eval = %#v, want %s", got, tt.code)
			}
			if err.Code != tt.code {
				t.Errorf("code = %s (%v), want %s", err.Code, err, tt.code)
			}
			if err.Category != "variable_error" || err.Transient {
				t.Errorf("category/transient = %s/%v, want variable_error/false", err.Category, err.Transient)
			}
			if got := err.Details["expression"]; got != tt.expression {
				t.Errorf("details.expression = %v, want %q", got, tt.expression)
			}
			path, _ := err.Details["path"].(string)
			if !strings.HasPrefix(path, "tasks[1].with.v") {
				t.Errorf("details.path = %q, want the template's path under tasks[1].with.v", path)
			}
			if !strings.Contains(err.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", err.Message, tt.message)
			}
		})
	}
}

func TestEvalErrorPathAtDepth(t *testing.T) {
	v := value(t, `{a: [1, {b: "${{ tasks.up.output.x }}"}]}`)
	_, err := Eval(v, scope())
	if err == nil {
		t.Fatal("want an error")
	}
	if got, want := err.Details["path"], "tasks[1].with.v.a[1].b"; got != want {
		t.Errorf("details.path = %v, want %s", got, want)
	}
}

func TestEvalKeepsBytesWholeString(t *testing.T) {
	v := value(t, `${{ tasks.up.output }}`)
	s := scope()
	in := []byte{0, 1, 2}
	s.Tasks["up"].(map[string]any)["output"] = in
	got, err := Eval(v, s)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := got.([]byte)
	if !ok || string(b) != string(in) {
		t.Fatalf("Eval = %#v, want the bytes", got)
	}
	b[0] = 9
	if in[0] != 0 {
		t.Error("the result shares its bytes with the scope")
	}
}

func TestEvalString(t *testing.T) {
	tests := []struct {
		yaml, want string
		output     any
		code       string
	}{
		{yaml: `${{ vars.s }}`, want: "hi"},
		{yaml: `${{ vars.n }}`, want: "10"},
		{yaml: `"${{ vars.three }}"`, want: "3"},
		{yaml: `${{ vars.ok }}`, want: "true"},
		{yaml: `${{ vars.none }}`, want: "null"},
		{yaml: `${{ vars.obj }}`, want: `{"a":[true,null],"b":2}`},
		{yaml: `"obj: ${{ vars.obj }}"`, want: `obj: {"a":[true,null],"b":2}`},
		{yaml: `literal`, want: "literal"},
		{yaml: `${{ tasks.up.output }}`, output: map[string]any{"k": []any{"v"}}, want: `{"k":["v"]}`},
		{yaml: `${{ tasks.up.output }}`, output: []byte("x"), code: "NIKA-VAR-007"},
		{yaml: `${{ vars.nan }}`, code: spec.CodeVarRuntime},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			v := value(t, tt.yaml)
			s := scope()
			s.Tasks["up"].(map[string]any)["output"] = tt.output
			got, err := EvalString(v, s)
			if tt.code != "" {
				if err == nil || err.Code != tt.code {
					t.Fatalf("EvalString = %q, %v; want %s", got, err, tt.code)
				}
				if err.Details["expression"] == nil || err.Details["path"] == nil {
					t.Errorf("details = %v, want expression and path", err.Details)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("EvalString = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvalStringOnVerbField(t *testing.T) {
	a := checked(t)
	body := a.Task("t").Body.(map[string]any)
	got, err := EvalString(body["system"], scope())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[true,null],"b":2}`; got != want {
		t.Errorf("system = %q, want %q", got, want)
	}
}

func TestEvalBool(t *testing.T) {
	a := checked(t)
	when := a.Task("t").When
	for _, tt := range []struct {
		output any
		want   bool
		code   string
	}{
		{output: true, want: true},
		{output: false, want: false},
		{output: "true", code: spec.CodeVarRuntime},
		{output: 1, code: spec.CodeVarRuntime},
		{output: nil, code: spec.CodeVarRuntime},
	} {
		t.Run(fmt.Sprint(tt.output), func(t *testing.T) {
			s := scope()
			s.Tasks["up"].(map[string]any)["output"] = tt.output
			got, err := EvalBool(when, s)
			if tt.code != "" {
				if err == nil || err.Code != tt.code {
					t.Fatalf("EvalBool = %v, %v; want %s", got, err, tt.code)
				}
				if err.Details["expression"] != "tasks.up.output" || err.Details["path"] != "tasks[1].when" {
					t.Errorf("details = %v", err.Details)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("EvalBool = %v, want %v", got, tt.want)
			}
		})
	}
	if got, err := EvalBool(true, scope()); err != nil || !got {
		t.Errorf("EvalBool(true) = %v, %v", got, err)
	}
	if _, err := EvalBool("yes", scope()); err == nil || err.Code != spec.CodeVarRuntime {
		t.Errorf("EvalBool(\"yes\") error = %v, want VAR-006", err)
	}
}

func TestEvalLoopLocals(t *testing.T) {
	a := checked(t)
	at := a.Task("loop").With[0].Value
	s := scope()
	s.Tasks = nil // the loop task has no dependencies
	s.Item, s.Index, s.HasItem = "b", 1, true
	got, err := Eval(at, s)
	if err != nil {
		t.Fatal(err)
	}
	if got != "b#1" {
		t.Errorf("Eval = %#v, want \"b#1\"", got)
	}
	s.HasItem = false // outside the loop, item and index read as null
	if got, err = Eval(at, s); err != nil || got != "null#null" {
		t.Errorf("Eval without item = %#v, %v; want \"null#null\"", got, err)
	}
	body := a.Task("loop").Body.(map[string]any)
	s.With = map[string]any{"at": "b#1"}
	cmd, err := EvalString(body["command"], s)
	if err != nil || cmd != "echo b#1" {
		t.Errorf("command = %q, %v", cmd, err)
	}
}

func TestEvalDeepCopy(t *testing.T) {
	a := checked(t,
		`lit: {a: [1, 2], b: {c: d}}`,
		`tmpl: {x: "${{ vars.obj }}", y: ["${{ vars.list }}"]}`,
		`anchored: &shared {k: [1], t: "${{ vars.list }}"}`,
		`alias: *shared`,
	)
	s := scope()
	for _, name := range []string{"lit", "tmpl", "anchored", "alias"} {
		v := withValue(t, a, name)
		first, err := Eval(v, s)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Eval(v, s)
		mutate(first)
		again, err := Eval(v, s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, want) {
			t.Errorf("%s: after mutating a result, Eval = %#v, want %#v", name, again, want)
		}
	}
	want := scope()
	delete(s.Vars, "nan") // NaN != NaN
	delete(want.Vars, "nan")
	if !reflect.DeepEqual(s, want) {
		t.Errorf("mutating results changed the scope: %#v", s.Vars)
	}
	// An alias and its anchor are distinct copies.
	x, _ := Eval(withValue(t, a, "anchored"), s)
	y, _ := Eval(withValue(t, a, "alias"), s)
	x.(map[string]any)["k"].([]any)[0] = "changed"
	if y.(map[string]any)["k"].([]any)[0] != 1 {
		t.Error("the anchor's copy and the alias's copy share memory")
	}
}

// mutate changes every container in v, at every depth.
func mutate(v any) {
	switch x := v.(type) {
	case []any:
		for i := range x {
			mutate(x[i])
			x[i] = "mutated"
		}
	case map[string]any:
		for k := range x {
			mutate(x[k])
			x[k] = "mutated"
		}
		x["added"] = true
	}
}

func TestEvalLiteralBudget(t *testing.T) {
	// A literal tree with shared subtrees, as the checker builds for aliases:
	// 2^20 nodes once expanded.
	var level any = "leaf"
	for range 20 {
		level = []any{level, level}
	}
	_, err := Eval(level, scope())
	if err == nil || err.Code != spec.CodeVarRuntime || !strings.Contains(err.Message, "10,000 nodes") {
		t.Fatalf("Eval = %v, want VAR-006 beyond 10,000 nodes", err)
	}
	// A long literal string counts its bytes.
	if _, err := Eval([]any{strings.Repeat("x", 1<<20), "y"}, scope()); err == nil {
		t.Error("Eval of 1 MiB + 1 literal bytes succeeded, want VAR-006")
	}
	// Under the limits the same shapes evaluate.
	level = "leaf"
	for range 12 {
		level = []any{level, level}
	}
	if _, err := Eval(level, scope()); err != nil {
		t.Errorf("Eval of 8191 nodes: %v", err)
	}
}

func TestEvalValueBudget(t *testing.T) {
	// Expressions can share subtrees too: 2^20 leaves once expanded. (Not
	// more: expr.Program.Eval's own normalization already walks the expanded
	// tree.)
	var b strings.Builder
	b.WriteString(`"${{ let a0 = [vars.s, vars.s];`)
	for i := 1; i <= 19; i++ {
		fmt.Fprintf(&b, " let a%d = [a%d, a%d];", i, i-1, i-1)
	}
	b.WriteString(` a19 }}"`)
	v := value(t, b.String())
	for _, f := range []func() (any, *spec.Error){
		func() (any, *spec.Error) { return Eval(v, scope()) },
		func() (any, *spec.Error) { return EvalString(v, scope()) },
	} {
		_, err := f()
		if err == nil || err.Code != spec.CodeVarRuntime || err.Details["path"] == nil {
			t.Errorf("err = %v, want VAR-006 with a path", err)
		}
	}
	// Ordinary large data is not refused: 100,000 records, 5 MiB of text.
	big := make([]any, 100_000)
	for i := range big {
		big[i] = map[string]any{"i": i}
	}
	s := scope()
	s.Tasks["up"].(map[string]any)["output"] = big
	got, err := Eval(value(t, `${{ tasks.up.output }}`), s)
	if err != nil || len(got.([]any)) != len(big) {
		t.Errorf("Eval of 100,000 records: %v", err)
	}
	s.Tasks["up"].(map[string]any)["output"] = strings.Repeat("x", 5<<20)
	str, err := EvalString(value(t, `"text: ${{ tasks.up.output }}"`), s)
	if err != nil || len(str) != 5<<20+6 {
		t.Errorf("EvalString of 5 MiB: %v", err)
	}
}

func TestRender(t *testing.T) {
	for _, tt := range []struct {
		in   any
		want string
		code string
	}{
		{in: "s", want: "s"},
		{in: 7, want: "7"},
		{in: -7, want: "-7"},
		{in: int64(1) << 60, want: "1152921504606846976"},
		{in: uint8(3), want: "3"},
		{in: 0.1, want: "0.1"},
		{in: 1e21, want: "1e+21"},
		{in: 1e20, want: "100000000000000000000"},
		{in: 1e-7, want: "1e-7"},
		{in: 3.0, want: "3"},
		{in: float32(0.5), want: "0.5"},
		{in: true, want: "true"},
		{in: nil, want: "null"},
		{in: []any{}, want: "[]"},
		{in: map[string]any{}, want: "{}"},
		{in: map[string]any{"b": 1, "a": "<x>\n"}, want: `{"a":"<x>\n","b":1}`},
		{in: []string{"x", "y"}, want: `["x","y"]`},
		{in: []any{[]int{1, 2}}, want: `[[1,2]]`},
		{in: map[string]any{"raw": []byte("hi")}, want: `{"raw":"aGk="}`}, // JSON writes bytes as base64 (§4.3)
		{in: []byte("hi"), code: "NIKA-VAR-007"},
		{in: math.NaN(), code: spec.CodeVarRuntime},
		{in: math.Inf(-1), code: spec.CodeVarRuntime},
		{in: []any{math.Inf(1)}, code: spec.CodeVarRuntime},
		{in: struct{}{}, code: spec.CodeVarRuntime},
	} {
		t.Run(fmt.Sprintf("%#v", tt.in), func(t *testing.T) {
			got, err := Render(tt.in)
			if tt.code != "" {
				if err == nil || err.Code != tt.code {
					t.Fatalf("Render = %q, %v; want %s", got, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Render = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvalConcurrent(t *testing.T) {
	v := value(t, `{a: "${{ vars.obj }}", b: "n=${{ vars.n }}"}`)
	s := scope()
	done := make(chan *spec.Error)
	for range 8 {
		go func() {
			out, err := Eval(v, s)
			if err == nil {
				mutate(out)
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestFailed(t *testing.T) {
	e := spec.NewError(spec.CodeVarRuntime, "boom", nil)
	o := Failed(e)
	if o.Err != e || o.Output != nil || len(o.Usage) != 0 {
		t.Errorf("Failed = %+v", o)
	}
}
