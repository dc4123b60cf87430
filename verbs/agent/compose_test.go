package agent

import (
	"encoding/json"
	"testing"
)

// D31: a checked draft's result always carries every field, in order; a draft with no finding says
// "conformance":[] rather than leaving the field out (an omitted field reads as "unknown", not "none").
func TestComposeCleanDraftListsEmptyConformance(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"workflow_yaml": "nika: v1\nworkflow: draft\nmodel: mock/echo\ntasks:\n  - id: a\n    infer: {prompt: hi}\n"})
	got := string(compose(args))
	want := `{"valid":true,"stage":"check","conformance":[],"conformance_total":0,"warnings_total":0,"tasks":1,"waves":1}`
	if got != want {
		t.Fatalf("compose result\n got %s\nwant %s", got, want)
	}
}
