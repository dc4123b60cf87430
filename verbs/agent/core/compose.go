package core

import (
	"encoding/json"
	"fmt"

	"github.com/nikahq/nika/spec"
)

// Limits of nika:compose (AGENT.md §9).
const (
	composeMaxBytes = 262144
	composeListed   = 12
)

// separator between code and message in fed-back error contents (§6.4).
const separator = " · "

// composeResult is D31's result shape for a checked draft (stage "check"), fields in this order. Every
// field is always present: a draft with no finding says so with "conformance":[] and
// "conformance_total":0, rather than leaving the model to guess what a missing field means.
type composeResult struct {
	Valid            bool             `json:"valid"`
	Stage            string           `json:"stage"`
	Conformance      []composeFinding `json:"conformance"`
	ConformanceTotal int              `json:"conformance_total"`
	WarningsTotal    int              `json:"warnings_total"`
	Tasks            int              `json:"tasks"`
	Waves            int              `json:"waves"`
}

// composeFailure is the result of an args, size or parse failure (AGENT.md §9): exactly these three fields.
type composeFailure struct {
	Valid bool   `json:"valid"`
	Stage string `json:"stage"`
	Error string `json:"error"`
}

type composeFinding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func encode(v any) []byte {
	var sb jsonBuffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b := sb.b
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return b
}

type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }

// Compose checks a draft workflow statically (AGENT.md §9, D31); it never runs it. It is pure but
// CPU-bound: the driver runs it in the call's phase-1 worker, like any tool.
func Compose(args json.RawMessage) []byte {
	var a map[string]json.RawMessage
	var draft string
	if json.Unmarshal(args, &a) != nil || json.Unmarshal(a["workflow_yaml"], &draft) != nil {
		return encode(composeFailure{Stage: "args", Error: spec.CodeBuiltinArgs + separator + "nika:compose needs a string workflow_yaml"})
	}
	if len(draft) > composeMaxBytes {
		return encode(composeFailure{Stage: "size", Error: fmt.Sprintf("draft is %d bytes; the limit is %d", len(draft), composeMaxBytes)})
	}
	an := spec.CheckSource("draft.nika.yaml", []byte(draft), spec.CheckOptions{})
	errs, warns := spec.Split(an.Findings)
	if an.File == nil || an.Graph == nil {
		msg := "the draft does not parse"
		if len(errs) > 0 {
			msg = errs[0].Code + separator + errs[0].Message
		}
		return encode(composeFailure{Stage: "parse", Error: msg})
	}
	res := composeResult{Valid: len(errs) == 0, Stage: "check", Conformance: []composeFinding{}}
	for i, f := range an.Findings {
		if i == composeListed {
			break
		}
		res.Conformance = append(res.Conformance, composeFinding{Code: f.Code, Message: f.Message})
	}
	res.ConformanceTotal, res.WarningsTotal, res.Tasks, res.Waves = len(an.Findings), len(warns), len(an.Tasks), len(an.Graph.Waves())
	return encode(res)
}

// ComposeVerdict reads {valid, violations} back from a compose result (§9 telemetry); an args, size
// or parse failure (any stage but "check") counts as one violation.
func ComposeVerdict(res Result) (bool, int) {
	var c composeResult
	if res.Err != nil || json.Unmarshal([]byte(res.Content), &c) != nil || c.Stage != "check" {
		return false, 1
	}
	return c.Valid, c.ConformanceTotal
}
