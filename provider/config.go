package provider

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bounds of the engine configuration read by ConfigFromEnv.
const (
	// MaxInFlightCap is the largest NIKA_<PROVIDER>_MAX_INFLIGHT accepted: far above any server's
	// capacity, low enough that a typo (an extra digit or three) is refused rather than obeyed.
	MaxInFlightCap = 1 << 20
	// BudgetCap is the largest NIKA_<PROVIDER>_RPM or NIKA_<PROVIDER>_TPM accepted.
	BudgetCap = math.MaxInt32
)

// EnvVar is the name of provider's engine variable with the given suffix: "NIKA_", the provider
// name upper-cased with every character other than an ASCII letter or digit written as "_", then
// "_" and suffix. EnvVar("openai", "API_KEY") is NIKA_OPENAI_API_KEY, EnvVar("my-llm", "RPM") is
// NIKA_MY_LLM_RPM. Every NIKA_<PROVIDER>_… variable is named by it (LANGUAGE.md §6.1).
func EnvVar(provider, suffix string) string {
	var b strings.Builder
	b.WriteString("NIKA_")
	for _, r := range provider {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	b.WriteString(suffix)
	return b.String()
}

// ConfigFromEnv reads the engine configuration of provider name from the environment seen through
// lookup (os.LookupEnv in production): NIKA_<PROVIDER>_MAX_INFLIGHT into MaxLimit,
// NIKA_<PROVIDER>_RPM into RPM, NIKA_<PROVIDER>_TPM into TPM (names by EnvVar), and
// NIKA_<PROVIDER>_STREAM, one of 1, true, 0 or false (any case), into NoStream (0 and false turn
// streaming off; issue 17 item 4). A variable unset or empty leaves its field zero, so NewFront
// takes the default (DefaultMaxLimit in flight, no budget, streaming on). A value that is not a
// whole number in range, or not one of the STREAM values, is an error naming the variable, the
// value and what is expected; the other fields are then zero too.
func ConfigFromEnv(name string, lookup func(string) (string, bool)) (FrontConfig, error) {
	var cfg FrontConfig
	for _, v := range []struct {
		suffix string
		field  *int
		want   string
		max    int
		unset  string
	}{
		{"MAX_INFLIGHT", &cfg.MaxLimit, "the most requests in flight to " + name, MaxInFlightCap,
			strconv.Itoa(DefaultMaxLimit)},
		{"RPM", &cfg.RPM, "the requests per minute " + name + " allows", BudgetCap, "no budget"},
		{"TPM", &cfg.TPM, "the tokens per minute " + name + " allows", BudgetCap, "no budget"},
	} {
		n, err := positiveEnv(lookup, EnvVar(name, v.suffix), v.want, v.max, v.unset)
		if err != nil {
			return FrontConfig{}, err
		}
		*v.field = n
	}
	on, err := streamEnv(lookup, EnvVar(name, "STREAM"), name)
	if err != nil {
		return FrontConfig{}, err
	}
	cfg.NoStream = !on
	return cfg, nil
}

// streamEnv reads variable through lookup as a switch: 1 or true (on), 0 or false (off), in any
// case; unset or blank is on.
func streamEnv(lookup func(string) (string, bool), variable, name string) (bool, error) {
	if lookup == nil {
		return true, nil
	}
	raw, ok := lookup(variable)
	s := strings.ToLower(strings.TrimSpace(raw))
	switch {
	case !ok || s == "" || s == "1" || s == "true":
		return true, nil
	case s == "0" || s == "false":
		return false, nil
	}
	return false, fmt.Errorf("%s is %q: want whether replies from %s are streamed: 1 or true, 0 or false (unset: 1)",
		variable, raw, name)
}

// positiveEnv reads variable through lookup as a whole number from 1 to max; unset or blank is 0.
// unset says, in the error, what leaving the variable unset means.
func positiveEnv(lookup func(string) (string, bool), variable, want string, max int, unset string) (int, error) {
	if lookup == nil {
		return 0, nil
	}
	raw, ok := lookup(variable)
	s := strings.TrimSpace(raw)
	if !ok || s == "" {
		return 0, nil
	}
	// ParseUint refuses signs, so "-3" and "+3" read as what they are: not a count.
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n < 1 || n > uint64(max) {
		return 0, fmt.Errorf("%s is %q: want %s, a whole number from 1 to %d (unset: %s)",
			variable, raw, want, max, unset)
	}
	return int(n), nil
}
