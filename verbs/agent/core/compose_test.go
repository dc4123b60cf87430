package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// D31: a checked draft's result always carries every field, in order; a draft with no finding says
// "conformance":[] rather than leaving the field out (an omitted field reads as "unknown", not "none").
func TestComposeCleanDraftListsEmptyConformance(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"workflow_yaml": "nika: v1\nworkflow: draft\nmodel: mock/echo\ntasks:\n  - id: a\n    infer: {prompt: hi}\n"})
	got := string(Compose(args))
	want := `{"valid":true,"stage":"check","conformance":[],"conformance_total":0,"warnings_total":0,"tasks":1,"waves":1}`
	if got != want {
		t.Fatalf("compose result\n got %s\nwant %s", got, want)
	}
}

// §13.5: exactly 262,144 bytes is accepted; one more byte is stage size, before parsing.
func TestComposeSizeCap(t *testing.T) {
	head := "nika: v1\nworkflow: d\ntasks:\n  - id: a\n    infer:\n      prompt: hi\n#"
	draft := func(n int) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"workflow_yaml": head + strings.Repeat("x", n-len(head)-1) + "\n"})
		return b
	}
	var ok composeResult
	var over composeFailure
	if err := json.Unmarshal(Compose(draft(262144)), &ok); err != nil || ok.Stage != "check" {
		t.Fatalf("262144 bytes: %+v %v", ok, err)
	}
	if err := json.Unmarshal(Compose(draft(262145)), &over); err != nil || over.Stage != "size" || over.Valid ||
		over.Error != "draft is 262145 bytes; the limit is 262144" {
		t.Fatalf("262145 bytes: %+v %v", over, err)
	}
}

// §13.5 (D31): 20 findings → the first 12 listed, conformance_total 20.
func TestComposeListsFirstTwelveFindings(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("nika: v1\nworkflow: d\ntasks:\n")
	for i := range 20 {
		fmt.Fprintf(&sb, "  - id: t%d\n    depends_on: [missing%d]\n    infer:\n      model: mock/echo\n      prompt: hi\n", i, i)
	}
	b, _ := json.Marshal(map[string]string{"workflow_yaml": sb.String()})
	raw := Compose(b)
	var c composeResult
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Stage != "check" || c.Valid || len(c.Conformance) != 12 || c.ConformanceTotal != 20 {
		t.Fatalf("compose result %s", raw)
	}
	res := Result{Content: string(raw)}
	if valid, violations := ComposeVerdict(res); valid || violations != 20 {
		t.Fatalf("verdict %v %d", valid, violations)
	}
}
