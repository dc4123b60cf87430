package spec

import (
	"strings"
)

// Explain returns the long explanation of an allocated code: what it means, when it fires (static or runtime), a minimal
// YAML example that triggers it (for static codes), and how to fix it. ok is false for an unknown code.
// The id is matched case-insensitively, so `nika explain nika-parse-010` works too.
func Explain(id string) (text string, ok bool) {
	text, ok = explainTexts[strings.ToUpper(strings.TrimSpace(id))]
	return text, ok
}

// explanation is the hand-written part of a code's text; the header's category, stage and
// transience come from the code registry, so they cannot drift from it.
type explanation struct {
	title   string // short title for the header line
	body    string // paragraphs separated by "\n\n"; a line starting with "* " is a bullet
	example string // YAML that triggers the code (static codes), verbatim
	fix     string // prescriptive: what to write instead, how to handle it
}

// explainWidth is the column at which paragraphs are wrapped.
const explainWidth = 100

// explainTexts maps every allocated code to its rendered text. Built once; never mutated.
var explainTexts = func() map[string]string {
	m := make(map[string]string, len(codeTable))
	for _, c := range codeTable {
		e, ok := explanations[c.ID]
		if !ok {
			continue // caught by TestExplainEveryCode
		}
		m[c.ID] = renderExplain(c, e)
	}
	return m
}()

func renderExplain(c Code, e explanation) string {
	var b strings.Builder
	if c.Retired {
		b.WriteString(c.ID + " — retired (never emitted)\n")
	} else {
		b.WriteString(c.ID + " — " + e.title + " (" + c.Category + ", " + explainStage(c.Stage) + ", " +
			explainTransient(c.Transient) + ")\n")
	}
	for _, p := range strings.Split(e.body, "\n\n") {
		b.WriteString("\n")
		explainWrap(&b, p)
	}
	if e.example != "" {
		b.WriteString("\nExample:\n")
		for _, l := range explainDedent(strings.Split(strings.Trim(e.example, "\n"), "\n")) {
			l = strings.TrimRight(l, " \t")
			if l == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("  " + l + "\n")
		}
	}
	if e.fix != "" {
		b.WriteString("\n")
		explainWrap(&b, "Fix: "+e.fix)
	}
	return b.String()
}

// explainDedent removes the indentation common to the non-empty lines, so that a task snippet written
// as `  - id: x` (as it sits in a file) is shown from its first column.
func explainDedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = l
	}
	return out
}

func explainStage(s string) string {
	switch s {
	case "S":
		return "static"
	case "R":
		return "runtime"
	case "S/R":
		return "static or runtime"
	}
	return s
}

func explainTransient(t string) string {
	switch t {
	case "no":
		return "not transient"
	case "yes":
		return "transient"
	}
	return "transient: " + t
}

// explainWrap writes one paragraph wrapped at explainWidth. Each "\n"-separated line of p is
// wrapped on its own; a line starting with "* " gets a hanging indent. Spaces inside `code`
// spans never break a line.
func explainWrap(b *strings.Builder, p string) {
	for _, line := range strings.Split(p, "\n") {
		indent := ""
		if strings.HasPrefix(line, "* ") {
			indent = "  "
		}
		words := explainSplitWords(line)
		col := 0
		for i, w := range words {
			wl := len([]rune(w))
			switch {
			case i == 0:
				b.WriteString(w)
				col = wl
			case col+1+wl > explainWidth:
				b.WriteString("\n" + indent + w)
				col = len(indent) + wl
			default:
				b.WriteString(" " + w)
				col += 1 + wl
			}
		}
		b.WriteString("\n")
	}
}

// explainSplitWords splits on spaces, keeping backquoted spans whole.
func explainSplitWords(s string) []string {
	var words []string
	var cur strings.Builder
	inCode := false
	for _, r := range s {
		switch {
		case r == '`':
			inCode = !inCode
			cur.WriteRune(r)
		case r == ' ' && !inCode:
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

var explanations = map[string]explanation{
	// ---------------------------------------------------------------- PARSE
	"NIKA-PARSE-001": {
		title: "YAML syntax error or profile violation",
		body: "The file is not YAML that nika accepts. It fires on any YAML syntax error (at the parser's " +
			"position, e.g. a tab in indentation or an unclosed quote), on a second YAML document after `---`, " +
			"on the merge key `<<`, on a tag outside `!!str !!int !!float !!bool !!null !!seq !!map`, on a file " +
			"that is not valid UTF-8, and on a literal value over 10,000 nodes, 1 MiB or 1,000 levels of nesting, " +
			"as written or once its aliases are expanded (the message says which). " +
			"With a syntax error there is no tree to check, so it is the only finding reported for the file.",
		example: `nika: v1
workflow: hello
tasks:
  - id: greet
    exec: { command: ["echo", "hi"] }
---                          # a second YAML document
nika: v1`,
		fix: "Fix the YAML at the reported line and column: indent with spaces, close quotes and brackets, keep " +
			"exactly one document per file (move the second one to its own file), and write repeated settings " +
			"out instead of merging them with `<<`.",
	},
	"NIKA-PARSE-002": {
		title: "missing header key or empty `tasks`",
		body: "Every workflow needs the three required top-level keys `nika`, `workflow` and `tasks`, and " +
			"`tasks` must hold at least one task. It fires statically when one of them is absent or when " +
			"`tasks` is an empty list.",
		example: `nika: v1
workflow: hello
tasks: []                    # at least one task is required`,
		fix: "Start the file with `nika: v1`, `workflow: <kebab-case-id>` and a `tasks:` list with at least one " +
			"`- id: name` item carrying one verb (`infer`, `exec`, `invoke` or `agent`).",
	},
	"NIKA-PARSE-003": {
		title: "`nika:` is not exactly `v1`",
		body: "The `nika` key is the language version and must be exactly the string `v1`. `v1.0`, `1`, `v2` " +
			"or a workflow id are all rejected statically; it is a literal-only field.",
		example: `nika: 1.0                    # the version is the string v1
workflow: hello`,
		fix: "Write `nika: v1`. The workflow's own name goes in `workflow:`.",
	},
	"NIKA-PARSE-004": {
		title: "bad workflow id",
		body: "The `workflow` id must be kebab-case, matching `^[a-z][a-z0-9-]*$`: a lower-case letter, then " +
			"lower-case letters, digits and `-`. It fires statically on any other string, including upper case, " +
			"`_`, spaces or a leading digit.",
		example: `nika: v1
workflow: Nightly_Build      # upper case and underscore`,
		fix: "Rename it in kebab-case, e.g. `workflow: nightly-build`.",
	},
	"NIKA-PARSE-005": {
		title: "unknown field",
		body: "A key that is not allowed at its position. The envelope, tasks, verb bodies, `retry`, " +
			"`on_finally` steps, typed vars, secrets and `permits` are closed sets of keys. The " +
			"finding suggests the nearest valid key (Levenshtein distance ≤ 2, e.g. `dependsOn` → `depends_on`). " +
			"Keys from other workflow dialects get a targeted hint: `flows`/`after` → `depends_on`, `use` → " +
			"`with`, `extract` → `output`, `inputs` → `vars`, `const` → `env`, top-level `schema`/`provider` → " +
			"the `nika: v1` header and `<provider>/<name>` models, a `fetch` task key → `invoke: {tool: nika:fetch}`. " +
			"Engine-configuration keys are NIKA-PARSE-020 instead.",
		example: `  - id: fetch_page
    retrys: { max_attempts: 3 }          # did you mean retry?
    invoke: { tool: nika:fetch, args: { url: "https://example.com" } }`,
		fix: "Rename the key to the suggested one (the finding's detail names it), or remove it. The set of keys " +
			"at each position is listed in LANGUAGE.md §2, §3.1 and §5; `nika schema` gives editors the same list.",
	},
	"NIKA-PARSE-006": {
		title: "bad or missing task id",
		body: "Every task needs an `id` matching `^[a-z][a-z0-9_]*$`: a lower-case letter, then lower-case " +
			"letters, digits and `_`. Hyphens, upper case and a leading digit are rejected, and so is a task " +
			"without `id`. Ids are used in expressions (`tasks.fetch_page.output`), which is why `-` is not " +
			"allowed.",
		example: `  - id: fetch-page                     # hyphen: not an identifier
    invoke: { tool: nika:fetch, args: { url: "https://example.com" } }`,
		fix: "Use snake_case, e.g. `id: fetch_page`, and update every `depends_on` and `tasks.…` reference.",
	},
	"NIKA-PARSE-007": {
		title: "duplicate task id",
		body: "Two tasks have the same `id`. Task ids are unique in a workflow; the finding is reported at the " +
			"second occurrence and names the position of the first.",
		example: `  - id: build
    exec: { command: ["make", "build"] }
  - id: build                            # already used above
    exec: { command: ["make", "test"] }`,
		fix: "Rename one of them (e.g. `id: test`) and update the `depends_on` lists and `tasks.…` references " +
			"that meant it.",
	},
	"NIKA-PARSE-008": {
		title: "no verb",
		body: "A task, or an `on_finally` step, has none of the four verbs `infer`, `exec`, `invoke` and " +
			"`agent`. Each task and each `on_finally` step does exactly one thing.",
		example: `  - id: prepare
    depends_on: [fetch]                  # ...but nothing to do`,
		fix: "Add exactly one verb. For a step that only reshapes data, use " +
			"`invoke: { tool: nika:jq, args: { expression: \".\", input: ... } }`; to log, use " +
			"`invoke: { tool: nika:log, args: { message: ... } }`.",
	},
	"NIKA-PARSE-009": {
		title: "several verbs",
		body: "A task, or an `on_finally` step, has more than one of `infer`, `exec`, `invoke` and `agent`. " +
			"The finding is reported at the second verb.",
		example: `  - id: build_and_summarize
    exec: { command: ["make", "build"] }
    infer: { prompt: "Summarize the build." }   # second verb`,
		fix: "Split it into two tasks and connect them: the second gets `depends_on: [build]` and reads " +
			"`${{ tasks.build.output }}`.",
	},
	"NIKA-PARSE-010": {
		title: "bad `timeout`",
		body: "`timeout` must be a Go duration string matching `^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, " +
			"with units strictly descending and each used at most once (`1h30m`, not `30m1h`), and " +
			"0 < value ≤ `24h`. Any violation fires statically, including a non-string such as `60`, `0s` and " +
			"`25h`. It applies to task timeouts and `on_finally` step timeouts; expressions are not allowed.",
		example: `  - id: fetch
    timeout: 60                          # a number, not a duration string
    invoke: { tool: nika:fetch, args: { url: "https://example.com" } }`,
		fix: "Quote a duration with its unit: `timeout: \"60s\"`, `\"2m\"`, `\"1h30m\"`. For more than 24 hours, " +
			"split the work into several tasks.",
	},
	"NIKA-PARSE-011": {
		title: "bad `retry`",
		body: "The `retry` mapping is invalid: `max_attempts` is missing; a value is out of range " +
			"(`max_attempts` ≥ 1, `backoff_ms` ≥ 0, `backoff_max_ms` ≥ `backoff_ms`) or not an integer; " +
			"`backoff_strategy` is not `fixed`, `linear` or `exponential`; `jitter` is not a boolean; or " +
			"`on_codes` is empty, holds a malformed code, or lists NIKA-TIMEOUT-001 or NIKA-CANCEL-001, which " +
			"are never retried. A well-formed but unallocated code in `on_codes` only draws the warning " +
			"`unknown-code`; an unknown key in `retry` is NIKA-PARSE-005.",
		example: `  - id: live
    retry: { backoff_ms: 500 }           # max_attempts is required
    invoke: { tool: nika:fetch, args: { url: "https://api.example.com/v1/rates" } }`,
		fix: "Write `retry: { max_attempts: 3 }` (total attempts, including the first), optionally with " +
			"`backoff_ms`, `backoff_strategy`, `backoff_max_ms`, `jitter` and `on_codes`. Handle timeouts with " +
			"`on_error`, not `retry`.",
	},
	"NIKA-PARSE-012": {
		title: "bad `on_error`",
		body: "`on_error` must be a mapping with exactly one action — `recover: <value>`, `skip: true` or " +
			"`fail_workflow: true` — and optionally a non-empty `on_codes` list of well-formed codes. It fires " +
			"statically on zero or several actions, `skip: false`, an empty or malformed `on_codes`, any other " +
			"key, or a non-mapping value.",
		example: `  - id: live
    on_error: { skip: true, recover: "n/a" }   # two actions
    invoke: { tool: nika:fetch, args: { url: "https://api.example.com/v1/rates" } }`,
		fix: "Keep one action: `on_error: { recover: \"n/a\" }` to succeed with a fallback value, " +
			"`on_error: { skip: true }` to skip and keep the error readable downstream, or remove `on_error` to " +
			"fail normally. Add `on_codes: [...]` to handle only some codes.",
	},
	"NIKA-PARSE-013": {
		title: "reserved binding name",
		body: "An `output:` binding is named like a field of every task record: `output`, `status`, `error`, " +
			"`started_at`, `ended_at` or `duration_ms`. Bindings are read as `tasks.T.NAME`, so such a name " +
			"would shadow the record field.",
		example: `  - id: page
    invoke: { tool: nika:fetch, args: { url: "https://example.com", mode: metadata } }
    output: { status: ".status" }        # reserved`,
		fix: "Rename the binding, e.g. `output: { http_status: \".status\" }`, and read it as " +
			"`tasks.page.http_status`.",
	},
	"NIKA-PARSE-014": {
		title: "inline secret",
		body: "A secret is written into the file instead of referenced: the entry under `secrets:` is a " +
			"literal (a string, number, …) or carries a `value:` field. Secrets are resolved from the " +
			"environment or from a file before the first task, and masked everywhere the engine writes.",
		example: `secrets:
  API_TOKEN: "sk-live-123"               # the value itself`,
		fix: "Reference it: `API_TOKEN: { source: env, key: ACME_API_TOKEN }` (an environment variable) or " +
			"`API_TOKEN: { source: file, path: \"./.secrets/api_token\" }`, and rotate the secret that was " +
			"committed.",
	},
	"NIKA-PARSE-015": {
		title: "bad typed var or typed output",
		body: "A typed var (a `vars` entry whose value is a mapping with a string `type`) or a typed output " +
			"(`{value, type, description}`) is invalid: the `type` is not one of `string`, `number`, " +
			"`integer`, `boolean`, `array`, `object`; a var's `default` does not match its type (`null` " +
			"matches no type; every integer is also a number); `required` is not a boolean; or " +
			"`required: true` is combined with a `default`.",
		example: `vars:
  limit: { type: int, default: 10 }      # the type is integer`,
		fix: "Use one of the six type names (`type: integer`), give a default of that type, and either " +
			"require the var (`required: true`, no default) or give it a default.",
	},
	"NIKA-PARSE-016": {
		title: "retired",
		body: "NIKA-PARSE-016 was allocated once and then retired. Codes are never reused " +
			"(LANGUAGE.md §8.2), so no nika engine emits it. If a tool shows it, that tool is older than " +
			"this engine: re-run `nika check` and read the current code instead.",
	},
	"NIKA-PARSE-017": {
		title: "duplicate mapping key",
		body: "The same key appears twice in one YAML mapping, anywhere in the file. YAML parsers disagree " +
			"on which value wins, so nika refuses it; the finding is reported at the second occurrence, and the " +
			"other findings of the file are still collected.",
		example: `  - id: build
    timeout: "5m"
    exec: { command: ["make", "build"] }
    timeout: "10m"                       # second timeout`,
		fix: "Keep one of the two keys and delete the other.",
	},
	"NIKA-PARSE-018": {
		title: "missing required verb field, or no model",
		body: "A verb lacks a required field — `infer.prompt`, `exec.command`, `invoke.tool` or " +
			"`agent.prompt` — or an `infer`/`agent` task has no resolvable model. The model comes from the " +
			"task's `model`, then the CLI `--model`, then the envelope `model`; when none is set, the task is " +
			"reported. Files that rely on the flag are checked with `nika check --model …`.",
		example: `nika: v1
workflow: ask                            # no model: here
tasks:
  - id: ask
    infer: { prompt: "Say hello." }      # ...nor here`,
		fix: "Add the missing field, or set a model: `model: openai/gpt-4o-mini` in the envelope or the verb, " +
			"or pass `--model ollama/qwen3:8b` to `nika run` and `nika check`.",
	},
	"NIKA-PARSE-019": {
		title: "wrong shape, type, enum value or range",
		body: "The generic shape error: a value has the wrong YAML type or an unknown enum value, or is out of " +
			"range. Among its causes:\n" +
			"* a verb, `with`, `output` or `tasks` that is not the expected mapping or list (`tasks:` written " +
			"as a mapping instead of `- id:` items); `when` or `for_each` of another YAML type;\n" +
			"* a name in `vars`, `env`, `secrets`, `outputs`, `with` or `output:` that is not an identifier, " +
			"or a non-string key; an integer outside int64;\n" +
			"* `max_parallel`/`fail_fast` without `for_each`; a task listed twice in `depends_on`;\n" +
			"* a malformed tool name or glob namespace (`agent:compose` → `nika:compose`), an unknown provider " +
			"or a `mock/…` model other than `mock/echo`;\n" +
			"* `agent.max_turns` outside 1..1000, a literal `temperature` outside 0..2, an empty literal " +
			"prompt, an empty argv list;\n" +
			"* a `schema:` that does not compile, or a `$ref` that is not local to the schema;\n" +
			"* the secret source `vault`, which this engine does not support.",
		example: `  - id: plan
    agent:
      prompt: "Plan the release."
      max_turns: 5000                    # allowed range: 1..1000`,
		fix: "Read the finding's detail: it names the expected type, the allowed values (with a \"did you " +
			"mean\") or the range. For secrets, use `source: env` or `source: file`.",
	},
	"NIKA-PARSE-020": {
		title: "engine-configuration key in YAML",
		body: "A key that configures the engine, not the workflow, appears in the envelope, a task, a verb " +
			"body, `retry`, `on_error` or an `on_finally` step. Data positions (`with`, `args`, var defaults, " +
			"`env` values, `schema`, `recover`, `outputs` values) are not scanned. The keys and where they " +
			"belong: `max_parallel_tools` → `--max-parallel-tools N` (default 8); `jitter_seed` → `--seed N`; " +
			"`wave_parallelism`, `router`, `guard`, `schema_retry_budget` → engine configuration; `api_key`, " +
			"`base_url` → `NIKA_<PROVIDER>_API_KEY` / `NIKA_<PROVIDER>_BASE_URL`; `mcp`, `mcp_servers` → the " +
			"MCP server registry `.nika/mcp_servers.json`.",
		example: `  - id: research
    agent:
      prompt: "Survey the open issues."
      tools: ["mcp:github/*"]
      max_parallel_tools: 4              # engine configuration`,
		fix: "Remove the key from the YAML and set it where the detail says, e.g. " +
			"`nika run flow.nika.yaml --max-parallel-tools 4`, or `export NIKA_OPENAI_API_KEY=…`.",
	},

	// ---------------------------------------------------------------- DAG
	"NIKA-DAG-001": {
		title: "dependency cycle",
		body: "The `depends_on` edges form a cycle, including a task that depends on itself, so no task of the " +
			"cycle could ever start. Each cycle is reported once, written like `a -> c -> b -> a` (X -> Y " +
			"means X depends on Y), starting at the cycle's task declared first, at the `depends_on` entry that " +
			"closes the cycle. A cycle that also goes through an `on_error.recover` reference is NIKA-DAG-004.",
		example: `  - id: a
    depends_on: [b]
    exec: { command: ["true"] }
  - id: b
    depends_on: [a]                      # a -> b -> a
    exec: { command: ["true"] }`,
		fix: "Remove the edge that closes the cycle. If two tasks really need each other's results, split one " +
			"of them into two tasks so that the data flows one way.",
	},
	"NIKA-DAG-002": {
		title: "unknown id in `depends_on`",
		body: "A `depends_on` entry names no task of the workflow. The finding suggests the nearest existing " +
			"id (\"did you mean\").",
		example: `  - id: fetch_page
    invoke: { tool: nika:fetch, args: { url: "https://example.com" } }
  - id: summarize
    depends_on: [fetch_pages]            # did you mean fetch_page?
    infer: { prompt: "${{ tasks.fetch_page.output }}" }`,
		fix: "Correct the id (`depends_on: [fetch_page]`) or add the missing task.",
	},
	"NIKA-DAG-003": {
		title: "`tasks.X` read without an edge",
		body: "Edges are explicit; the engine never infers them. A `tasks.X…` read in the `when`, `for_each`, " +
			"`with` or verb body of task T requires X to be listed directly in T's `depends_on` — a transitive " +
			"dependency is not enough. Only `on_error.recover`, `output:` bindings, `on_finally` steps (T and " +
			"its dependencies) and the envelope `outputs` may read tasks without an edge.",
		example: `  - id: fetch
    invoke: { tool: nika:fetch, args: { url: "https://example.com" } }
  - id: summarize                        # no depends_on: [fetch]
    infer: { prompt: "Summarize: ${{ tasks.fetch.output }}" }`,
		fix: "Add the edge the detail names: `depends_on: [fetch]` on `summarize`.",
	},
	"NIKA-DAG-004": {
		title: "`recover` would deadlock",
		body: "An `on_error.recover` expression reads its own task or one of its transitive dependents, which " +
			"cannot be terminal before the task itself is. More generally it fires for any cycle in the graph " +
			"of `depends_on` edges plus recover references that contains at least one recover reference; it is " +
			"reported once, at the recover reference of the cycle's first task in file order.",
		example: `  - id: live
    invoke: { tool: nika:fetch, args: { url: "https://api.example.com/v1/rates" } }
    on_error: { recover: "${{ tasks.report.output }}" }   # report depends on live
  - id: report
    depends_on: [live]
    infer: { prompt: "Comment on ${{ tasks.live.output }}" }`,
		fix: "Recover from a task that does not depend on this one (e.g. a cached copy read by an independent " +
			"`nika:read` task), or from a literal: `on_error: { recover: {} }`.",
	},

	// ---------------------------------------------------------------- VAR
	"NIKA-VAR-001": {
		title: "unresolved name",
		body: "A name cannot be resolved. Statically: an unknown root (only `vars`, `env`, `secrets`, `tasks`, " +
			"`with`, `item`, `index` and `null` exist), an undeclared `vars.N`, `env.N`, `secrets.N` or " +
			"`with.N`, an unknown task id, `tasks.X.F` where F is neither a record field nor a binding of X, " +
			"`item`/`index` outside `for_each`, or `with`/`item`/`index` in `when`; the finding suggests the " +
			"nearest name. At run time, before any task: an undeclared `--var` or a missing required var " +
			"(exit 2; the detail names the `--var` to pass), or a secret that cannot be resolved — unset or " +
			"empty variable, unreadable file (exit 3, `details.secret`). The refusals happen before any task, " +
			"so `retry` and `on_error` never see them.",
		example: `vars:
  topic: "Go generics"
tasks:
  - id: ask
    infer: { prompt: "Explain ${{ vars.topics }}." }     # did you mean topic?`,
		fix: "Correct the name or declare it (`vars:`, `env:`, `secrets:`, `with:`, or a binding in `output:`). " +
			"For a run refused at start, pass the var (`--var topic=…`), remove the undeclared one, or export " +
			"the secret's environment variable / create its file.",
	},
	"NIKA-VAR-002": {
		title: "binding produced zero or several values",
		body: "An `output:` binding is a jq program that must emit exactly one value; this one emitted none " +
			"(e.g. `.items[] | select(...)` with no match, or `empty`) or several (e.g. `.items[]`). A binding " +
			"failure is an attempt failure: not transient, retried only when listed in `retry.on_codes`, " +
			"handled by `on_error`; a binding failing over an `on_error.recover` value is final.",
		fix: "Collect the values into one: `[.items[]]`, `first(.items[])`, `.items[0]`, or add a fallback " +
			"with `//`, e.g. `(first(.items[] | select(.ok)) // null)`.",
	},
	"NIKA-VAR-003": {
		title: "provably invalid output path",
		body: "A static path `tasks.X.output.a.b[0]…` cannot exist in X's known output shape. Known shapes: " +
			"the `schema:` of an `infer`/`agent`, a string for `infer`/`agent` without a schema and for `exec` " +
			"with a text capture, `{stdout, stderr, exit_code}` for `capture: structured`; a `for_each` " +
			"producer wraps its shape in an array and a producer with `on_error.recover` is open. Only provably " +
			"wrong steps fire: a field on a string, number, boolean or array, a key absent under " +
			"`additionalProperties: false`, an index on an object.",
		example: `  - id: commits
    exec: { command: ["git", "log", "--oneline"] }       # output is a string
  - id: notes
    depends_on: [commits]
    infer: { prompt: "${{ tasks.commits.output.stdout }}" }`,
		fix: "Follow the producer's shape: here use `${{ tasks.commits.output }}`, or set " +
			"`capture: structured` on `commits` to get `{stdout, stderr, exit_code}`; for a schema, add the " +
			"property to it.",
	},
	"NIKA-VAR-004": {
		title: "jq runtime error in a binding",
		body: "An `output:` binding raised a jq error while running over the task's raw output, e.g. " +
			"indexing a string (`.title` on a text output) or iterating `null`. It is an attempt failure: not " +
			"transient, retried only when listed in `retry.on_codes`, and handled by `on_error`.",
		fix: "Make the program total: `.data.title? // null`, `(.items // []) | length`, or test the type " +
			"first (`if type == \"object\" then .title else null end`). Remember that `output` without " +
			"`schema:` or `capture: structured` is a string.",
	},
	"NIKA-VAR-005": {
		title: "static expression violation",
		body: "An expression or jq program is rejected by the checker. Causes: a syntax error or empty " +
			"`${{ }}`; a type error that the checker proves; `now()` (expressions are pure); a `${{` in a " +
			"literal-only field (`nika`, `workflow`, `model`, `env` values, `infer.schema`, `agent.tools`, " +
			"`agent.max_turns`, `exec.capture`, `invoke.tool`, `retry`, `timeout`, …); a `when` of known " +
			"non-boolean type, or a `when` string that is not exactly one expression; a dynamic " +
			"`tasks[name]`; `has()` of something that is not a field selection; a chained comparison such as " +
			"`a < b < c`; in `output:` bindings, a jq syntax error, `import`/`include`, an impure builtin " +
			"(`now`, `env`, `$ENV`, `input`, …) or a `${{`.",
		example: `  - id: plan
    agent:
      prompt: "Plan the release."
      max_turns: ${{ vars.turns }}       # max_turns is literal-only`,
		fix: "Follow the detail: write a literal in literal-only fields, fix the syntax, combine comparisons " +
			"with `&&`, take the time from `nika:date` (`op: now`) instead of `now()`, and quote `${{ … }}` " +
			"that contains `: `, ` #` or sits inside `{…}`/`[…]`.",
	},
	"NIKA-VAR-006": {
		title: "runtime evaluation or type error",
		body: "An expression failed while running: member access on `null` or a non-object, an index out of " +
			"range, an ordering between different kinds, `+` between a string and a non-string, a non-boolean " +
			"operand of `&&`/`||`/`!`/`?:`, NaN or ±Inf rendered into text, a value unfit for its destination " +
			"(a string for `max_tokens`, an array as an argv element), or a parameter invalid only after " +
			"evaluation (an empty rendered prompt, a temperature out of range). `details` carries " +
			"`{expression, path}`. It is also the code of a `--var` whose text does not convert to the var's " +
			"type (exit 2, before any task).\n\n" +
			"In a verb body or `with` it fails the attempt: not transient, retried only when listed in " +
			"`retry.on_codes`, handled by `on_error`. In `when` (non-boolean) or `for_each` (not an array) it " +
			"is a gate failure: final, no retry, no `on_error`, no `on_finally`.",
		fix: "Guard against `null` with `?.`, `??` or `has()`; convert explicitly (`string(n)`, `int(s)`); " +
			"make `when` yield a boolean and `for_each` an array; pass `--var` text of the declared type " +
			"(JSON for arrays and objects).",
	},
	"NIKA-VAR-007": {
		title: "bytes rendered into a string",
		body: "A bytes value (e.g. the output of `nika:read` with `binary: true`) was placed into text: a " +
			"mixed string such as `\"data: ${{ tasks.r.output }}\"`, or a string-typed field such as `prompt`. " +
			"Bytes are never converted implicitly. Not transient; retried only when listed in `retry.on_codes`.",
		fix: "Read the file as text (drop `binary: true`), or pass the bytes whole-string " +
			"(`content: ${{ tasks.r.output }}`) to an argument that takes bytes, such as `nika:write` or " +
			"`nika:hash` `content`. An `output:` binding sees bytes as base64 (`output: { b64: \".\" }`).",
	},
	"NIKA-VAR-008": {
		title: "unclosed `${{`",
		body: "A `${{` placeholder has no matching `}}` at brace depth 0 outside string literals. The scanner " +
			"reads left to right, so an unbalanced quote or brace inside the expression also causes it.",
		example: `  - id: ask
    infer: { prompt: "Summarize ${{ vars.topic" }   # missing }}`,
		fix: "Close the placeholder: `\"Summarize ${{ vars.topic }}\"`. For a literal `${{`, escape it as " +
			"`\\${{` in a plain or single-quoted scalar, or `\\\\${{` in a double-quoted one.",
	},
	"NIKA-VAR-009": {
		title: "typed output mismatch",
		body: "A typed envelope output (`{value, type}`) evaluated to a value of another type once every task " +
			"was terminal; `null` never matches, and an integer matches `number`. It is a workflow-level " +
			"error, not a task error: the workflow ends in `failure` (exit 1) and the first mismatch by name " +
			"becomes the report's top-level `error`. `retry` and `on_error` do not apply.",
		fix: "Fix the producer, or give a fallback of the right type: " +
			"`value: \"${{ tasks.grade.output.score ?? 0 }}\"`, or change the declared `type`.",
	},

	// ---------------------------------------------------------------- INFER
	"NIKA-INFER-001": {
		title: "provider call failed",
		body: "A model request (from `infer`, or an agent turn) failed at the provider. `details` carries " +
			"`{provider, model, status, reason, retry_after_ms}`, where `reason` is one of `rate_limited`, " +
			"`server_error`, `network`, `timeout` (transient), `auth_failed`, `model_not_found`, " +
			"`bad_request`, `content_filter`, `quota_exceeded` or `cancelled` (not transient). `retry` retries " +
			"the transient reasons by default; the others only when NIKA-INFER-001 is listed in " +
			"`retry.on_codes`. A missing API key is caught before any task runs (exit 3), not as this code.",
		fix: "By reason: `auth_failed` → set `NIKA_<PROVIDER>_API_KEY`; `model_not_found` → check the " +
			"`<provider>/<name>` id; `quota_exceeded` → check billing; transient ones → add " +
			"`retry: { max_attempts: 3 }`. Fall back with `on_error: { recover: …, on_codes: [NIKA-INFER-001] }`.",
	},
	"NIKA-INFER-002": {
		title: "output fails `schema`",
		body: "The model's answer did not yield JSON valid against the task's `schema:`. The engine extracts " +
			"the JSON (whole reply, first fenced block, first balanced `{…}`/`[…]`) and re-asks at most twice " +
			"within the same attempt, with the validation errors; this code fires when every re-ask fails. " +
			"For agents it also covers a schema that does not compile and an invalid `nika:done` result. " +
			"`details` carries `{stage, validation_errors, raw_excerpt}` (`stage`: `compile`, `done` or " +
			"`finalize`; the excerpt is at most 2 KiB). Not transient.",
		fix: "Simplify the schema, describe the expected JSON in the prompt, lower `temperature`, or use a " +
			"stronger model. Since another attempt may succeed, `retry: { max_attempts: 2, on_codes: " +
			"[NIKA-INFER-002] }` is reasonable.",
	},

	// ---------------------------------------------------------------- EXEC
	"NIKA-EXEC-001": {
		title: "non-zero exit",
		body: "The process of an `exec` task exited with a non-zero status; death by signal s counts as exit " +
			"code 128+s. `details` carries `{exit_code, stderr}` (the last 4 KiB of stderr). It does not fire " +
			"under `capture: structured`, where `exit_code` is data. Not transient: `retry` retries it only " +
			"when it is listed in `retry.on_codes`.",
		fix: "Read `details.stderr`. To branch on the exit status, use `capture: structured` and test " +
			"`${{ tasks.T.output.exit_code == 0 }}`; for flaky commands add " +
			"`retry: { max_attempts: 3, on_codes: [NIKA-EXEC-001] }`; to tolerate failure, " +
			"`on_error: { skip: true }`.",
	},
	"NIKA-EXEC-002": {
		title: "spawn failure",
		body: "The process could not be started: the program is not found on `PATH`, is not executable, or " +
			"`exec.cwd` does not exist. Not transient; retried only when listed in `retry.on_codes`.",
		fix: "Install the program or give its path (`command: [\"/usr/local/bin/tool\", …]`), create the " +
			"`cwd` directory in an earlier task, or correct the path (relative paths resolve against the run " +
			"directory).",
	},

	// ---------------------------------------------------------------- INVOKE
	"NIKA-INVOKE-001": {
		title: "unknown tool",
		body: "The tool does not exist: an unknown `nika:` builtin (static, with \"did you mean\"), a builtin " +
			"that this build does not ship yet (runtime, \"not in this build\"), an `mcp:` server that is not " +
			"in the MCP registry (static when the checker is given the registry `.nika/mcp_servers.json`, " +
			"else runtime), or a tool the server does not list (runtime). Inside an agent loop it is fed back " +
			"to the model as an error result instead of failing the task. Not transient.",
		example: `  - id: page
    invoke: { tool: nika:fetc, args: { url: "https://example.com" } }   # did you mean nika:fetch?`,
		fix: "Correct the name (LANGUAGE.md §7 lists the builtins), or register the MCP server " +
			"in `.nika/mcp_servers.json` and use a tool it lists: `mcp:<server>/<tool>`.",
	},
	"NIKA-INVOKE-002": {
		title: "arguments fail the tool's input schema",
		body: "The resolved arguments of a tool call do not match its input schema: an unknown or missing " +
			"argument, a wrong type or a bad enum value (e.g. a non-boolean `nika:assert` condition, or a " +
			"`nika:notify` channel this engine does not support). It is the run-time counterpart of " +
			"NIKA-BUILTIN-001, for arguments computed by expressions. Inside an agent loop it is fed back to " +
			"the model. Not transient.",
		fix: "Check the values the expressions produce against the tool's contract (LANGUAGE.md §7, or the " +
			"MCP tool's schema); convert types explicitly (`int(…)`, `string(…)`), and use `channel: webhook` " +
			"for `nika:notify`.",
	},
	"NIKA-INVOKE-003": {
		title: "tool call failed",
		body: "A tool call failed without a more specific code, or the tool panicked. In an agent loop it is " +
			"fed back to the model as `NIKA-INVOKE-003 · <tool> failed: <err>` (or `panicked`), and the loop " +
			"goes on. Not transient; retried only when listed in `retry.on_codes`.",
		fix: "Read the message: fix the arguments or the tool's environment. A panic is a defect in the tool " +
			"or the engine: report it with the tool name and arguments.",
	},

	// ---------------------------------------------------------------- AGENT
	"NIKA-AGENT-001": {
		title: "`max_turns` exhausted",
		body: "The agent used all its turns (`max_turns`, default 10) and wanted to call tools again. It fires " +
			"before the dispatch, so the last batch is not run; the N-th turn can still finish with an answer " +
			"or `nika:done`. `details` carries `{turns, max_turns, blame, partial_output}`, where `blame` is " +
			"`caller` (the task set `max_turns`) or `contract` (the default applied) and `partial_output` is the " +
			"last assistant text. Not transient.",
		fix: "Raise `max_turns` (at most 1000), grant `nika:done` in `tools` and tell the agent to call it when " +
			"done, or narrow the task. To keep the partial answer, use `on_error: { skip: true }` and read " +
			"`${{ tasks.T.error.details.partial_output }}` downstream.",
	},
	"NIKA-AGENT-002": {
		title: "`max_tokens_total` exhausted",
		body: "The cumulative input+output tokens of the agent's requests in this attempt (per iteration under " +
			"`for_each`), re-asks included, reached `max_tokens_total`; the check is at equality and happens " +
			"before the next dispatch — a finished answer is never discarded. `details` carries " +
			"`{total_tokens, max_tokens_total, partial_output}`. Not transient.",
		fix: "Raise `max_tokens_total`, shorten the prompt and the tool outputs the agent reads (e.g. " +
			"`nika:fetch` with `mode: text`), or lower `max_turns`. Use `on_error: { skip: true }` to keep " +
			"`details.partial_output` readable downstream.",
	},
	"NIKA-AGENT-003": {
		title: "agent stalled",
		body: "The loop guard saw the agent repeat the same turns — identical tool calls with identical results " +
			"— after nudging it once: by default a cycle that repeats 5 times stops the loop. Polling the " +
			"same call with changing results never counts. `details` carries `{period, repeats, " +
			"partial_output}`. Not transient.",
		fix: "Give the agent a way to finish (`nika:done` in `tools`, a clearer stopping rule in the prompt), " +
			"remove tools it misuses, or use a stronger model. The guard thresholds are engine configuration, " +
			"not YAML.",
	},
	"NIKA-AGENT-004": {
		title: "invalid agent parameter (Go API)",
		body: "Reserved for a Go program that embeds nika and hands the agent verb an invalid parameter " +
			"(`details`: `{param, detail}`). Workflows run by `nika` never get it: statically invalid values " +
			"are NIKA-PARSE-019 or NIKA-PARSE-018, and values invalid only after evaluation (an empty prompt, " +
			"a temperature out of range) are NIKA-VAR-006.",
		fix: "In the embedding program, validate the job before submitting it: a non-empty prompt, a " +
			"resolvable `<provider>/<name>` model, `max_turns` in 1..1000, `temperature` in 0..2.",
	},
	"NIKA-AGENT-005": {
		title: "usage not reported for a priced model",
		body: "Allocated for a provider answer without token usage for a model that has a price, so that " +
			"cost budgets fail closed. nika v1 has no price catalog and no cost budget, so this code is " +
			"never emitted in v1.",
		fix: "Nothing to do in v1. Token budgets (`max_tokens_total`) use the usage that providers report.",
	},
	"NIKA-AGENT-006": {
		title: "tool-definition source failed",
		body: "When arming an agent, the source of tool definitions (for example an MCP server's tool list) " +
			"failed, so the agent could not be offered its tools. `details` carries `{detail}`. It is " +
			"transient when the source says so (default: not transient).",
		fix: "Check the MCP servers behind the agent's `mcp:` globs (`.nika/mcp_servers.json`, their command " +
			"and credentials). If the failure is transient, `retry: { max_attempts: 3 }` retries it.",
	},
	"NIKA-AGENT-007": {
		title: "engine panic in an agent job",
		body: "The engine panicked while running one agent job. Only that job fails; the other jobs of the " +
			"same batch (e.g. other `for_each` iterations) go on. `details` carries `{panic}`, the value on " +
			"one line. Not transient.",
		fix: "This is an engine defect: report it with the workflow, the `details.panic` value and the trace. " +
			"`on_error` can recover meanwhile.",
	},

	// ---------------------------------------------------------------- MCP
	"NIKA-MCP-001": {
		title: "MCP server unavailable",
		body: "The MCP server behind an `mcp:` tool is not configured, could not be reached, or crashed. It is " +
			"transient — `retry` retries it by default — unless the cause is \"not configured\". In an agent " +
			"loop it is fed back to the model as an error result.",
		fix: "Register the server in `.nika/mcp_servers.json` and check its command, arguments and " +
			"environment; for a flaky server add `retry: { max_attempts: 3 }`.",
	},
	"NIKA-MCP-002": {
		title: "MCP tool returned an error",
		body: "The MCP tool answered with `isError: true`; the message is the result's text. Not transient; " +
			"retried only when listed in `retry.on_codes`. In an agent loop it is fed back to the model.",
		fix: "Read the message and correct the arguments or the server-side state; handle expected failures " +
			"with `on_error: { …, on_codes: [NIKA-MCP-002] }`.",
	},

	// ---------------------------------------------------------------- SEC
	"NIKA-SEC-001": {
		title: "blocklisted shell command",
		body: "A string `exec.command` (run by `/bin/sh -c`) matches the always-on blocklist: `rm` with a " +
			"recursive flag on `/`, `/*`, `~`, `~/`, `~/*`, `$HOME` or `${HOME}`; `curl`/`wget` piped into a " +
			"shell; the fork bomb; `mkfs`; `dd … of=/dev/…` or redirection into a disk device; `chmod -R`/" +
			"`chown -R` on `/`; `shutdown`, `reboot`, `halt`, `poweroff`. It is static for a literal command " +
			"and checked at run time on the rendered text otherwise. The argv form is not subject to the " +
			"blocklist (but to `permits.exec`). Not transient.",
		example: `  - id: install
    exec: { command: "curl -fsSL https://get.example.com | sh" }`,
		fix: "Do not pipe downloads into a shell or touch system paths: download to a file with `nika:fetch`, " +
			"review it, then run it in the argv form (`command: [\"sh\", \"./install.sh\"]`), with " +
			"`permits.exec` listing the programs. The blocklist is a floor, not a sandbox.",
	},
	"NIKA-SEC-002": {
		title: "agent tool call outside the whitelist",
		body: "The model asked for a tool that the agent's `tools:` (intersected with `permits.tools`) does not " +
			"admit, or for a name that is empty, longer than 256 bytes, has control characters or surrounding " +
			"white space. Nothing of that batch runs, not even the allowed calls. `details` carries " +
			"`{tool}`. Not transient.",
		fix: "If the tool should be available, add it to the agent's `tools:` (and to `permits.tools` when " +
			"`permits` is present); otherwise tell the agent in the prompt which tools it has.",
	},
	"NIKA-SEC-003": {
		title: "run recursion too deep",
		body: "`nika run` passes `NIKA_RUN_DEPTH` + 1 to its `exec` children; a run started at depth ≥ 8 " +
			"refuses to start. It fires before anything runs, so `retry` and `on_error` do not apply, and the " +
			"process exits 3.",
		fix: "Break the recursion: a workflow that runs `nika run` on itself (directly or through other " +
			"workflows) needs a stopping condition, e.g. a `when:` on the `exec` task.",
	},
	"NIKA-SEC-004": {
		title: "subject outside `permits`",
		body: "With a `permits` block, every capability is default-deny, and this subject is not admitted: a " +
			"tool name (`permits.tools`), a file path (`fs.read`/`fs.write`), a URL host (`net.http`), a " +
			"program (`exec` list), or a string command while `exec` is a list. Literal subjects are checked " +
			"statically; resolved ones at run time just before the effect. In an agent loop it is never fed " +
			"back to the model: it stops the batch and fails the task. Not transient.",
		example: `permits:
  exec: ["git"]
tasks:
  - id: build
    exec: { command: "make build" }      # a string command needs exec: true`,
		fix: "Widen `permits` minimally for what the task needs — `exec: [\"git\", \"make\"]` with the argv " +
			"form `command: [\"make\", \"build\"]`, a path glob in `fs.read`, a host in `net.http`, a tool in " +
			"`tools` — or change the subject to one already admitted.",
	},
	"NIKA-SEC-005": {
		title: "SSRF floor: private destination",
		body: "`nika:fetch`, `nika:notify` or an `infer.vision` URL resolved to a loopback, private, " +
			"link-local or unspecified address (127.0.0.0/8, ::1, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, " +
			"100.64.0.0/10, fc00::/7, 169.254.0.0/16, fe80::/10, 0.0.0.0/8, ::, and their IPv4-mapped forms). " +
			"Every resolved address and every redirect hop " +
			"is checked, even without `permits`. In an agent loop it is never fed back to the model. Not " +
			"transient.",
		fix: "If the destination is intended, allow it explicitly by exact hostname, IP literal or CIDR in " +
			"`permits: { net: { http: [\"localhost:8080\"] }, tools: [\"nika:fetch\"] }` (wildcards never " +
			"lift the floor, and with `permits` the other capabilities the workflow uses must be listed too).",
	},

	// ---------------------------------------------------------------- TIMEOUT, CANCEL
	"NIKA-TIMEOUT-001": {
		title: "task `timeout` expired",
		body: "The task's `timeout` covers its whole attempt loop — attempts, backoff waits and bindings — " +
			"per iteration under `for_each`. On expiry the attempt is cancelled (an `exec` process group gets " +
			"SIGTERM, then SIGKILL after 5 s). `details` carries `{timeout, elapsed_ms}`. It is never retried, " +
			"and cannot be listed in `retry.on_codes`; `on_error` handles it like any other error. A tool " +
			"call's own timeout inside an agent loop is fed back to the model instead.",
		fix: "Raise `timeout` (it must also leave room for the retries and their backoff), or handle it: " +
			"`on_error: { skip: true, on_codes: [NIKA-TIMEOUT-001] }` or a `recover` value.",
	},
	"NIKA-CANCEL-001": {
		title: "cancelled by the user",
		body: "The run was interrupted (SIGINT, SIGTERM or the API) while this task was running. It is set " +
			"only on tasks that were running; tasks that had not started are `cancelled` with no error. It is " +
			"never retried nor handled by `on_error`, but started tasks still run their `on_finally` steps. " +
			"The process exits 130.",
		fix: "Nothing to change in the workflow: re-run it. Put cleanup that must happen on interruption in " +
			"`on_finally`.",
	},

	// ---------------------------------------------------------------- BUILTIN
	"NIKA-BUILTIN-001": {
		title: "bad literal builtin arguments",
		body: "The literal `args` of a `nika:` builtin break its contract: an unknown argument, a missing " +
			"required one, a wrong type or a bad enum value, `jq`/`selector` given without the matching " +
			"`nika:fetch` mode (or missing with it), a fetch mode this engine does not support, or a " +
			"`nika:notify` channel other than `webhook`. Arguments computed by expressions are checked at run " +
			"time instead (NIKA-INVOKE-002).",
		example: `  - id: rates
    invoke:
      tool: nika:fetch
      args: { url: "https://api.example.com/v1/rates", mode: json }   # no such mode`,
		fix: "Follow the builtin's argument table in LANGUAGE.md §7 (the detail names the argument): here " +
			"`mode: jq` with `jq: \".\"`; for notifications, `channel: webhook`.",
	},
	"NIKA-BUILTIN-DONE-001": {
		title: "`nika:done` outside an agent",
		body: "`nika:done` ends an agent loop and only exists inside one; calling it with `invoke` is rejected " +
			"statically.",
		example: `  - id: finish
    invoke: { tool: nika:done, args: { result: "ok" } }`,
		fix: "Grant it to an agent instead (`agent: { tools: [\"nika:done\", …] }`). To produce a value from " +
			"a plain task, use `nika:jq` (`args: { expression: \".\", input: … }`) or the envelope `outputs`.",
	},
	"NIKA-BUILTIN-COMPOSE-001": {
		title: "`nika:compose` outside an agent",
		body: "`nika:compose` lets an agent check a workflow it is drafting; it only exists inside an agent " +
			"loop, so calling it with `invoke` is rejected statically.",
		example: `  - id: check_draft
    invoke: { tool: nika:compose, args: { workflow_yaml: "nika: v1" } }`,
		fix: "Grant it to an agent (`tools: [\"nika:compose\", \"nika:done\"]`), or check a file from a task " +
			"with `exec: { command: [\"nika\", \"check\", \"--json\", \"draft.nika.yaml\"] }`.",
	},
	"NIKA-BUILTIN-ASSERT-001": {
		title: "assertion false",
		body: "`nika:assert` evaluated its `condition` to `false`; the error message is the `message` " +
			"argument (default \"assertion failed\"). A non-boolean condition is NIKA-INVOKE-002 instead. Not " +
			"transient.",
		fix: "Fix what the assertion guards, or handle it: `on_error: { skip: true }` to go on without the " +
			"checked value, or stop relying on it downstream.",
	},
	"NIKA-BUILTIN-PROMPT-001": {
		title: "no TTY and no `default`",
		body: "`nika:prompt` needs a terminal to ask its question; without one it uses `default`, and without " +
			"a `default` it fails with this code. Not transient.",
		fix: "Give the prompt a `default:` (a boolean for `confirm`, a string otherwise), run the workflow from " +
			"a terminal, or pass `--yes` to confirm every `confirm` prompt.",
	},
	"NIKA-BUILTIN-WAIT-001": {
		title: "wait exceeds its `timeout`",
		body: "`nika:wait` was asked to wait (`duration`, or until `until`) longer than its own `timeout` " +
			"argument allows; it fails at once instead of waiting. Not transient.",
		fix: "Raise or remove the `timeout` argument, or wait less. Keep the task's own `timeout:` above the " +
			"wait.",
	},
	"NIKA-BUILTIN-READ-001": {
		title: "file not found or unreadable",
		body: "`nika:read` (or an `infer.vision` file) found no file at `path`, found something that is not a " +
			"regular file (a directory, a device), or could not read it. Relative paths resolve against the run " +
			"directory. Not transient.",
		fix: "Correct the path (relative to where `nika run` is started), or create the file in an earlier " +
			"task; handle optional files with `on_error: { recover: null }`.",
	},
	"NIKA-BUILTIN-READ-002": {
		title: "content invalid for `encoding`",
		body:  "The file's bytes are not valid in the requested `encoding` (default `utf-8`). Not transient.",
		fix:   "Use `encoding: latin1` for Latin-1 text, or `binary: true` to get bytes.",
	},
	"NIKA-BUILTIN-WRITE-001": {
		title: "file exists and `overwrite` is false",
		body:  "`nika:write` was called with `overwrite: false` on a path that already exists. Not transient.",
		fix:   "Allow it (`overwrite: true`, the default), write to another path, or delete the file first.",
	},
	"NIKA-BUILTIN-WRITE-002": {
		title: "parent directory missing",
		body: "The directory that should contain `path` does not exist and `create_dirs` is false (the " +
			"default). Not transient.",
		fix: "Add `create_dirs: true`, or create the directory in an earlier task.",
	},
	"NIKA-BUILTIN-WRITE-003": {
		title: "I/O error while writing",
		body: "Writing the temporary file or renaming it into place failed: permissions, a full disk, a " +
			"read-only file system. The write is atomic, so the target is left as it was. Not transient.",
		fix: "Check the permissions and free space of the target directory; retry with " +
			"`retry: { max_attempts: 2, on_codes: [NIKA-BUILTIN-WRITE-003] }` if the cause is passing.",
	},
	"NIKA-BUILTIN-EDIT-001": {
		title: "`find` text not found",
		body:  "`nika:edit` did not find the literal `find` text (not a regex) in the file. Not transient.",
		fix: "Copy the exact text from the file, whitespace and line breaks included, or read the file first " +
			"and check the text is there.",
	},
	"NIKA-BUILTIN-EDIT-002": {
		title: "occurrence count mismatch",
		body: "With `count: n` (default 1) the file must contain exactly n occurrences of `find`, and it " +
			"contains another number, so nothing was replaced. Not transient.",
		fix: "Make `find` longer so it is unique, set `count` to the actual number, or use `count: 0` to " +
			"replace every occurrence (at least one required).",
	},
	"NIKA-BUILTIN-EDIT-003": {
		title: "file missing or unreadable",
		body:  "The file to edit does not exist or cannot be read. Not transient.",
		fix:   "Correct `path` (relative to the run directory), or create the file with `nika:write` first.",
	},
	"NIKA-BUILTIN-GLOB-001": {
		title: "invalid glob pattern",
		body: "The `nika:glob` pattern is malformed, e.g. an unclosed `[` class or `{a,b}` group. It is " +
			"checked statically when the pattern is literal, at run time otherwise. Not transient.",
		example: `  - id: sources
    invoke: { tool: nika:glob, args: { pattern: "src/[a-z*.go" } }   # unclosed [`,
		fix: "Close the class or group (`src/[a-z]*.go`); the syntax is `*`, `?`, `**`, `[…]` and `{a,b}`.",
	},
	"NIKA-BUILTIN-GREP-001": {
		title: "invalid regular expression",
		body: "The `nika:grep` pattern is not a valid RE2 regular expression: RE2 has no backreferences and " +
			"no lookaround. Checked statically when literal, at run time otherwise. Not transient.",
		example: `  - id: todos
    invoke: { tool: nika:grep, args: { pattern: "(?<!//) TODO", path: "src" } }   # lookbehind`,
		fix: "Rewrite it without lookaround or backreferences (e.g. `[^/] TODO`), or filter the matches " +
			"afterwards with `nika:jq`.",
	},
	"NIKA-BUILTIN-GREP-002": {
		title: "path not found",
		body: "The `path` given to `nika:grep` (a file or a directory; default `.`) does not exist. Relative " +
			"paths resolve against the run directory. Always reported at run time (the checker reads no " +
			"files). Not transient.",
		example: `  - id: todos
    invoke: { tool: nika:grep, args: { pattern: "TODO", path: "scr" } }   # src?`,
		fix: "Correct the path, or create it in an earlier task.",
	},
	"NIKA-BUILTIN-JQ-001": {
		title: "jq compile error",
		body: "The `expression` of `nika:jq` (or the `jq` program of `nika:fetch` in `mode: jq`) does not " +
			"compile, or uses an impure builtin that nika refuses: `now`, `mktime`, `gmtime`, `localtime`, " +
			"`strftime`, `strptime`, `input`, `inputs`, `input_filename`, `$__loc__`, `$ENV`, `env`, `halt`, " +
			"`halt_error`, `debug`, `stderr`. Checked statically when literal. Not transient.",
		example: `  - id: names
    invoke: { tool: nika:jq, args: { expression: "[.[] | .name", input: [] } }   # unclosed [`,
		fix: "Fix the program's syntax; take dates from `nika:date` and pass them in as `input`.",
	},
	"NIKA-BUILTIN-JQ-002": {
		title: "jq runtime error or value count",
		body: "The `nika:jq` program failed while running (e.g. indexing a string) or did not emit exactly " +
			"one value. It is found statically when both `expression` and `input` are literal, at run time " +
			"otherwise. Not transient.",
		example: `  - id: pick
    invoke: { tool: nika:jq, args: { expression: ".[]", input: [1, 2] } }   # two values`,
		fix: "Emit exactly one value: collect with `[ … ]`, pick with `first(…)` or `.[0]`, and guard with " +
			"`//` or `?` against missing data.",
	},
	"NIKA-BUILTIN-VALIDATE-001": {
		title: "schema does not compile",
		body: "The `schema` given to `nika:validate` is not a valid JSON Schema 2020-12, or has a `$ref` that " +
			"is not local to the schema (remote references are never loaded). Checked statically when " +
			"literal. Not transient.",
		example: `  - id: check
    invoke:
      tool: nika:validate
      args: { data: { a: 1 }, schema: { type: obj } }   # not a JSON type`,
		fix: "Fix the schema (types are `object`, `array`, `string`, `number`, `integer`, `boolean`, `null`) " +
			"and inline referenced definitions under `$defs`.",
	},
	"NIKA-BUILTIN-VALIDATE-002": {
		title: "`data` does not parse",
		body: "With `format: json` or `format: yaml`, `nika:validate` parses a string `data` first, and this " +
			"string does not parse. Invalid data that parses is not an error: the result is " +
			"`{valid: false, errors}`. Checked statically when literal. Not transient.",
		example: `  - id: check
    invoke:
      tool: nika:validate
      args: { data: "{\"a\": 1", format: json, schema: { type: object } }   # unclosed`,
		fix: "Pass well-formed text, drop `format` to validate the value as it is, or validate a structured " +
			"value instead of text.",
	},
	"NIKA-BUILTIN-CONVERT-001": {
		title: "parse failure",
		body: "`nika:convert` could not parse `input` as its `from` format (`json`, `yaml`, `toml` or `csv`). " +
			"Not transient.",
		fix: "Check that `from` names the actual format of the input; pass a structured value without `from` " +
			"when the data is already parsed.",
	},
	"NIKA-BUILTIN-CONVERT-002": {
		title: "value not representable",
		body: "The value cannot be written in the `to` format: a TOML root that is not an object, a `null` " +
			"anywhere in TOML, or a nested value in a CSV cell. Not transient.",
		fix: "Reshape the value first (`nika:jq`): wrap a TOML root in an object and drop nulls, and flatten " +
			"CSV rows to scalars (or convert to JSON or YAML instead).",
	},
	"NIKA-BUILTIN-DATE-001": {
		title: "bad date, format or zone",
		body: "`nika:date` was given an input that is not RFC 3339, a format with a strftime directive outside " +
			"`%Y %y %m %d %H %M %S %L %j %a %A %b %B %z %Z %%` (or an unknown format name), a bad Go duration " +
			"(`d` is allowed for 24h), or an unknown IANA timezone. Checked statically when literal. Not " +
			"transient.",
		example: `  - id: stamp
    invoke:
      tool: nika:date
      args: { op: format, date: "2026-06-13T09:30:00Z", format: "%Y-%m-%d %Q" }   # %Q`,
		fix: "Use a supported directive or a format name (`rfc3339`, `date`, `time`, `unix`, `unix_ms`), " +
			"RFC 3339 inputs, and IANA zone names such as `Europe/Paris`.",
	},
	"NIKA-BUILTIN-FETCH-001": {
		title: "non-2xx HTTP status",
		body: "`nika:fetch` (or an `infer.vision` URL) got a final status outside 2xx (after at most 10 redirects). `details` carries " +
			"`{status, url, body_excerpt}` (at most 1 KiB). It is transient for 5xx, 408 and 429, so " +
			"`retry` retries those by default; other statuses only when listed in `retry.on_codes`.",
		fix: "For 4xx, fix the URL, method, headers or credentials; for flaky servers add " +
			"`retry: { max_attempts: 4, backoff_ms: 500 }`; to go on without the page, " +
			"`on_error: { skip: true, on_codes: [NIKA-BUILTIN-FETCH-001] }`.",
	},
	"NIKA-BUILTIN-FETCH-002": {
		title: "transport failure",
		body: "`nika:fetch` (or an `infer.vision` URL) could not complete the request: DNS, connection or TLS failure, its own request " +
			"`timeout` (default 30s) expired, or more than 10 redirects. Transient: `retry` retries it by " +
			"default.",
		fix: "Check the host name and network; add `retry: { max_attempts: 3 }`, raise the `timeout` argument " +
			"for slow servers, and handle the rest with `on_error`.",
	},
	"NIKA-BUILTIN-FETCH-003": {
		title: "unusable body",
		body: "The response arrived but cannot be used: it exceeds `max_bytes` (default 10 MiB), is not JSON " +
			"in `mode: jq`, the `jq` program failed or did not emit exactly one value, or a binary body was " +
			"requested in a text mode. Not transient.",
		fix: "Raise `max_bytes`, pick the mode that fits the content type (`jq` for JSON, `text`/`markdown` " +
			"for HTML), and make the `jq` program emit exactly one value.",
	},
	"NIKA-BUILTIN-NOTIFY-001": {
		title: "delivery failed",
		body: "`nika:notify` could not deliver: the webhook answered outside 2xx, or the request failed or " +
			"exceeded its 10 s timeout. Transient for 5xx, 408, 429 and transport failures, which `retry` " +
			"retries by default.",
		fix: "Check `target` and the receiving service; add `retry: { max_attempts: 3, backoff_ms: 2000 }`. A " +
			"notification usually should not fail the run: `on_error: { skip: true }`.",
	},
}
