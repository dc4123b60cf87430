package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/verbs/agent/core"
	"github.com/nikahq/nika/verbs/agent/dispatch"
	"github.com/nikahq/nika/verbs/agent/guard"
	"github.com/nikahq/nika/verbs/agent/router"
)

// The script tests drive core.Loop alone, in the style of etcd raft's data-driven tests: no
// provider, no tool, no goroutine, no clock. Each testdata/*.txt file is a list of blocks
//
//	command args
//	input lines
//	----
//	expected output
//
// separated by blank lines ('#' starts a comment line between blocks). The test runs each command
// and compares what it printed with the expected output; `go test -run TestScripts -rewrite`
// writes the printed output back into the files. How a Step prints is in script_print_test.go.
//
// Commands: arm (YAML input: the Arming), start, next, reply (input: text/call/usage lines, or
// fail/none), resolve (input: ok/err lines, each optionally followed by spilled and emit lines),
// turn (next, reply and resolve in one block) and cancel.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt scripts")

// scriptBlock is one command of a script file.
type scriptBlock struct {
	pos   string // file:line, for failures
	cmd   string
	args  []string
	input []string
	want  string
}

// parseScript reads the blocks of one script file; comments between blocks are kept in order
// (as blocks with cmd "#") so a rewrite gives them back.
func parseScript(path string, src []byte) ([]scriptBlock, error) {
	var out []scriptBlock
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			return out, sc.Err()
		}
		switch {
		case strings.TrimSpace(l) == "":
			continue
		case strings.HasPrefix(l, "#"):
			out = append(out, scriptBlock{cmd: "#", want: l})
			continue
		}
		b := scriptBlock{pos: fmt.Sprintf("%s:%d", path, line)}
		f := strings.Fields(l)
		b.cmd, b.args = f[0], f[1:]
		for {
			l, ok = next()
			if !ok {
				return nil, fmt.Errorf("%s: no ---- after the command", b.pos)
			}
			if l == "----" {
				break
			}
			b.input = append(b.input, l)
		}
		var want []string
		for {
			l, ok = next()
			if !ok || l == "" {
				break
			}
			want = append(want, l)
		}
		b.want = strings.Join(want, "\n")
		out = append(out, b)
		if !ok {
			return out, sc.Err()
		}
	}
}

// formatScript writes blocks back with got outputs, for -rewrite.
func formatScript(blocks []scriptBlock, got []string) []byte {
	var sb strings.Builder
	for i, b := range blocks {
		if i > 0 && blocks[i-1].cmd != "#" {
			sb.WriteString("\n") // blocks are separated by a blank line; a comment sticks to what follows
		}
		if b.cmd == "#" {
			sb.WriteString(b.want + "\n")
			continue
		}
		sb.WriteString(strings.Join(append([]string{b.cmd}, b.args...), " ") + "\n")
		for _, l := range b.input {
			sb.WriteString(l + "\n")
		}
		sb.WriteString("----\n" + got[i] + "\n")
	}
	return []byte(sb.String())
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := parseScript(path, src)
			if err != nil {
				t.Fatal(err)
			}
			s := &script{}
			got := make([]string, len(blocks))
			for i, b := range blocks {
				if b.cmd == "#" {
					continue
				}
				got[i] = strings.TrimRight(s.run(b), "\n")
				if got[i] == "" {
					got[i] = "(nothing)"
				}
				if !*rewrite && got[i] != b.want {
					t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", b.pos, b.cmd, got[i], b.want)
				}
			}
			if *rewrite {
				if err := os.WriteFile(path, formatScript(blocks, got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A change to the loop's decisions must show in a script's output: the parser and the comparison
// are what make that so, so they are pinned here on a tiny script.
func TestScriptParserRoundTrips(t *testing.T) {
	src := "# a comment\n# another\narm\nprompt: p\n----\nok\n\nstart\n----\nobserve run_started {}\nnext\n"
	blocks, err := parseScript("x.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 4 || blocks[2].cmd != "arm" || blocks[2].input[0] != "prompt: p" || blocks[3].want != "observe run_started {}\nnext" {
		t.Fatalf("blocks %+v", blocks)
	}
	got := []string{"", "", "ok", "observe run_started {}\nnext"}
	if out := string(formatScript(blocks, got)); out != src {
		t.Fatalf("round trip:\n%s\nwant:\n%s", out, src)
	}
}

// script is the state of one script file: the loop under test and what was printed of it.
type script struct {
	loop  *core.Loop
	batch *core.Batch
	sent  []string // the transcript of the last request printed, one line per message
}

func (s *script) run(b scriptBlock) string {
	switch b.cmd {
	case "arm":
		return s.arm(b)
	case "start":
		return s.step(s.loop.Start())
	case "next":
		return s.step(s.loop.Next())
	case "reply":
		return s.step(s.loop.Replied(parseReply(b.input)))
	case "resolve":
		res, err := parseResults(b.input)
		if err != nil {
			return err.Error()
		}
		return s.step(s.loop.Resolved(res))
	case "turn":
		return s.turn(b)
	case "cancel":
		return s.step(s.loop.Cancel(spec.NewError(CodeCancel, "cancelled", nil)))
	}
	return "unknown command " + b.cmd
}

// turn is next, reply and resolve in one block: reply lines first, then result lines; with no
// result line the batch stays out (for a cancel block to follow).
func (s *script) turn(b scriptBlock) string {
	var reply, results []string
	for _, l := range b.input {
		switch strings.Fields(l + " x")[0] {
		case "ok", "err", "spilled", "emit":
			results = append(results, l)
		default:
			reply = append(reply, l)
		}
	}
	out := s.step(s.loop.Next())
	out += s.step(s.loop.Replied(parseReply(reply)))
	if s.batch == nil || len(results) == 0 {
		return out
	}
	res, err := parseResults(results)
	if err != nil {
		return out + err.Error()
	}
	return out + s.step(s.loop.Resolved(res))
}

// scriptArming is the arm command's YAML.
type scriptArming struct {
	Model          string   `yaml:"model"`
	Prompt         string   `yaml:"prompt"`
	System         string   `yaml:"system"`
	Temperature    *float64 `yaml:"temperature"`
	MaxTurns       int      `yaml:"max_turns"`
	MaxTokensTotal int      `yaml:"max_tokens_total"`
	Tools          []string `yaml:"tools"`
	Permits        []string `yaml:"permits"`
	Schema         string   `yaml:"schema"` // JSON
	Native         bool     `yaml:"native"`
	// Universe: one entry per tool, "name" or "name description…".
	Universe []string `yaml:"universe"`
	Guard    struct {
		NudgeAfter       int `yaml:"nudge_after"`
		StallAfter       int `yaml:"stall_after"`
		MaxReflections   int `yaml:"max_reflections"`
		ErrorStreakNudge int `yaml:"error_streak_nudge"`
	} `yaml:"guard"`
	Router struct {
		MinUniverse  int `yaml:"min_universe"`
		TopK         int `yaml:"top_k"`
		RecencyTurns int `yaml:"recency_turns"`
	} `yaml:"router"`
}

func (s *script) arm(b scriptBlock) string {
	src := strings.Join(b.input, "\n")
	var sa scriptArming
	if err := yaml.UnmarshalWithOptions([]byte(src), &sa, yaml.DisallowUnknownField()); err != nil {
		return "bad arming: " + err.Error()
	}
	a := core.Arming{Model: sa.Model, Prompt: sa.Prompt, System: sa.System, Temperature: sa.Temperature,
		MaxTurns: sa.MaxTurns, Blame: core.BlameCaller, MaxTokens: sa.MaxTokensTotal, Tools: sa.Tools, Native: sa.Native,
		Guard:  guard.Config{NudgeAfter: sa.Guard.NudgeAfter, StallAfter: sa.Guard.StallAfter, MaxReflections: sa.Guard.MaxReflections, ErrorStreakNudge: sa.Guard.ErrorStreakNudge},
		Router: router.Config{MinUniverse: sa.Router.MinUniverse, TopK: sa.Router.TopK, RecencyTurns: sa.Router.RecencyTurns}}
	if a.Model == "" {
		a.Model = "test/m"
	}
	if a.MaxTurns == 0 {
		a.MaxTurns, a.Blame = DefaultMaxTurns, core.BlameContract
	}
	if sa.Permits != nil {
		a.Permits = &core.Permits{Tools: sa.Permits}
	}
	if sa.Schema != "" {
		if err := json.Unmarshal([]byte(sa.Schema), &a.Schema); err != nil {
			return "bad schema: " + err.Error()
		}
	}
	for _, u := range sa.Universe {
		name, desc, _ := strings.Cut(u, " ")
		a.Universe = append(a.Universe, provider.ToolDef{Name: name, Description: desc})
	}
	l, err := core.New(a)
	if err != nil {
		return "error " + formatErr(err)
	}
	s.loop, s.batch, s.sent = l, nil, nil
	return "ok"
}

// parseReply reads a model reply: text/call blocks, a usage line, or a failure.
func parseReply(lines []string) core.Reply {
	resp := &provider.Response{Message: provider.Message{Role: provider.RoleAssistant}}
	for _, l := range lines {
		word, rest, _ := strings.Cut(l, " ")
		switch word {
		case "text":
			resp.Message.Blocks = append(resp.Message.Blocks, provider.TextBlock(rest))
		case "call":
			f := strings.SplitN(rest, " ", 3)
			for len(f) < 3 {
				f = append(f, "")
			}
			resp.Message.Blocks = append(resp.Message.Blocks, provider.ToolUseBlock(f[0], unquote(f[1]), json.RawMessage(f[2])))
		case "usage":
			f := strings.Fields(rest)
			in, _ := strconv.Atoi(f[0])
			out, _ := strconv.Atoi(f[1])
			resp.Usage = provider.Usage{InputTokens: in, OutputTokens: out, Reported: true}
		case "fail":
			code, msg, _ := strings.Cut(rest, " ")
			e := spec.NewError(code, msg, nil)
			e.Transient = true
			return core.Reply{Err: e}
		case "none":
			return core.Reply{}
		}
	}
	return core.Reply{Response: resp}
}

// unquote lets a script name a tool with spaces or control characters: "…" is a Go string.
func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// parseResults reads a batch's results: ok/err lines in request order, each optionally followed by
// spilled and emit lines that belong to it.
func parseResults(lines []string) ([]core.Result, error) {
	var out []core.Result
	for _, l := range lines {
		word, rest, _ := strings.Cut(l, " ")
		if word != "ok" && word != "err" && len(out) == 0 {
			return nil, fmt.Errorf("%q before any result", l)
		}
		switch word {
		case "ok":
			out = append(out, core.Result{Content: rest})
		case "err":
			code, msg, _ := strings.Cut(rest, " ")
			e := spec.NewError(code, msg, nil)
			out = append(out, core.Result{Content: code + dispatch.Separator + msg, Err: e})
		case "spilled":
			out[len(out)-1].Spilled = rest
		case "emit":
			kind, js, _ := strings.Cut(rest, " ")
			var f map[string]any
			if err := json.Unmarshal([]byte(js), &f); err != nil {
				return nil, fmt.Errorf("emit %s: %v", kind, err)
			}
			r := &out[len(out)-1]
			r.Events = append(r.Events, core.Emitted{Kind: kind, Fields: f})
		default:
			return nil, fmt.Errorf("unknown result line %q", l)
		}
	}
	return out, nil
}
