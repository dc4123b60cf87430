package expr

import (
	"fmt"
	"testing"
)

func TestProbe(t *testing.T) {
	env := Env{Vars: map[string]Type{"limit": Int, "name": String, "list": Array, "obj": Object, "n": Null}, Env: map[string]Type{"HOME": String}}
	values := map[string]any{
		"vars":  map[string]any{"limit": 10, "name": "bob", "list": []any{1, 2, 3}, "obj": map[string]any{"a": 1, "n": nil}, "n": nil},
		"env":   map[string]any{"HOME": "/h"},
		"tasks": map[string]any{"a": map[string]any{"output": map[string]any{"x": 1, "s": "hello", "n": nil, "arr": []any{"p", "q"}}, "status": "success"}},
		"with":  map[string]any{"x": 1, "b": true, "s": "str", "f": 1.5},
		"item":  "it",
		"index": 2,
	}
	for _, src := range []string{
		`tasks.a.output.x + with.x`, `vars.limit + "x"`, `"n=" + 1`, `"n=" + with.x`, `now()`, `has(tasks.a.output.n)`, `has(tasks.a.output.zz)`,
		`has(tasks.b.output.zz)`, `has(tasks.a.output.s.x)`, `has(1)`, `foo + 1`, `Vars.limit`, `a == b == c`, `vars.limit < 1 < 2`, `(with.x != 1) == true`,
		`size(vars.name)`, `vars.name.size()`, `tasks.a.output.s.contains("ell")`, `with.x.contains("a")`, `1 in [1.0]`, `"x" in tasks.a.output`, `null`,
		`{a: 1} == {a: 1.0}`, `1 == "1"`, `with.x && true`, `true && with.x`, `!with.x`, `with.x ? 1 : 2`, `with.b ? 1 : 2`, `vars.list[-1]`, `vars.list[5]`,
		`vars.list[with.f]`, `vars.list[with.x]`, `"abc" matches "b"`, `7 / 2`, `fromJSON("{\"a\": 1, \"b\": 1.5, \"c\": 1e2}")`, `keys({b:1, a:2, c:3})`,
		`tasks.a.output?.x`, `filter(tasks.a.output.arr, # != null)`, `tasks['a'].output`, `tasks[item]`, `tasks[0]`, `date("2020-01-01")`, `duration("1h")`,
		`let x = 1; x + 1`, `let vars = 1; vars`, `$env`, `lenght(1)`, `vars.n.x`, `with.n.x`, `with.s.x`, `with.missing`, `null.x`, `size(vars.limit)`,
		`tasks.a.output.s.size()`, `index + 1`, `item`, `secrets.tok + 1`, `secrets.tok + "x"`, `vars.limit.x`, `map(vars.list, # * 2)`, `all(vars.list, #)`,
		`tasks.a.output.n ?? "d"`, `vars.list[1:2]`, `vars.list[with.f:]`, `toJSON(vars.obj)`, `"a" < 1`, `with.s < with.x`, `int("12")`, `vars.obj.n == null`,
		`with.s startsWith "s"`, `with.x startsWith "s"`, `not with.x`, `when`, `tasks.a.output.arr[0:1] == ["p"]`, `[1,2] == [1.0, 2.0]`, `values({b:1,a:2})`,
	} {
		p, issues := Compile(src, env)
		if len(issues) > 0 {
			fmt.Printf("%-40s ISSUES %v\n", src, issues)
			if p != nil {
				fmt.Printf("%-40s   refs=%+v\n", "", p.Refs)
			}
			continue
		}
		out, err := p.Eval(values)
		fmt.Printf("%-40s => %#v err=%v type=%v refs=%+v\n", src, out, err, p.Type, p.Refs)
	}
}
