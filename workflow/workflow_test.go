package workflow

import (
	"errors"
	"testing"

	"github.com/nikahq/nika/spec"
)

func TestCompileKeepsCheckerPrograms(t *testing.T) {
	src := []byte(`nika: v1
workflow: diamond
model: mock/echo
tasks:
  - id: join
    depends_on: [left, right]
    infer: { prompt: "${{ tasks.left.output }} + ${{ tasks.right.output }}" }
  - id: left
    depends_on: [root]
    infer: { prompt: "L ${{ tasks.root.output }}" }
  - id: root
    infer: { prompt: "root" }
    output: { n: "length" }
  - id: right
    depends_on: [root]
    infer: { prompt: "R" }
`)
	a := spec.CheckSource("d.nika.yaml", src, spec.CheckOptions{})
	if !a.Valid() {
		t.Fatalf("findings: %v", a.Findings)
	}
	w, err := Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, task := range w.Order {
		order = append(order, task.ID)
	}
	if got, want := order, []string{"root", "left", "right", "join"}; !equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if len(w.Waves) != 3 || len(w.Waves[1]) != 2 {
		t.Errorf("waves = %d, want 3 with 2 in wave 1", len(w.Waves))
	}
	join := w.Task("join")
	prompt, ok := join.Body.(map[string]any)["prompt"].(*spec.Template)
	if !ok {
		t.Fatalf("join prompt is %T, want a compiled *spec.Template", join.Body.(map[string]any)["prompt"])
	}
	var progs int
	for _, p := range prompt.Parts {
		if p.Program != nil {
			progs++
		}
	}
	if progs != 2 {
		t.Errorf("join prompt has %d compiled programs, want 2", progs)
	}
	if b := w.Task("root").Bindings; len(b) != 1 || b[0].Program == nil {
		t.Errorf("root bindings = %+v, want one compiled jq program", b)
	}
}

func TestCompileRefusesInvalid(t *testing.T) {
	a := spec.CheckSource("x.nika.yaml", []byte("nika: v2\n"), spec.CheckOptions{})
	if _, err := Compile(a); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
