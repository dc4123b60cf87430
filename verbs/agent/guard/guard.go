// Package guard implements the agent loop's stall detection and reflection
// nudges (AGENT.md §7). It is deterministic and pure: no goroutines, no clock,
// no map iteration. A Guard is used from the loop goroutine only.
package guard

import (
	"strconv"
	"strings"
)

// Config is GuardConfig of AGENT.md §7.4. A field <= 0 takes its default.
type Config struct {
	NudgeAfter       int // repeats that draw a repeated_actions nudge
	StallAfter       int // repeats that stall the run (at least NudgeAfter+1)
	MaxReflections   int // nudges per run, shared by both kinds
	ErrorStreakNudge int // consecutive all-error turns that draw an error_streak nudge
	Window           int // signatures kept; raised to StallAfter×8 (reach invariant)
}

// Defaults of AGENT.md §7.4.
const (
	DefaultNudgeAfter       = 3
	DefaultStallAfter       = 5
	DefaultMaxReflections   = 1
	DefaultErrorStreakNudge = 2
	DefaultWindow           = 40
	maxPeriod               = 8 // the reach invariant's longest cycle
)

// DefaultConfig returns the §7.4 defaults.
func DefaultConfig() Config {
	return Config{
		NudgeAfter:       DefaultNudgeAfter,
		StallAfter:       DefaultStallAfter,
		MaxReflections:   DefaultMaxReflections,
		ErrorStreakNudge: DefaultErrorStreakNudge,
		Window:           DefaultWindow,
	}
}

// normalized fills defaults for fields <= 0 and applies the reach invariant.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.NudgeAfter <= 0 {
		c.NudgeAfter = d.NudgeAfter
	}
	if c.StallAfter <= 0 {
		c.StallAfter = d.StallAfter
	}
	if c.MaxReflections <= 0 {
		c.MaxReflections = d.MaxReflections
	}
	if c.ErrorStreakNudge <= 0 {
		c.ErrorStreakNudge = d.ErrorStreakNudge
	}
	if c.Window <= 0 {
		c.Window = d.Window
	}
	c.Window = max(c.Window, c.StallAfter*maxPeriod)
	return c
}

// Reason names a nudge kind (the `reason` field of agent_nudge).
type Reason string

// Nudge reasons of AGENT.md §7.3 / §10.1.
const (
	ReasonRepeatedActions Reason = "repeated_actions"
	ReasonErrorStreak     Reason = "error_streak"
)

// Kind is the verdict of one Observe call.
type Kind int

// Verdict kinds.
const (
	Continue Kind = iota // proceed
	Nudge                // append Verdict.Text to the turn's user message
	Stalled              // fail NIKA-AGENT-003; no further request
)

func (k Kind) String() string {
	switch k {
	case Continue:
		return "continue"
	case Nudge:
		return "nudge"
	case Stalled:
		return "stalled"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Verdict is the result of observing one dispatch turn.
type Verdict struct {
	Kind    Kind
	Reason  Reason // Nudge only
	Period  int    // Nudge: the cycle period (0 for error_streak); Stalled: the cycle period
	Repeats int    // Stalled: the repeats that tripped it; Nudge(repeated_actions): the repeats seen
	Text    string // Nudge only: the exact §7.5 text
}

// Exact nudge texts of AGENT.md §7.5.
const (
	repeatedActionsPrefix = "[loop-guard] Your recent actions form a "
	repeatedActionsSuffix = "-turn cycle that keeps returning identical results. Running them again will not tell you anything new. Summarize what the results you already have show, then either try a different action or finish now with your best answer."
	ErrorStreakText       = "[loop-guard] Every tool call in your recent turns failed. Read the error messages again and state the most likely cause. Then correct the arguments, pick another tool, or finish now with your best answer."
)

// RepeatedActionsText returns the exact repeated_actions nudge for a period.
func RepeatedActionsText(period int) string {
	var b strings.Builder
	b.WriteString(repeatedActionsPrefix)
	b.WriteString(strconv.Itoa(period))
	b.WriteString(repeatedActionsSuffix)
	return b.String()
}

// Guard holds the per-run state of AGENT.md §7.2. The zero value is not usable;
// call New. A fresh Guard is built per attempt.
type Guard struct {
	cfg         Config
	stallAt     int
	ring        []Signature // circular buffer of the last cfg.Window signatures
	start, n    int
	streak      int
	reflections int
	turns       int
}

// New returns a fresh guard. Fields <= 0 take the §7.4 defaults and the
// window is raised to StallAfter×8 when smaller.
func New(cfg Config) *Guard {
	cfg = cfg.normalized()
	return &Guard{
		cfg:     cfg,
		stallAt: max(cfg.StallAfter, cfg.NudgeAfter+1),
		ring:    make([]Signature, cfg.Window),
	}
}

// Config returns the effective configuration (defaults filled, window clamped).
func (g *Guard) Config() Config { return g.cfg }

// Reflections returns the nudges issued so far.
func (g *Guard) Reflections() int { return g.reflections }

// Streak returns the current error streak.
func (g *Guard) Streak() int { return g.streak }

// Observe records one dispatch turn and returns the verdict (§7.3). sig is the
// turn's Sign value; allErrors is true when the turn had at least one real
// (non-compose) call and every real call errored. A turn made only of compose
// calls passes false, which resets the streak.
func (g *Guard) Observe(sig Signature, allErrors bool) Verdict {
	g.turns++
	g.push(sig)
	if allErrors {
		g.streak++
	} else {
		g.streak = 0
	}
	period, repeats := g.dominantCycle()
	switch {
	case repeats >= g.stallAt:
		return Verdict{Kind: Stalled, Period: period, Repeats: repeats}
	case repeats >= g.cfg.NudgeAfter && g.reflections < g.cfg.MaxReflections:
		g.reflections++
		return Verdict{Kind: Nudge, Reason: ReasonRepeatedActions, Period: period, Repeats: repeats, Text: RepeatedActionsText(period)}
	case g.streak >= g.cfg.ErrorStreakNudge && g.reflections < g.cfg.MaxReflections:
		g.reflections++
		g.streak = 0
		return Verdict{Kind: Nudge, Reason: ReasonErrorStreak, Period: 0, Text: ErrorStreakText}
	}
	return Verdict{Kind: Continue}
}

func (g *Guard) push(sig Signature) {
	w := len(g.ring)
	if g.n < w {
		g.ring[(g.start+g.n)%w] = sig
		g.n++
		return
	}
	g.ring[g.start] = sig
	g.start = (g.start + 1) % w
}

// at returns the i-th signature of the window, 0 = oldest.
func (g *Guard) at(i int) Signature { return g.ring[(g.start+i)%len(g.ring)] }

// dominantCycle returns the period and repeat count of the dominant cycle
// ending at the newest signature, or (0, 0) when there is none (§7.2): for each
// period p = 1…⌊n/2⌋, the count of contiguous length-p blocks ending at the
// newest signature that equal the newest block; the highest count wins, the
// smaller period on a tie; a cycle needs at least 2 repeats.
func (g *Guard) dominantCycle() (period, repeats int) {
	n := g.n
	for p := 1; p <= n/2; p++ {
		count := 1
		for k := 1; (k+1)*p <= n; k++ {
			if !g.blockEqual(n-p, n-(k+1)*p, p) {
				break
			}
			count++
		}
		if count > repeats {
			period, repeats = p, count
		}
	}
	if repeats < 2 {
		return 0, 0
	}
	return period, repeats
}

func (g *Guard) blockEqual(a, b, p int) bool {
	for i := range p {
		if g.at(a+i) != g.at(b+i) {
			return false
		}
	}
	return true
}
