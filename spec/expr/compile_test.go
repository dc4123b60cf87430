package expr

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var testEnv = Env{
	Vars: map[string]Type{
		"limit": Int, "ratio": Float, "name": String, "flag": Bool,
		"list": Array, "cfg": Object, "nul": Null, "untyped": Any,
	},
	Env:     map[string]Type{"HOME": String, "PORT": Int},
	Secrets: []string{"token"},
}

type issueCase struct {
	src    string
	code   string
	msg    string // substring of the message
	offset int    // -1: do not check
	detail string // exact Detail, when not ""
}

func checkIssue(t *testing.T, tt issueCase) {
	t.Helper()
	_, issues := Compile(tt.src, testEnv)
	if len(issues) != 1 {
		t.Fatalf("Compile(%q) = %v, want exactly one %s", tt.src, issues, tt.code)
	}
	is := issues[0]
	if is.Code != tt.code || !strings.Contains(is.Message, tt.msg) {
		t.Errorf("Compile(%q) = %v, want %s containing %q", tt.src, is, tt.code, tt.msg)
	}
	if tt.offset >= 0 && is.Offset != tt.offset {
		t.Errorf("Compile(%q) offset = %d, want %d", tt.src, is.Offset, tt.offset)
	}
	if tt.detail != "" && is.Detail != tt.detail {
		t.Errorf("Compile(%q) detail = %q, want %q", tt.src, is.Detail, tt.detail)
	}
	if strings.Contains(is.Message, "\n") {
		t.Errorf("Compile(%q) message has several lines: %q", tt.src, is.Message)
	}
}

func checkClean(t *testing.T, src string) *Program {
	t.Helper()
	p, issues := Compile(src, testEnv)
	if len(issues) > 0 {
		t.Fatalf("Compile(%q) = %v, want no issue", src, issues)
	}
	if p == nil || p.prog == nil {
		t.Fatalf("Compile(%q) returned no runnable program", src)
	}
	return p
}

func TestSyntaxErrors(t *testing.T) {
	for _, tt := range []issueCase{
		{"a +", CodeInvalid, "syntax error", -1, ""},
		{"(1", CodeInvalid, "syntax error", -1, ""},
		{"1 2", CodeInvalid, "syntax error: unexpected token", 2, ""},
		{"'abc", CodeInvalid, "syntax error", -1, ""},
		{"", CodeInvalid, "empty expression", 0, ""},
		{"  \n ", CodeInvalid, "empty expression", 0, ""},
		{"with.x.", CodeInvalid, "syntax error", -1, ""},
		{"with.x.(y)", CodeInvalid, "syntax error", -1, ""},
		{"%eq(1, 1)", CodeInvalid, "syntax error", 0, ""}, // internal functions cannot be named
		{strings.Repeat("(", 150) + "1" + strings.Repeat(")", 150), CodeInvalid, "nested too deeply", 100, ""},
		{"1" + strings.Repeat(" + 1", 5000), CodeInvalid, "maximum allowed nodes", -1, ""},
	} {
		t.Run(tt.src[:min(len(tt.src), 20)], func(t *testing.T) { checkIssue(t, tt) })
	}
}

// TestTypeErrors: D13 types make expr prove errors at check time (VAR-005);
// the same operations on Any are left to run time.
func TestTypeErrors(t *testing.T) {
	plusHint := "`+` joins strings only; convert with string(x)"
	for _, tt := range []issueCase{
		{`vars.limit + "x"`, CodeInvalid, "mismatched types int and string", 11, plusHint},
		{`"n=" + 1`, CodeInvalid, "mismatched types string and int", 5, plusHint},
		{`"n=" + vars.limit`, CodeInvalid, "mismatched types", -1, plusHint},
		{`secrets.token + 1`, CodeInvalid, "mismatched types string and int", -1, ""},
		{`secrets.undeclared + 1`, CodeInvalid, "mismatched types", -1, ""}, // every secret is a string
		{`env.HOME - 1`, CodeInvalid, "mismatched types", -1, ""},
		{`env.PORT + "x"`, CodeInvalid, "mismatched types", -1, ""},
		{`index + "a"`, CodeInvalid, "mismatched types", -1, ""},
		{`index.x`, CodeInvalid, "has no field x", -1, ""},
		{`vars.limit.x`, CodeInvalid, "has no field x", -1, ""},
		{`vars.list.x`, CodeInvalid, "array elements can only be selected using an integer", -1, ""},
		{`vars.ratio % 2`, CodeInvalid, "mismatched types", -1, ""},
		{`size(vars.limit)`, CodeInvalid, "size() needs a string, an array, an object or bytes, got integer", 0, ""},
		{`vars.flag.size()`, CodeInvalid, "got boolean", -1, ""},
		{`vars.name && true`, CodeInvalid, "mismatched types string and bool", -1, ""},
		{`!vars.limit`, CodeInvalid, "mismatched type int", -1, ""},
		{`vars.limit ? 1 : 2`, CodeInvalid, "non-bool expression", -1, ""},
		{`"a" < 1`, CodeInvalid, "mismatched types string and int", 4, ""},
		{`[1] < [2]`, CodeInvalid, "mismatched types array and array", -1, ""},
		{`null.x`, CodeInvalid, "type null has no field x", -1, ""},
		{`null && true`, CodeInvalid, "mismatched types", -1, ""},
		{`upper(1)`, CodeInvalid, "cannot use int as argument", -1, ""},
		{`"abc" matches "("`, CodeInvalid, "missing closing )", -1, ""},
		{`"aaa" matches "(a)\\1"`, CodeInvalid, "invalid escape sequence", -1, ""}, // RE2: no backreferences
		{`with.s.contains(1)`, CodeInvalid, "mismatched types", -1, ""},
		{`1 in {a: 1}`, CodeInvalid, "cannot use int as type string in map key", -1, ""},
		{`fromJSON(1)`, CodeInvalid, "cannot use int as argument", -1, ""},
		{`keys(1)`, CodeInvalid, "cannot get keys", -1, ""},
		{`size(1, 2)`, CodeInvalid, "size() takes one argument", -1, ""},
		{`size(null)`, CodeInvalid, "got null", -1, ""},
		{`let x = 1; let x = 2; x`, CodeInvalid, "cannot redeclare variable x", -1, ""},
	} {
		t.Run(tt.src, func(t *testing.T) { checkIssue(t, tt) })
	}
	// Not provable: Any (undeclared, untyped, null default) and with/tasks/item.
	for _, src := range []string{
		`with.x + "a"`, `vars.untyped + "x"`, `vars.nul + 1`, `vars.undeclared + 1`, `tasks.a.output + 1`,
		`item + "x"`, `vars.cfg.x + 1`, `vars.list[0] + "x"`, `vars.limit + 1.5`, `vars.name + secrets.token`,
		`1 == "1"`, `vars.limit == "x"`, `vars.list == vars.cfg`, `null == 1`, `with.x && true`, `!with.x`,
		`with.x ? 1 : 2`, `with.s < 1`, `size(with.x)`, `with.x.size()`, `with.x.contains("a")`,
		`"x" in with.x`, `with.arr[with.i]`, `with.arr[1.5]`, `tasks[0]`,
	} {
		checkClean(t, src)
	}
}

func TestNow(t *testing.T) {
	for _, tt := range []issueCase{
		{"now()", CodeInvalid, msgPure, 0, ""},
		{"1 + now()", CodeInvalid, msgPure, 4, ""},
		{"now", CodeInvalid, msgPure, 0, ""},
		{"date(now())", CodeInvalid, msgPure, 5, ""},
		{"now().Year()", CodeInvalid, msgPure, 0, ""},
	} {
		t.Run(tt.src, func(t *testing.T) { checkIssue(t, tt) })
	}
	checkClean(t, `date("2024-01-02")`)
	checkClean(t, `with.now`) // a member named now is fine
}

func TestHasShape(t *testing.T) {
	const msg = "has() needs a field selection"
	for _, tt := range []issueCase{
		{"has(1)", CodeInvalid, msg, 0, ""},
		{"has(with)", CodeInvalid, msg, 0, ""},
		{"has()", CodeInvalid, msg, 0, ""},
		{"has(with.a, with.b)", CodeInvalid, msg, 0, ""},
		{"has(with.list[0])", CodeInvalid, msg, 0, ""},
		{"has(with.list[with.i])", CodeInvalid, msg, 0, ""},
		{"has(with.a.b())", CodeInvalid, msg, 0, ""},
		{"has(size(with.a))", CodeInvalid, msg, 0, ""},
		{"1 + has(with.a + 1)", CodeInvalid, msg, 4, ""},
	} {
		t.Run(tt.src, func(t *testing.T) { checkIssue(t, tt) })
	}
	for _, src := range []string{
		"has(with.a)", "has(with['a'])", "has(tasks.a.output?.x)", "has(with.a[0].b)",
		"has(with[with.k].x)", "has(tasks.a.output.x) ? tasks.a.output.x : 0", "has({a: 1}.a)",
		"filter(with.list, has(#.x))", "has((with.a).b)",
	} {
		checkClean(t, src)
	}
}

func TestUnknownNames(t *testing.T) {
	for _, tt := range []issueCase{
		{"foo", CodeUnknownName, "unknown name 'foo'", 0, ""},
		{"1 + foo.bar", CodeUnknownName, "unknown name 'foo'", 4, ""},
		{"Vars.limit", CodeUnknownName, "unknown name 'Vars'", 0, "did you mean `vars`?"},
		{"TASKS.a", CodeUnknownName, "unknown name 'TASKS'", 0, "did you mean `tasks`?"},
		{"task.a.output", CodeUnknownName, "unknown name 'task'", 0, "did you mean `tasks`?"},
		{"itme", CodeUnknownName, "unknown name 'itme'", 0, "did you mean `item`?"},
		{"wiht.x", CodeUnknownName, "unknown name 'wiht'", 0, "did you mean `with`?"},
		{"nul", CodeUnknownName, "unknown name 'nul'", 0, "did you mean `null`?"},
		{"ind", CodeUnknownName, "unknown name 'ind'", 0, "did you mean `env`?"},    // tie env/index: alphabetical
		{"nuth", CodeUnknownName, "unknown name 'nuth'", 0, "did you mean `null`?"}, // tie null/with
		{"$env", CodeUnknownName, "unknown name '$env'", 0, "did you mean `env`?"},
		{"$env.vars", CodeUnknownName, "unknown name '$env'", 0, ""},
		{"filter(with.xs, # > limit)", CodeUnknownName, "unknown name 'limit'", 20, ""},
		{"lenght(with.x)", CodeUnknownName, "unknown function 'lenght'", 0, ""},
		{"uper(with.x)", CodeUnknownName, "unknown function 'uper'", 0, "did you mean `upper`?"},
		{"sise(with.x)", CodeUnknownName, "unknown function 'sise'", 0, "did you mean `size`?"},
		{"with.x | fitler()", CodeUnknownName, "unknown function 'fitler'", 9, "did you mean `filter`?"},
		{`"é" + foo`, CodeUnknownName, "unknown name 'foo'", 7, ""}, // byte offset, not rune offset
		{"len", CodeInvalid, "`len` is a function", 0, ""},
		{"let vars = 1; vars", CodeInvalid, "`let` cannot redeclare `vars`", -1, ""},
		{"let len = 1; len", CodeInvalid, "`let` cannot redeclare `len`", -1, ""},
		{"let null = 1; 2", CodeInvalid, "`let` cannot redeclare `null`", -1, ""},
	} {
		t.Run(tt.src, func(t *testing.T) { checkIssue(t, tt) })
	}
	_, issues := Compile("foo + bar", testEnv)
	if len(issues) != 2 || issues[0].Offset != 0 || issues[1].Offset != 6 {
		t.Errorf("Compile(foo + bar) = %v, want two VAR-001 in source order", issues)
	}
	if d := didYouMean("zzzzzz", nameCandidates); d != "" {
		t.Errorf("didYouMean(zzzzzz) = %q, want none beyond distance 2", d)
	}
	for _, src := range []string{
		"let x = 1; x + 1", "let x = with.a; let y = x; y", "filter(with.xs, # > 1)", "map(with.xs, #index)",
		"reduce(with.xs, #acc + #, 0)", "null", "nil", "true && !false", "len(with.xs)", "with.xs | filter(# > 1)",
		"filter(with.xs, .ok)", "map(with.xs, ({a: #.b}))", "{vars: 1}.vars", "vars", "index", "item",
		"secrets.token", "env.HOME", "with.a.b.c", "if with.b { 1 } else { 2 }", "sortBy(with.xs, .n, 'desc')",
		"count(with.xs, # > 1)", "upper(with.s)", "toJSON(with.x)",
	} {
		checkClean(t, src)
	}
}

// TestChainedComparisons: D43.
func TestChainedComparisons(t *testing.T) {
	for _, tt := range []issueCase{
		{"with.a == with.b == with.c", CodeInvalid, msgChain, 17, ""},
		{"with.a < with.b < with.c", CodeInvalid, msgChain, 16, ""},
		{"with.a < with.b < with.c < with.d", CodeInvalid, msgChain, -1, ""},
		{"with.a <= with.b > with.c", CodeInvalid, msgChain, -1, ""},
		{"(with.x != with.y) == true", CodeInvalid, msgChain, -1, ""},
		{"with.x != with.y == true", CodeInvalid, msgChain, -1, ""},
		{"with.a < with.b == true", CodeInvalid, msgChain, -1, ""},
		{"with.a == with.b < with.c", CodeInvalid, msgChain, -1, ""},
		{"true == (with.a < with.b)", CodeInvalid, msgChain, -1, ""},
		{"(with.a < with.b) < with.c", CodeInvalid, msgChain, -1, ""},
		{"with.a == (with.b == with.c)", CodeInvalid, msgChain, -1, ""},
		{"with.z && (1 < with.a < 3)", CodeInvalid, msgChain, -1, ""},
		{"with.a == with.b == with.c == with.d", CodeInvalid, msgChain, -1, ""},
	} {
		t.Run(tt.src, func(t *testing.T) { checkIssue(t, tt) })
	}
	_, issues := Compile("with.a < with.b < with.c || with.d == with.e == with.f", testEnv)
	if len(issues) != 2 {
		t.Errorf("two independent chains: got %v, want two issues", issues)
	}
	for _, src := range []string{
		"with.a < with.b && with.b < with.c",
		"(with.a == 1) && (with.b == 2)",
		"!(with.a == with.b)",
		"(with.a == with.b) ? 1 : 2",
		"[with.a == 1] == [true]",
		"with.a == (with.b ?? 1)",
		"with.a in [with.b == 1]",
		"(with.a in with.l) == true", // `in` is not a comparison for D43
		"with.a + 1 < with.b * 2",
	} {
		checkClean(t, src)
	}
}

func TestMethodArity(t *testing.T) {
	for _, tt := range []issueCase{
		{"with.s.size(1)", CodeInvalid, "size() takes 0 arguments, got 1", -1, ""},
		{"with.s.contains()", CodeInvalid, "contains() takes 1 argument, got 0", -1, ""},
		{"with.s.startsWith('a', 'b')", CodeInvalid, "startsWith() takes 1 argument, got 2", -1, ""},
	} {
		t.Run(tt.src, func(t *testing.T) { checkIssue(t, tt) })
	}
}

func TestRefs(t *testing.T) {
	r := func(root string, path ...string) Ref { return Ref{Root: root, Path: path} }
	dyn := func(ref Ref) Ref { ref.Dynamic = true; return ref }
	has := func(ref Ref) Ref { ref.InHas = true; return ref }
	tests := []struct {
		src  string
		want []Ref
	}{
		{"tasks.fetch.output.items[0].name", []Ref{r("tasks", "fetch", "output", "items", "0", "name")}},
		{"tasks.a.output?.x", []Ref{r("tasks", "a", "output", "x")}},
		{"tasks.a?.output?.x?.y", []Ref{r("tasks", "a", "output", "x", "y")}},
		{"filter(tasks.a.output, # != null)", []Ref{r("tasks", "a", "output")}},
		{"map(tasks.a.output, #.x + with.y)", []Ref{r("tasks", "a", "output"), r("with", "y")}},
		{"tasks['a'].output", []Ref{r("tasks", "a", "output")}},
		{`tasks["a"]["output"]`, []Ref{r("tasks", "a", "output")}},
		{"(tasks.a).output", []Ref{r("tasks", "a", "output")}},
		{"tasks[with.k].output", []Ref{dyn(r("tasks")), r("with", "k")}},
		{"tasks[0]", []Ref{dyn(r("tasks"))}},
		{"tasks['a' + 'b']", []Ref{dyn(r("tasks"))}},
		{"tasks.a[with.k]", []Ref{dyn(r("tasks", "a")), r("with", "k")}},
		{"tasks.a.output[with.k].x", []Ref{r("tasks", "a", "output"), r("with", "k")}},
		{"tasks.a.output.list[-1]", []Ref{r("tasks", "a", "output", "list", "-1")}},
		{"tasks.a.output.list[1:2]", []Ref{r("tasks", "a", "output", "list")}},
		{"tasks.a.output.s.size()", []Ref{r("tasks", "a", "output", "s")}},
		{"tasks.a.output.s.contains('x')", []Ref{r("tasks", "a", "output", "s")}},
		{"has(tasks.a.output.x)", []Ref{has(r("tasks", "a", "output", "x"))}},
		{"has(tasks.a.output['x'])", []Ref{has(r("tasks", "a", "output", "x"))}},
		{"has(tasks.a.output[with.k].x)", []Ref{r("tasks", "a", "output"), r("with", "k")}},
		{"has(tasks.a.output.x) && tasks.a.output.x", []Ref{has(r("tasks", "a", "output", "x")), r("tasks", "a", "output", "x")}},
		{"tasks.a.output.x + tasks.a.output.x", []Ref{r("tasks", "a", "output", "x")}},
		{"tasks.a.output ?? tasks.b.output", []Ref{r("tasks", "a", "output"), r("tasks", "b", "output")}},
		{"with.b + vars.a", []Ref{r("with", "b"), r("vars", "a")}},
		{"vars", []Ref{r("vars")}},
		{"keys(tasks)", []Ref{r("tasks")}},
		{"index + 1", []Ref{r("index")}},
		{"item.x", []Ref{r("item", "x")}},
		{"let v = tasks.a.output; v.x", []Ref{r("tasks", "a", "output")}},
		{"tasks.a.output | map(#.id)", []Ref{r("tasks", "a", "output")}},
		{"{k: secrets.token}", []Ref{r("secrets", "token")}},
		{"env.HOME ?? vars['limit']", []Ref{r("env", "HOME"), r("vars", "limit")}},
		{"1 + 2", nil},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, issues := Compile(tt.src, testEnv)
			if p == nil {
				t.Fatalf("Compile(%q) = nil, %v", tt.src, issues)
			}
			got := make([]Ref, len(p.Refs))
			for i, ref := range p.Refs {
				ref.Offset = 0
				got[i] = ref
			}
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Refs(%q)\n got %+v\nwant %+v", tt.src, got, tt.want)
			}
		})
	}
}

func TestRefOffsets(t *testing.T) {
	p, _ := Compile(`"é" + with.a + tasks.b.output`, testEnv)
	if len(p.Refs) != 2 || p.Refs[0].Offset != 7 || p.Refs[1].Offset != 16 {
		t.Errorf("offsets = %+v, want with at 7 and tasks at 16 (bytes)", p.Refs)
	}
	// Refs are reported even when other issues prevent compilation.
	p, issues := Compile("foo + tasks.a.output", testEnv)
	if len(issues) != 1 || p == nil || len(p.Refs) != 1 || p.Refs[0].Offset != 6 {
		t.Errorf("with issues: %v %+v", issues, p)
	}
	if _, err := p.Eval(nil); err == nil {
		t.Error("Eval of a program with issues succeeded")
	}
}

func TestResultType(t *testing.T) {
	tests := []struct {
		src  string
		want Type
	}{
		{"vars.limit > 3", Bool}, {"size(with.x)", Int}, {"with.x.size()", Int}, {"with.x", Any},
		{"vars.limit", Int}, {"vars.ratio", Float}, {"vars.name", String}, {"vars.flag", Bool},
		{"vars.list", Array}, {"vars.cfg", Object}, {"vars.nul", Any}, {"vars.untyped", Any},
		{"vars.undeclared", Any}, {"1.5", Float}, {"7 / 2", Float}, {`"a" + "b"`, String}, {"[1]", Array},
		{"{a: 1}", Object}, {"null", Null}, {"with.a == 1", Bool}, {"has(with.a)", Bool},
		{`date("2020-01-01")`, String}, {`duration("1h")`, String}, {"index", Int}, {"secrets.x", String},
		{"env.HOME", String}, {"env.PORT", Int}, {"with.x ?? 1", Any}, {"true ? 1 : 2", Int},
		{`fromJSON("1")`, Any}, {"keys(with.x)", Array}, {"1 in [1]", Bool}, {`with.s contains "x"`, Bool},
		{`with.s.contains("x")`, Bool}, {"!with.b", Bool}, {"with.a && with.b", Bool}, {"vars.limit + 1", Int},
		{"vars.limit + 1.5", Float}, {"upper(with.s)", String}, {"filter(with.l, # > 1)", Array},
		{"with.l[0]", Any}, {"vars.cfg.x", Any}, {"item", Any}, {"tasks.a.output", Any},
	}
	for _, tt := range tests {
		p := checkClean(t, tt.src)
		if p.Type != tt.want {
			t.Errorf("Type(%q) = %v, want %v", tt.src, p.Type, tt.want)
		}
	}
}

func TestTypeNames(t *testing.T) {
	for ty, want := range map[Type]string{Any: "any", Null: "null", Bool: "boolean", Int: "integer", Float: "number", String: "string", Array: "array", Object: "object", 99: "any"} {
		if ty.String() != want {
			t.Errorf("%d.String() = %q, want %q", ty, ty.String(), want)
		}
	}
	if !Int.IsNumber() || !Float.IsNumber() || String.IsNumber() {
		t.Error("IsNumber")
	}
}

// TestConcurrent compiles and evaluates from many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				src := fmt.Sprintf("vars.limit + %d > size(with.l) && has(tasks.t%d.output.x) || keys({b: 1, a: 2})[0] == 'a'", i, g)
				p, issues := Compile(src, testEnv)
				if issues != nil {
					t.Error(issues)
					return
				}
				v, err := p.Eval(map[string]any{"vars": map[string]any{"limit": 1}, "with": map[string]any{"l": []any{1}}})
				if err != nil || v != true {
					t.Error(v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestPanicRecovered: Compile never lets a panic escape.
func TestPanicRecovered(t *testing.T) {
	// An Env with a nil map and odd sources must not panic.
	for _, src := range []string{"vars.x", "tasks", "{", "]", "#", ".x", "#index", "$env[1]", "::x()", "1..2", "[1,2,3][::]"} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Compile(%q) panicked: %v", src, r)
				}
			}()
			Compile(src, Env{})
		}()
	}
}

func TestItemRefs(t *testing.T) {
	p := checkClean(t, "item[0].id + item[index]")
	want := []Ref{{Root: "item", Path: []string{"0", "id"}, Offset: 0}, {Root: "item", Dynamic: true, Offset: 13}, {Root: "index", Offset: 18}}
	if !reflect.DeepEqual(p.Refs, want) {
		t.Errorf("Refs = %+v, want %+v", p.Refs, want)
	}
}
