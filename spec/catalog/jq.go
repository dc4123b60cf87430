package catalog

import "github.com/nikahq/nika/spec/jq"

// jqIssue is why a literal jq program cannot run in nika:jq (or nika:fetch mode jq).
type jqIssue struct {
	msg, detail string
}

// checkJQ compiles a jq program exactly as nika runs it (spec/jq: LANGUAGE.md
// §3.6, D15): no variables, no modules, none of the impure builtins. It
// returns nil when the program compiles.
func checkJQ(src string) *jqIssue {
	if _, err := jq.Compile(src); err != nil {
		return &jqIssue{"jq program does not compile: " + oneLine(err.Error()),
			"Fix the jq program: nika runs pure jq over `input`, without variables, modules or impure builtins (now, input, env, $ENV, debug, …); use nika:date for time."}
	}
	return nil
}
