package dispatch

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchCell is one leaf benchmark: its full name, what one iteration costs
// on the 2-core machine (the sleeps it does, or a generous bound on its
// work), and what each run of the function costs besides its iterations.
type benchCell struct {
	name         string
	perOp, fixed time.Duration
}

// benchCells lists every leaf of the package's benchmarks, from the grids
// the benchmarks themselves range over.
func benchCells() []benchCell {
	const call = 20 * time.Microsecond // ~15× the measured overhead per call
	var cs []benchCell
	for _, g := range overheadGrid {
		cs = append(cs, benchCell{fmt.Sprintf("BenchmarkDispatchOverhead/N=%d/P=%d", g.n, g.p), time.Duration(g.n) * call, 0})
	}
	for _, p := range allocsCaps { // testing.AllocsPerRun(200, …) on every run
		cs = append(cs, benchCell{fmt.Sprintf("BenchmarkDispatchOverheadAllocs/N=64/P=%d", p), 64 * call, 201 * 64 * call})
	}
	cs = append(cs, benchCell{"BenchmarkTenThousandCalls", 10000 * call / 2, 0})
	for _, l := range wallLatencies {
		for _, n := range wallSizes {
			for _, p := range wallCaps {
				waves := (n + min(n, p) - 1) / min(n, p)
				cs = append(cs, benchCell{fmt.Sprintf("BenchmarkDispatchWall/L=%s/N=%d/P=%d", l, n, p), time.Duration(waves) * (l + 500*time.Microsecond), 0})
			}
		}
	}
	for _, l := range stragglerLatencies {
		cs = append(cs, benchCell{fmt.Sprintf("BenchmarkDispatchStraggler/L=%s", l), 10*l + 500*time.Microsecond, 0})
	}
	return append(cs, benchCell{"BenchmarkCancelLatency", 6 * time.Millisecond, 0})
}

// splitBench splits a -bench pattern like the testing package does: by '|'
// and '/' outside brackets and parentheses, into alternatives of
// per-level patterns.
func splitBench(s string) [][]string {
	var alts [][]string
	var cur []string
	cs, cp := 0, 0
	for i := 0; i < len(s); {
		switch s[i] {
		case '[':
			cs++
		case ']':
			if cs--; cs < 0 {
				cs = 0
			}
		case '(':
			if cs == 0 {
				cp++
			}
		case ')':
			if cs == 0 {
				cp--
			}
		case '\\':
			i++
		case '/', '|':
			if cs == 0 && cp == 0 {
				cur = append(cur, s[:i])
				if s[i] == '|' {
					alts, cur = append(alts, cur), nil
				}
				s, i = s[i+1:], 0
				continue
			}
		}
		i++
	}
	return append(alts, append(cur, s))
}

func benchSelects(alts [][]string, name string) bool {
	elems := strings.Split(name, "/")
next:
	for _, alt := range alts {
		for i, e := range elems {
			if i >= len(alt) {
				break
			}
			if ok, err := regexp.MatchString(alt[i], e); err != nil || !ok {
				continue next
			}
		}
		return true
	}
	return false
}

// shellWords splits a command line, honouring single and double quotes.
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out, in = append(out, w.String()), false
				w.Reset()
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// estimate is how long a `go test -bench` command spends in the package's
// benchmarks: with -benchtime Nx each selected leaf runs once (to size it)
// and then N times; with a duration it ramps b.N up to the duration.
func estimate(t *testing.T, cmd string) time.Duration {
	t.Helper()
	args := shellWords(cmd)
	bench, benchtime, count := "", "1s", 1
	for i := 0; i < len(args); i++ {
		flag, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || (flag != "bench" && flag != "benchtime" && flag != "count") {
			continue
		}
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		switch flag {
		case "bench":
			bench = val
		case "benchtime":
			benchtime = val
		case "count":
			n, err := strconv.Atoi(val)
			if err != nil {
				t.Fatalf("%s: -count %q", cmd, val)
			}
			count = n
		}
	}
	if bench == "" {
		return 0
	}
	alts := splitBench(bench)
	var total time.Duration
	for _, c := range benchCells() {
		if !benchSelects(alts, c.name) {
			continue
		}
		if n, ok := strings.CutSuffix(benchtime, "x"); ok {
			k, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("%s: -benchtime %q", cmd, benchtime)
			}
			total += c.perOp + c.fixed
			if k > 1 {
				total += time.Duration(k)*c.perOp + c.fixed
			}
			continue
		}
		d, err := time.ParseDuration(benchtime)
		if err != nil {
			t.Fatalf("%s: -benchtime %q", cmd, benchtime)
		}
		total += c.perOp + 3*d + 6*c.fixed // the ramp-up overshoots by ≤ 1.2× per step
	}
	return time.Duration(count) * total
}

// Every dispatch benchmark command in BENCHMARKS.md finishes in minutes on
// the 2-core machine. `-bench . -benchtime=2000x` ran every cell of the wall
// grid 2,001 times: about 14 hours of sleeping at L = 100 ms alone.
func TestBenchmarkCommandsFinish(t *testing.T) {
	const limit = 5 * time.Minute
	doc, err := os.ReadFile("../../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile("go test \\./verbs/agent/dispatch/[^`\n]*").FindAllString(string(doc), -1)
	if len(cmds) == 0 {
		t.Fatal("BENCHMARKS.md gives no dispatch benchmark command")
	}
	for _, cmd := range cmds {
		if d := estimate(t, cmd); d > limit {
			t.Errorf("%s\n\truns its benchmarks for about %s (> %s)", cmd, d.Round(time.Second), limit)
		} else {
			t.Logf("%s: about %s", cmd, d.Round(time.Second))
		}
	}
	// the estimate itself: the old command, and a one-cell selection
	if d := estimate(t, "go test ./verbs/agent/dispatch/ -run '^$' -bench . -benchmem -benchtime=2000x"); d < 10*time.Hour {
		t.Errorf("estimate of -bench . -benchtime=2000x: %s", d)
	}
	if d := estimate(t, "go test -bench '^BenchmarkDispatchWall$/^L=100ms$/^N=64$/^P=1$' -benchtime 2x -count 2"); d != 2*3*64*(100500*time.Microsecond) {
		t.Errorf("estimate of one 64-wave cell, 3 runs, twice: %s", d)
	}
}
