package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/verbs/agent/core"
)

// step prints one Step: its events in order, its live notes, then its action.
func (s *script) step(st core.Step) string {
	var sb strings.Builder
	for _, e := range st.Events {
		switch {
		case e.Wire != "" && e.Loop != "":
			fmt.Fprintf(&sb, "both %s/%s@%d %s\n", e.Wire, e.Loop, e.Turn, canonOf(e.Fields))
		case e.Wire != "":
			fmt.Fprintf(&sb, "emit %s %s\n", e.Wire, canonOf(e.Fields))
		default:
			fmt.Fprintf(&sb, "observe %s@%d %s\n", e.Loop, e.Turn, canonOf(e.Fields))
		}
	}
	for _, n := range st.Live {
		fmt.Fprintf(&sb, "live %s turn=%d reason=%s code=%s error=%v\n", n.Kind, n.Turn, n.Reason, n.Code, n.IsError)
	}
	s.batch = nil
	switch {
	case st.Next:
		sb.WriteString("next\n")
	case st.Request != nil:
		s.request(&sb, st.Request)
	case st.Batch != nil:
		s.batch = st.Batch
		fmt.Fprintf(&sb, "batch turn=%d\n", st.Batch.Turn)
		for i, c := range st.Batch.Calls {
			fmt.Fprintf(&sb, "  [%d] %s %s %s\n", i, c.ID, c.Name, c.Args)
		}
	case st.Done != nil:
		finish(&sb, st.Done)
	default:
		sb.WriteString("no action\n")
	}
	return sb.String()
}

// request prints a request and the messages of its transcript that differ from the last one
// printed (new ones, and an earlier one the loop rewrote).
func (s *script) request(sb *strings.Builder, r *core.Request) {
	names := make([]string, len(r.Tools))
	for i, d := range r.Tools {
		names[i] = d.Name
	}
	kind := "request"
	if r.Reask {
		kind = "reask"
	}
	fmt.Fprintf(sb, "%s turn=%d choice=%s tools=[%s]", kind, r.Turn, r.ToolChoice, strings.Join(names, " "))
	if r.System != "" {
		fmt.Fprintf(sb, " system=%q", r.System)
	}
	if r.Temperature != nil {
		fmt.Fprintf(sb, " temperature=%v", *r.Temperature)
	}
	if r.Schema != nil {
		fmt.Fprintf(sb, " schema=%s", canonOf(r.Schema))
	}
	if !r.Reask {
		fmt.Fprintf(sb, " admitted=%d", len(r.Admitted))
	}
	sb.WriteString("\n")
	msgs := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = message(m)
	}
	first := 0
	for first < len(msgs) && first < len(s.sent) && msgs[first] == s.sent[first] {
		first++
	}
	for i := first; i < len(msgs); i++ {
		fmt.Fprintf(sb, "  [%d] %s\n", i, msgs[i])
	}
	s.sent = msgs
}

// message prints one transcript message on one line: role, then each block.
func message(m provider.Message) string {
	var parts []string
	for _, b := range m.Blocks {
		switch b.Type {
		case provider.BlockText:
			parts = append(parts, fmt.Sprintf("text %q", b.Text))
		case provider.BlockToolUse:
			parts = append(parts, fmt.Sprintf("tool_use %s %s %s", b.ID, b.Name, b.Input))
		case provider.BlockToolResult:
			e := ""
			if b.IsError {
				e = " error"
			}
			parts = append(parts, fmt.Sprintf("tool_result %s%s %q", b.ToolUseID, e, b.Content))
		default:
			parts = append(parts, b.Type)
		}
	}
	return string(m.Role) + ": " + strings.Join(parts, " | ")
}

// finish prints the end of a run: verdict, turns and tokens, the output or error, the usage.
func finish(sb *strings.Builder, f *core.Finish) {
	if f.Err != nil {
		fmt.Fprintf(sb, "done error turns=%d tokens=%d %s\n", f.Turns, f.TotalTokens, formatErr(f.Err))
	} else {
		fmt.Fprintf(sb, "done ok turns=%d tokens=%d output=%s\n", f.Turns, f.TotalTokens, canonOf(f.Output))
	}
	if len(f.Usage) > 0 {
		u := make([]string, len(f.Usage))
		for i, x := range f.Usage {
			u[i] = fmt.Sprintf("%d+%d@%d", x.InputTokens, x.OutputTokens, x.Turn)
		}
		fmt.Fprintf(sb, "usage %s\n", strings.Join(u, " "))
	}
}

// formatErr prints a loop error: code, transience, message, details.
func formatErr(e *spec.Error) string {
	code := e.Code
	if code == "" {
		code = "(internal)"
	}
	out := fmt.Sprintf("%s transient=%v %q", code, e.Transient, e.Message)
	if len(e.Details) > 0 {
		out += " " + canonOf(e.Details)
	}
	return out
}

func canonOf(v any) string {
	b, err := canon.Marshal(v)
	if err != nil {
		j, _ := json.Marshal(v)
		return "!" + string(j)
	}
	return string(b)
}
