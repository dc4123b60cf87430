package expr

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var evalValues = map[string]any{
	"vars": map[string]any{"limit": 10, "name": "bob", "list": []any{1, 2, 3}, "cfg": map[string]any{"a": 1}},
	"env":  map[string]any{"HOME": "/home/u"},
	"tasks": map[string]any{
		"a": map[string]any{"status": "success", "output": map[string]any{"x": 1, "s": "hello"}, "error": nil},
		"b": map[string]any{"status": "skipped", "output": nil, "error": nil},
	},
	"with": map[string]any{
		"i": 1, "f": 1.5, "one": 1.0, "s": "str", "t": true, "fa": false, "n": nil, "k": "a",
		"arr":   []any{1, 2, 3},
		"obj":   map[string]any{"a": 1, "nul": nil},
		"objs":  []any{map[string]any{"k": 1}},
		"bytes": []byte("héllo"),
		"big":   9007199254740993,   // 2^53 + 1
		"bigf":  9007199254740992.0, // 2^53
		"re":    "^s.r$",
		"badre": "(",
		"json":  `{"a": 1, "b": 1.5, "c": 1e2, "d": [9007199254740993], "e": 99999999999999999999, "f": -0, "g": null}`,
	},
	"item":  "it",
	"index": 2,
}

type evalCase struct {
	src  string
	want any    // expected result when err == ""
	err  string // substring of the expected error
}

func runEval(t *testing.T, tt evalCase) {
	t.Helper()
	p, issues := Compile(tt.src, testEnv)
	if issues != nil {
		t.Fatalf("Compile(%q) = %v", tt.src, issues)
	}
	got, err := p.Eval(evalValues)
	if tt.err != "" {
		if err == nil {
			t.Fatalf("Eval(%q) = %#v, want error containing %q", tt.src, got, tt.err)
		}
		if _, ok := err.(*EvalError); !ok {
			t.Errorf("Eval(%q) error is %T, want *EvalError", tt.src, err)
		}
		if !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Eval(%q) error = %q, want it to contain %q", tt.src, err, tt.err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Eval(%q) error %v, want %#v", tt.src, err, tt.want)
	}
	if !reflect.DeepEqual(got, tt.want) {
		t.Errorf("Eval(%q) = %#v (%T), want %#v (%T)", tt.src, got, got, tt.want, tt.want)
	}
}

func evalTable(t *testing.T, tests []evalCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) { runEval(t, tt) })
	}
}

func TestEvalEquality(t *testing.T) {
	evalTable(t, []evalCase{
		{src: "{a: 1} == {a: 1.0}", want: true},
		{src: "[1, {b: [2]}] == [1.0, {b: [2.0]}]", want: true},
		{src: "1 == 1.0", want: true},
		{src: "with.i == with.one", want: true},
		{src: `1 == "1"`, want: false},
		{src: `with.i == "1"`, want: false},
		{src: "null == false", want: false},
		{src: "null == 0", want: false},
		{src: `null == ""`, want: false},
		{src: "null == null", want: true},
		{src: "with.n == null", want: true},
		{src: "with.missing == null", want: true},
		{src: "{a: 1} == {a: 1, b: 2}", want: false},
		{src: "{a: null} == {}", want: false},
		{src: "{a: null} == {b: null}", want: false},
		{src: "[1, 2] == [2, 1]", want: false},
		{src: "[] == {}", want: false},
		{src: "[1] == 1", want: false},
		{src: "1 != 1.0", want: false},
		{src: `1 != "1"`, want: true},
		{src: "with.big == with.bigf", want: false}, // exact, no rounding of the integer
		{src: "with.bigf == 9007199254740992", want: true},
		{src: "with.bytes == with.bytes", want: true},
		{src: `with.bytes == "héllo"`, want: false},
		{src: `date("2020-01-01T00:00:00Z") == date("2020-01-01T02:00:00+02:00")`, want: true},
		{src: `split("a,b", ",") == ["a", "b"]`, want: true}, // []string against []any
		{src: "tasks.a.output == {x: 1.0, s: 'hello'}", want: true},
	})
}

func TestEvalOrdering(t *testing.T) {
	evalTable(t, []evalCase{
		{src: "1 < 2.5", want: true},
		{src: "with.i <= with.one", want: true},
		{src: `"a" < "b"`, want: true},
		{src: `"B" < "a"`, want: true}, // byte order
		{src: `with.s > "abc"`, want: true},
		{src: "with.s < with.i", err: "invalid operation"},
		{src: "with.n < 1", err: "invalid operation"},
		{src: "with.t < with.fa", err: "invalid operation"},
		{src: "with.arr < with.arr", err: "invalid operation"},
		{src: "with.obj >= with.obj", err: "invalid operation"},
	})
}

func TestEvalLogic(t *testing.T) {
	evalTable(t, []evalCase{
		{src: "with.t && with.fa", want: false},
		{src: "with.t || with.fa", want: true},
		{src: "true && with.i", err: "`&&` needs a boolean, got integer"},
		{src: "with.i && true", err: "`&&` needs a boolean, got integer"},
		{src: "with.n and true", err: "`and` needs a boolean, got null"},
		{src: "false && with.i", want: false}, // short circuit: the right side is never evaluated
		{src: "false && with.n.x", want: false},
		{src: "true || with.i", want: true},
		{src: "true or with.n.x", want: true},
		{src: "false || with.s", err: "`||` needs a boolean, got string"},
		{src: "!with.i", err: "`!` needs a boolean, got integer"},
		{src: "not with.s", err: "`not` needs a boolean, got string"},
		{src: "!with.fa", want: true},
		{src: "with.i ? 1 : 2", err: "the condition of `?:` needs a boolean, got integer"},
		{src: "with.n ? 1 : 2", err: "needs a boolean, got null"},
		{src: "with.t ? 1 : with.n.x", want: 1}, // lazy
		{src: "with.fa ? with.n.x : 2", want: 2},
		{src: "if with.i { 1 } else { 2 }", err: "needs a boolean"},
		{src: "if with.fa { 1 } else { 2 }", want: 2},
		{src: "with.t ?: 1", want: true},
		{src: "with.fa ?: 1", want: 1},
		{src: "with.i ?: 1", err: "needs a boolean"},
		{src: "all(with.arr, #)", err: "the predicate of all() needs a boolean, got integer"},
		{src: "filter(with.arr, #)", err: "the predicate of filter() needs a boolean"},
		{src: "filter(with.arr, # > 1)", want: []any{2, 3}},
		{src: "any(with.objs, .k == 1)", want: true},
		{src: "count(with.arr, # >= 2)", want: 2},
	})
}

func TestEvalPlus(t *testing.T) {
	evalTable(t, []evalCase{
		{src: `"a" + with.i`, err: "`+` joins strings only"},
		{src: `with.i + "a"`, err: "`+` joins strings only"},
		{src: `with.s + with.n`, err: "invalid operation"},
		{src: `with.n + 1`, err: "invalid operation"},
		{src: `with.arr + with.arr`, err: "invalid operation"},
		{src: "with.s + with.s", want: "strstr"},
		{src: "with.i + with.f", want: 2.5},
		{src: "with.i + 1", want: 2},
		{src: "string(with.i) + 'x'", want: "1x"},
	})
}

func TestEvalAccess(t *testing.T) {
	evalTable(t, []evalCase{
		{src: "with.obj.missing", want: nil},
		{src: "with.obj.nul", want: nil},
		{src: "with.missing", want: nil},
		{src: "tasks.b.output", want: nil},
		{src: "with.n.x", err: "cannot read field x of null (use ?., ?? or has())"},
		{src: "tasks.b.output.x", err: "cannot read field x of null (use ?., ?? or has())"},
		{src: "with.s.x", err: "cannot read field x of a string"},
		{src: "with.i.x", err: "cannot read field x of an integer"},
		{src: "with.t.x", err: "cannot read field x of a boolean"},
		{src: "with.arr.x", err: "cannot read field x of an array"},
		{src: "with.bytes.x", err: "cannot read field x of bytes"},
		{src: "with.obj.a.b", err: "cannot read field b of an integer"},
		{src: "with.s?.x", err: "cannot read field x of a string"}, // ?. only forgives null
		{src: "with.n?.x", want: nil},
		{src: "with.n?.x.y", want: nil},
		{src: "with.obj?.missing.x", err: "cannot read field x of null (use ?., ?? or has())"},
		{src: "tasks.b.output ?? tasks.a.output.x", want: 1},
		{src: `with.n ?? "d"`, want: "d"},
		{src: `tasks['a']["output"].x`, want: 1},
		{src: "with.obj[with.k]", want: 1},
		// indexes
		{src: "with.arr[0]", want: 1},
		{src: "with.arr[-1]", want: 3},
		{src: "with.arr[-3]", want: 1},
		{src: "with.arr[-4]", err: "index out of range"},
		{src: "with.arr[3]", err: "index out of range"},
		{src: "with.arr[with.i]", want: 2},
		{src: "with.arr[with.one]", want: 2}, // an integral float is an index
		{src: "with.arr[1.0]", want: 2},
		{src: "with.arr[with.f]", err: "index must be an integer, got 1.5"},
		{src: "with.arr[1.5]", err: "index must be an integer, got 1.5"},
		{src: "with.arr[with.n]", err: "index must be an integer or a string, got null"},
		{src: "with.arr[with.t]", err: "got boolean"},
		{src: `with.arr["x"]`, err: "cannot read field x of an array"},
		{src: `with.arr[with.k]`, err: "invalid operation"},
		{src: "with.arr[1:]", want: []any{2, 3}},
		{src: "with.arr[-2:]", want: []any{2, 3}},
		{src: "with.arr[with.one:]", want: []any{2, 3}},
		{src: "with.arr[with.f:]", err: "index must be an integer, got 1.5"},
		{src: "with.arr[:with.s]", err: "slice bound must be an integer, got string"},
		{src: "vars.list[index]", want: 3},
		{src: "item", want: "it"},
		{src: "env.HOME", want: "/home/u"},
	})
}

func TestEvalStringsAndMembership(t *testing.T) {
	evalTable(t, []evalCase{
		{src: `"abc" matches "b"`, want: true}, // unanchored
		{src: `"abc" matches "^b"`, want: false},
		{src: `"abc" matches "^a.c$"`, want: true},
		{src: `with.s matches with.re`, want: true},
		{src: `with.s matches with.badre`, err: "missing closing )"},
		{src: `"hello".contains("ell")`, want: true},
		{src: `"hello".startsWith("he")`, want: true},
		{src: `"hello".endsWith("lo")`, want: true},
		{src: `tasks.a.output.s.contains("ell")`, want: true},
		{src: `with.s.startsWith("s")`, want: true},
		{src: `with.s endsWith "r"`, want: true},
		{src: `with.s contains "t"`, want: true},
		{src: `"abc" contains "b"`, want: true},
		{src: `with.i.contains("a")`, err: "contains needs two strings, got integer and string"},
		{src: `with.n.startsWith("a")`, err: "startsWith needs two strings, got null and string"},
		{src: `with.arr endsWith "a"`, err: "endsWith needs two strings, got array and string"},
		{src: `with.s not contains "z"`, want: true},
		{src: "1 in [1.0]", want: true},
		{src: "{a: 1} in [{a: 1.0}]", want: true},
		{src: `"a" in {a: null}`, want: true},
		{src: `"b" in {a: 1}`, want: false},
		{src: `"a" in with.obj`, want: true},
		{src: `"nul" in with.obj`, want: true},
		{src: `with.i in with.obj`, want: false},
		{src: `"a" in with.n`, want: false},
		{src: `"a" in with.s`, err: "`in` needs an array or an object on its right, got string"},
		{src: `"a" not in ["b"]`, want: true},
		{src: `with.i in with.arr`, want: true},
		{src: `"s" in split("s,t", ",")`, want: true},
		{src: "size('héllo')", want: 5}, // code points
		{src: "'héllo'.size()", want: 5},
		{src: "size(with.bytes)", want: 6}, // bytes
		{src: "size([1, 2])", want: 2},
		{src: "size({a: 1, b: 2})", want: 2},
		{src: "with.arr.size()", want: 3},
		{src: "size(with.n)", err: "size() needs a string, an array, an object or bytes, got null"},
		{src: "size(with.i)", err: "got integer"},
		{src: "with.f.size()", err: "got number"},
	})
}

func TestEvalHas(t *testing.T) {
	evalTable(t, []evalCase{
		{src: "has(with.obj.a)", want: true},
		{src: "has(with.obj.nul)", want: true}, // present with a null value
		{src: "has(with.obj.zz)", want: false},
		{src: "has(with.n.x)", want: false},         // null intermediate
		{src: "has(with.missing.x.y)", want: false}, // missing intermediate
		{src: "has(with.obj.a.b)", want: false},     // non-object intermediate: false, not an error
		{src: "has(with.s.x)", want: false},
		{src: "has(with.arr[0].x)", want: false},
		{src: "has(with.objs[0].k)", want: true},
		{src: "has(with.objs[-1].k)", want: true},
		{src: "has(with.objs[5].k)", want: false}, // out of range: false
		{src: "has(with.objs[with.f].k)", want: false},
		{src: "has(with['obj']['a'])", want: true},
		{src: "has(with[with.k].x)", want: false},
		{src: "has(tasks.a.error)", want: true}, // the field always exists
		{src: "has(tasks.zz.output)", want: false},
		{src: "has(tasks.a?.output?.x)", want: true},
		{src: "has({a: null}.a)", want: true},
		{src: "!has(with.obj.zz) && has(with.obj.a)", want: true},
	})
}

func TestEvalMisc(t *testing.T) {
	evalTable(t, []evalCase{
		{src: "null", want: nil},
		{src: "7 / 2", want: 3.5},
		{src: "4 / 2", want: 2.0}, // `/` always yields a float
		{src: "with.i / 1", want: 1.0},
		{src: "7 % 2", want: 1},
		{src: "2 ** 3", want: 8.0},
		{src: "keys({b: 1, a: 2, c: 3})", want: []any{"a", "b", "c"}},
		{src: "values({b: 1, a: 2})", want: []any{2, 1}},
		{src: "toPairs({b: 1, a: 2})", want: []any{[]any{"a", 2}, []any{"b", 1}}},
		{src: "keys(vars)", want: []any{"cfg", "limit", "list", "name"}},
		{src: `fromJSON(with.json)`, want: map[string]any{
			"a": 1, "b": 1.5, "c": 100.0, "d": []any{9007199254740993}, "e": 1e20, "f": 0, "g": nil,
		}},
		{src: `fromJSON("[1, 2.0, 3e0]")`, want: []any{1, 2.0, 3.0}},
		{src: `fromJSON("1 2")`, err: "fromJSON: unexpected data after the JSON value"},
		{src: `fromJSON("{")`, err: "fromJSON"},
		{src: `fromJSON(with.n)`, err: "fromJSON needs a string, got null"},
		{src: `date("2020-01-01T10:00:00+02:00")`, want: "2020-01-01T08:00:00.000Z"},
		{src: `duration("90m")`, want: "1h30m0s"},
		{src: `[date("2020-01-01")]`, want: []any{"2020-01-01T00:00:00.000Z"}},
		{src: `split("a,b", ",")`, want: []any{"a", "b"}},
		{src: `groupBy([1, 2, 3], # % 2 == 0 ? "even" : "odd")`, want: map[string]any{"odd": []any{1, 3}, "even": []any{2}}},
		{src: `groupBy([1, 2, 3], # % 2)`, want: map[string]any{"1": []any{1, 3}, "0": []any{2}}},
		{src: "with.bytes", want: []byte("héllo")},
		{src: `toJSON({b: [1, 2.5, "<&>"], a: null, c: {z: true, y: with.bytes}})`, want: `{"a":null,"b":[1,2.5,"<&>"],"c":{"y":"aMOpbGxv","z":true}}`},
		{src: `toJSON(date("2020-01-01"))`, want: `"2020-01-01T00:00:00.000Z"`},
		{src: `toJSON(1e21)`, want: `1e+21`},
		{src: `toJSON(0 / 0)`, err: "unsupported value: NaN"},
		{src: `fromJSON(toJSON(with.obj)) == with.obj`, want: true},
		{src: "1..3", want: []any{1, 2, 3}},
		{src: "let x = with.i; x + 1", want: 2},
		{src: "index + 1", want: 3},
		{src: "1 % 0", err: "integer divide by zero"},
		{src: "len(repeat('x', 10000000))", err: "memory budget exceeded"},
		{src: "map(1..2000000, #)", err: "memory budget exceeded"},
	})
}

func TestEvalMissingRoots(t *testing.T) {
	p := checkClean(t, "with?.x ?? vars?.y ?? 'd'")
	for _, values := range []map[string]any{nil, {}} {
		if v, err := p.Eval(values); err != nil || v != "d" {
			t.Errorf("Eval(%v) = %v, %v", values, v, err)
		}
	}
	var nilProg *Program
	if _, err := nilProg.Eval(nil); err == nil {
		t.Error("Eval on a nil program succeeded")
	}
}

// TestEvalDoesNotMutate: evaluation and normalization never modify inputs.
func TestEvalDoesNotMutate(t *testing.T) {
	obj := map[string]any{"b": 2, "a": []any{1, "x"}}
	values := map[string]any{"with": map[string]any{"o": obj}}
	p := checkClean(t, "with.o")
	v, err := p.Eval(values)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj, map[string]any{"b": 2, "a": []any{1, "x"}}) || !reflect.DeepEqual(v, obj) {
		t.Errorf("input modified or result wrong: %v %v", obj, v)
	}
	p = checkClean(t, "fromJSON('[1]')")
	if v, _ := p.Eval(nil); !reflect.DeepEqual(v, []any{1}) {
		t.Error(v)
	}
}

type point struct{ X int }

func TestNormalize(t *testing.T) {
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 3600))
	in := []any{1}
	tests := []struct {
		in   any
		want any
		err  string
	}{
		{in: nil, want: nil},
		{in: int8(-3), want: -3},
		{in: int64(1 << 40), want: 1 << 40},
		{in: uint8(200), want: 200},
		{in: uint64(math.MaxUint64), want: float64(math.MaxUint64)},
		{in: float32(1.5), want: 1.5},
		{in: math.Inf(1), want: math.Inf(1)},
		{in: "s", want: "s"},
		{in: true, want: true},
		{in: []byte("b"), want: []byte("b")},
		{in: []int{1, 2}, want: []any{1, 2}},
		{in: [2]string{"a", "b"}, want: []any{"a", "b"}},
		{in: []any(nil), want: []any{}},
		{in: map[string]any(nil), want: map[string]any{}},
		{in: map[string]int{"a": 1}, want: map[string]any{"a": 1}},
		{in: map[any]any{"a": int32(1), 2: true}, want: map[string]any{"a": 1, "2": true}},
		{in: []any{int16(1), []any{float32(2)}, map[string]any{"t": when}}, want: []any{1, []any{2.0}, map[string]any{"t": "2024-05-06T06:08:09.123Z"}}},
		{in: when, want: "2024-05-06T06:08:09.123Z"},
		{in: 90 * time.Second, want: "1m30s"},
		{in: map[float64]any{1.5: 1}, err: "not a string"},
		{in: point{1}, err: "not part of the value model"},
		{in: &point{1}, err: "not part of the value model"},
		{in: func() {}, err: "not part of the value model"},
		{in: []any{1, func() {}}, err: "not part of the value model"},
	}
	for _, tt := range tests {
		got, err := Normalize(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Normalize(%#v) = %#v, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Normalize(%#v) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
	// Copy on write: an already normalized container is returned as is, and
	// a container that changes is copied.
	if got, _ := Normalize(in); &got.([]any)[0] != &in[0] {
		t.Error("normalized []any was copied")
	}
	mixed := []any{1, int8(2)}
	got, _ := Normalize(mixed)
	if _, ok := mixed[1].(int8); !ok || !reflect.DeepEqual(got, []any{1, 2}) {
		t.Errorf("Normalize modified its input or failed: %#v %#v", mixed, got)
	}
}

func TestEvalOptionalCompatMethods(t *testing.T) {
	evalTable(t, []evalCase{
		{src: "with.n?.size()", want: nil},
		{src: "with.s?.size()", want: 3},
		{src: `with.n?.contains("a")`, want: nil},
		{src: `with.s?.startsWith("s")`, want: true},
		{src: `with.obj?.missing?.endsWith("s")`, want: nil},
		{src: `with.n?.size() ?? -1`, want: -1},
		{src: `with.arr?.size() + with.s?.size()`, want: 6},
		{src: `map(with.objs, #?.k?.size())`, err: "got integer"},
	})
}

// A value built by doubling shared parts is tiny in memory but huge to walk: its evaluation
// fails with an EvalError once the walk passes the node bound, instead of running for minutes.
func TestEvalBoundsSharedValues(t *testing.T) {
	src := "let a0 = [1, 2]; "
	for i := 1; i <= 30; i++ {
		src += fmt.Sprintf("let a%d = [a%d, a%d]; ", i, i-1, i-1)
	}
	src += "a30"
	p, issues := Compile(src, testEnv)
	if len(issues) > 0 {
		t.Fatalf("Compile: %v", issues)
	}
	_, err := p.Eval(nil)
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "more than 10000000 elements") {
		t.Fatalf("Eval = %v, want the node bound's EvalError", err)
	}
	// Below the bound the same shape still evaluates (2^10 leaves).
	small := "let a0 = [1, 2]; "
	for i := 1; i <= 10; i++ {
		small += fmt.Sprintf("let a%d = [a%d, a%d]; ", i, i-1, i-1)
	}
	if p, issues = Compile(small+"a10", testEnv); len(issues) > 0 {
		t.Fatalf("Compile small: %v", issues)
	}
	if _, err := p.Eval(nil); err != nil {
		t.Fatalf("a value under the bound: %v", err)
	}
}
