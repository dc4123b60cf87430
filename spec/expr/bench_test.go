package expr

import (
	"fmt"
	"testing"
)

var benchEnv = Env{
	Vars: map[string]Type{"limit": Int, "name": String, "list": Array, "cfg": Object},
	Env:  map[string]Type{"HOME": String},
}

func BenchmarkCompile(b *testing.B) {
	for _, src := range []string{
		`tasks.t12.output.title + with.x`,
		`tasks.t12.output.title`,
		`vars.limit > 3 && has(tasks.t1.output.items) ? size(tasks.t1.output.items) : 0`,
	} {
		b.Run(src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, issues := Compile(src, benchEnv); issues != nil {
					b.Fatal(issues)
				}
			}
		})
	}
}

// BenchmarkCompileDistinct compiles a different source each time, as the
// checker does for 10,000 tasks.
func BenchmarkCompileDistinct(b *testing.B) {
	srcs := make([]string, 10000)
	for i := range srcs {
		srcs[i] = fmt.Sprintf("tasks.t%d.output.title + with.x", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, issues := Compile(srcs[i%len(srcs)], benchEnv); issues != nil {
			b.Fatal(issues)
		}
		i++
	}
}

func BenchmarkEval(b *testing.B) {
	p, issues := Compile(`tasks.t12.output.title + with.x`, benchEnv)
	if issues != nil {
		b.Fatal(issues)
	}
	values := map[string]any{
		"tasks": map[string]any{"t12": map[string]any{"output": map[string]any{"title": "a"}}},
		"with":  map[string]any{"x": "b"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Eval(values); err != nil {
			b.Fatal(err)
		}
	}
}
