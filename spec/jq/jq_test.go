package jq

import (
	"context"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/itchyny/gojq"
)

func TestCompileAccepted(t *testing.T) {
	for _, src := range []string{
		`.`,
		`.data.title`,
		`[.data.tags[] | ascii_downcase]`,
		`.now`,
		`.env`,
		`."now"`,
		`.["input"]`,
		`"now"`,
		`"env \(.a)"`,
		`{now: 1, env: 2, input: 3}`,
		`{"halt": .x}`,
		`.a as {now: $x} | $x`,
		`. as $now | $now`,
		`def now: 1; now`,
		`def now: 1; now | tostring`,
		`def f(env): env; f(.)`,
		`def f($input): $input; f(1)`,
		`def g: def now: 2; now; g`,
		`reduce .[] as $x (0; . + $x)`,
		`todate`, // pure in gojq: strftime in UTC, called from builtin.jq
		`fromdate`,
		`@base64 "x\(.)"`,
		`label $out | 1, break $out`,
		`try error("x") catch .`,
		`if . then 1 elif 2 then 3 else 4 end`,
		`foreach .[] as $i (0; . + $i; .)`,
		`module {name: "x"}; .`,
		`path(..)`,
		`getpath(["a","b"])`,
		`# now in a comment
.a`,
	} {
		if _, err := Compile(src); err != nil {
			t.Errorf("Compile(%q): %v", src, err)
		}
	}
}

func TestCompileRefused(t *testing.T) {
	tests := []struct {
		src    string
		substr string // in the message
		offset int
	}{
		{`now`, "builtin now", 0},
		{`now | todate`, "builtin now", 0},
		{`[inputs]`, "builtin inputs", 1},
		{`input`, "builtin input", 0},
		{`.a | mktime`, "mktime", 5},
		{`gmtime`, "gmtime", 0},
		{`localtime`, "localtime", 0},
		{`strftime("%Y")`, "strftime", 0},
		{`strflocaltime("%Y")`, "strflocaltime", 0},
		{`strptime("%Y")`, "strptime", 0},
		{`input_filename`, "input_filename", 0},
		{`env`, "builtin env", 0},
		{`env.HOME`, "builtin env", 0},
		{`$ENV`, "$ENV", 0},
		{`$ENV.PATH`, "$ENV", 0},
		{`{$ENV}`, "$ENV", 1},
		{`1 as $ENV | $ENV`, "$ENV", 12},
		{`$__loc__`, "$__loc__", 0},
		{`halt`, "halt", 0},
		{`halt_error`, "halt_error", 0},
		{`halt_error(1)`, "halt_error", 0},
		{`debug`, "debug", 0},
		{`debug("x")`, "debug", 0},
		{`stderr`, "stderr", 0},
		{`"\(now)"`, "now", 3},
		{`{a: now}`, "now", 4},
		{`{(now|tostring): 1}`, "now", 2},
		{`.[now]`, "now", 2},
		{`.now | now`, "now", 7},
		{`"now" | now`, "now", 8},
		{`def f: now; def now: 1; f`, "now", 7},
		{`(def now: 1; now), now`, "now", 19},
		{`def f(now): now; now`, "now", 17},
		{`def now(x): x; now`, "now", 15},
		{`reduce inputs as $x (0; .)`, "inputs", 7},
		{`. as [$a] | $a | env`, "env", 17},
		{`if now then 1 else 2 end`, "now", 3},
		{`try now catch .`, "now", 4},
		{`import "a" as a; .`, "import", 0},
		{`include "a"; .`, "include", 0},
		{"# import\nimport \"a\" as a; .", "import", 9},
		{`env | now`, "builtin env", 0},
		{`now | env`, "builtin now", 0},
	}
	for _, tt := range tests {
		_, err := Compile(tt.src)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%q): want *Error, got %v", tt.src, err)
			continue
		}
		if !strings.Contains(e.Message, tt.substr) {
			t.Errorf("Compile(%q): message %q does not mention %q", tt.src, e.Message, tt.substr)
		}
		if e.Offset != tt.offset {
			t.Errorf("Compile(%q): offset %d, want %d", tt.src, e.Offset, tt.offset)
		}
	}
}

func TestCompileSyntaxErrors(t *testing.T) {
	tests := []struct {
		src    string
		offset int
	}{
		{`.[`, 2},
		{`1 +`, 3},
		{`"abc`, 4},
		{`"\(1 +)"`, 6},
		{`.a | | .b`, 5},
		{`}`, 0},
	}
	for _, tt := range tests {
		_, err := Compile(tt.src)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%q): want *Error, got %v", tt.src, err)
			continue
		}
		if !strings.Contains(e.Message, "syntax error") {
			t.Errorf("Compile(%q): message %q", tt.src, e.Message)
		}
		if e.Offset != tt.offset {
			t.Errorf("Compile(%q): offset %d, want %d (%s)", tt.src, e.Offset, tt.offset, e.Message)
		}
	}
	// Compile-time errors after parsing have no offset.
	for _, src := range []string{`def f: 1;`, `$x`, `foo`, `foo::bar`} {
		_, err := Compile(src)
		var e *Error
		if !errors.As(err, &e) || e.Offset != -1 {
			t.Errorf("Compile(%q): want *Error with offset -1, got %#v", src, err)
		}
	}
}

func TestEnvDoesNotLeak(t *testing.T) {
	t.Setenv("NIKA_JQ_TEST_SECRET", "leak")
	// env and $ENV are refused statically; behind that, the compiler options give gojq no environment.
	for _, src := range []string{`$ENV | length`, `env | length`} {
		q, err := gojq.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		code, err := gojq.Compile(q, compilerOptions...)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := code.Run(nil).Next()
		if v != 0 {
			t.Errorf("%s = %v, want 0", src, v)
		}
	}
	p, err := Compile(`def env: {}; env | length`)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Run(context.Background(), nil); err != nil || !reflect.DeepEqual(out, []any{0}) {
		t.Fatalf("got %v, %v", out, err)
	}
}

func run(t *testing.T, src string, in any) []any {
	t.Helper()
	p, err := Compile(src)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	out, err := p.Run(context.Background(), in)
	if err != nil {
		t.Fatalf("Run(%q): %v", src, err)
	}
	return out
}

func TestRunNormalization(t *testing.T) {
	tests := []struct {
		src  string
		in   any
		want []any
	}{
		{`.`, nil, []any{nil}},
		{`1.0`, nil, []any{1}},
		{`2.5`, nil, []any{2.5}},
		{`. * 2`, 1.5, []any{3}},
		{`. / 2`, 3, []any{1.5}},
		{`100000000000000000000`, nil, []any{1e20}},
		{`9007199254740993`, nil, []any{9007199254740993}},
		{`pow(2;62)`, nil, []any{1 << 62}},
		{`pow(2;63)`, nil, []any{9223372036854775808.0}},
		{`-pow(2;63)`, nil, []any{math.MinInt64}},
		{`[.[] * 1.0]`, []any{1, 2.0, 2.5}, []any{[]any{1, 2, 2.5}}},
		{`{a: (.x / 1)}`, map[string]any{"x": 4}, []any{map[string]any{"a": 4}}},
		{`.`, map[string]any{"f": 3.0, "n": []any{1.0}}, []any{map[string]any{"f": 3, "n": []any{1}}}},
		{`.`, int64(7), []any{7}},
		{`.`, uint64(math.MaxUint64), []any{18446744073709551615.0}},
		{`.`, float32(0.5), []any{0.5}},
		{`.`, []string{"a"}, []any{[]any{"a"}}},
		{`.`, map[string]string{"a": "b"}, []any{map[string]any{"a": "b"}}},
		{`.b`, map[string]any{"b": []byte("hi")}, []any{"aGk="}},
		{`. | @base64d`, []byte("hello"), []any{"hello"}},
		{`[.[] | type]`, []any{[]byte{0}, 1, 1.5, "s", nil, true, []any{}, map[string]any{}},
			[]any{[]any{"string", "number", "number", "string", "null", "boolean", "array", "object"}}},
		{`.x`, map[string]any{"x": new(big.Int).SetInt64(5)}, []any{5}},
		{`empty`, nil, nil},
		{`1, 2, 3`, nil, []any{1, 2, 3}},
		{`.[]`, []any{"a", "b"}, []any{"a", "b"}},
		{`nan | isnan`, nil, []any{true}},
	}
	for _, tt := range tests {
		got := run(t, tt.src, tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Run(%q, %#v) = %#v, want %#v", tt.src, tt.in, got, tt.want)
		}
	}
}

func TestRunDoesNotModifyInput(t *testing.T) {
	in := map[string]any{"a": 2.0, "b": []any{1.0, []byte("x")}, "c": map[string]any{"d": 3.0}}
	out := run(t, `.`, in)
	if in["a"] != 2.0 || in["b"].([]any)[0] != 1.0 || in["c"].(map[string]any)["d"] != 3.0 {
		t.Fatalf("input modified: %#v", in)
	}
	if _, ok := in["b"].([]any)[1].([]byte); !ok {
		t.Fatalf("input bytes modified: %#v", in)
	}
	want := map[string]any{"a": 2, "b": []any{1, "eA=="}, "c": map[string]any{"d": 3}}
	if !reflect.DeepEqual(out, []any{want}) {
		t.Fatalf("got %#v", out)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		src, msg string
		in       any
	}{
		{`error("boom")`, "boom", nil},
		{`error({"a":1})`, `error: {"a":1}`, nil},
		{`.a.b`, "expected an object but got: number (1)", map[string]any{"a": 1}},
		{`1, error("late")`, "late", nil},
		{`error("two\nlines")`, `two\nlines`, nil},
	}
	for _, tt := range tests {
		p, err := Compile(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background(), tt.in)
		var re *RunError
		if !errors.As(err, &re) {
			t.Errorf("Run(%q): want *RunError, got %v (%v)", tt.src, err, out)
			continue
		}
		if re.Message != tt.msg {
			t.Errorf("Run(%q): message %q, want %q", tt.src, re.Message, tt.msg)
		}
		if out != nil {
			t.Errorf("Run(%q): values %v returned with an error", tt.src, out)
		}
	}
	p, _ := Compile(`.`)
	if _, err := p.Run(context.Background(), make(chan int)); err == nil {
		t.Error("unsupported input type: want error")
	}
}

func TestRunCancellation(t *testing.T) {
	p, err := Compile(`def f: f; f`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Run(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("cancellation took too long")
	}

	p, _ = Compile(`repeat(1)`)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := p.Run(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
}

func TestConcurrentRun(t *testing.T) {
	p, err := Compile(`[.[] | . * 2]`)
	if err != nil {
		t.Fatal(err)
	}
	in := []any{1, 2.5}
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				out, err := p.Run(context.Background(), in)
				if err != nil || !reflect.DeepEqual(out, []any{[]any{2, 5}}) {
					t.Errorf("got %v %v", out, err)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`.`, `now`, `.now`, `"\(now)"`, `def now: 1; now`, `import "a" as a; .`, `{$ENV}`, `$__loc__`,
		`reduce .[] as [$a, {b: $c}] (0; . + $a)`, `.[1:2]`, `"\(1 +)"`, `# c\\` + "\nnow", `@sh "\(env)"`,
		`label $f | foreach .[] as $x (0; .; if . then break $f else . end)`, `def f(g; $h): g | $h; f(.; 1)`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile(%q): error %T", src, err)
			}
			if e.Offset < -1 || e.Offset > len(src) {
				t.Fatalf("Compile(%q): offset %d out of range", src, e.Offset)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, _ = p.Run(ctx, map[string]any{"a": []any{1, "x"}})
	})
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(`[.data.tags[] | ascii_downcase] | map(select(length > 2))`); err != nil {
			b.Fatal(err)
		}
	}
}

// fromjson yields json.Number inside gojq; results follow §3.6 like any
// other number.
func TestRunFromJSONNumbers(t *testing.T) {
	p, err := Compile(`fromjson | [.i, .f, .big]`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), `{"i": 42, "f": 1.5, "big": 1e300}`)
	if err != nil {
		t.Fatal(err)
	}
	got := out[0].([]any)
	if got[0] != 42 || got[1] != 1.5 || got[2] != 1e300 {
		t.Errorf("got %#v, want [42 1.5 1e300] as int, float64, float64", got)
	}
}
