package catalog

import (
	"encoding/json"
	"slices"

	"github.com/nikahq/nika/spec/internal/codes"
)

// Exact bytes of AGENT.md §3.2: they enter every agent request that admits these tools.
const (
	doneDescription    = "Call this when the task is finished. Put the answer in `result` when it is a value; leave `result` out to finish with your last message as the answer."
	doneParams         = `{"type":"object","properties":{"result":{"description":"The final answer, any JSON value."}}}`
	composeDescription = "Statically check a draft nika workflow without running it. Returns whether it is valid, its first findings with their NIKA codes, and its planned waves."
	composeParams      = `{"type":"object","properties":{"workflow_yaml":{"type":"string","description":"The complete workflow YAML to check."}},"required":["workflow_yaml"]}`
)

// Limits and enumerations shared by the definitions and the static rules.
const (
	composeMaxBytes = 256 << 10 // nika:compose draft limit (AGENT.md §9)
	fetchMaxBytes   = 10 << 20  // nika:fetch default max_bytes
)

var (
	fetchModes        = []string{"markdown", "text", "jq", "metadata", "links", "article", "selector"}
	fetchUnsupported  = []string{"feed", "sitemap"} // LANGUAGE.md §7.5, not in this engine
	notifyChannels    = []string{"webhook"}
	notifyUnsupported = []string{"slack", "email", "discord", "sms"} // optional channels, not in this engine (D25)
	dateOps           = []string{"now", "add", "subtract", "format", "parse", "diff"}
)

// dateOpArgs lists, per nika:date op, its arguments; a true value marks a required one.
func dateOpArgs(op string) (args []string, required map[string]bool, ok bool) {
	switch op {
	case "now":
		return []string{"format", "timezone"}, nil, true
	case "add", "subtract":
		return []string{"date", "duration"}, map[string]bool{"date": true, "duration": true}, true
	case "format":
		return []string{"date", "format", "timezone"}, map[string]bool{"date": true, "format": true}, true
	case "parse":
		return []string{"input", "format", "timezone"}, map[string]bool{"input": true}, true
	case "diff":
		return []string{"from", "to"}, map[string]bool{"from": true, "to": true}, true
	}
	return nil, nil, false
}

func strs(vs ...string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// anyOutput is the output schema of a builtin whose output can be any value.
var anyOutput = json.RawMessage(`{}`)

const (
	effRead  = "fs.read"
	effWrite = "fs.write"
	effNet   = "net"
)

// definitions is the catalog in LANGUAGE.md §7 order, one function per section.
func definitions() []*Builtin {
	return slices.Concat(coreBuiltins(), fileBuiltins(), dataBuiltins(), networkBuiltins())
}

// coreBuiltins: the builtins of LANGUAGE.md §7.2 Core.
func coreBuiltins() []*Builtin {
	return []*Builtin{
		{
			Name:        "nika:log",
			Description: "Write a log record to stderr and to the run's event stream; secrets are masked. Returns null.",
			Params: params(
				req("message", str("The text to log.")),
				opt("level", with(enum("Severity of the record.", "debug", "info", "warn", "error"), "default", "info")),
				opt("data", anyValue("Optional structured data attached to the record, any JSON value.")),
			),
			Output: canonical(obj{"type": "null"}),
			Floor:  true,
		},
		{
			Name:        "nika:emit",
			Description: "Emit a user event with an event type and a payload into the run's event stream. Returns the payload.",
			Params: params(
				req("event_type", with(str("Event type: lower-case letters, digits, `_` and `.`, starting with a letter, e.g. `report.ready`."),
					"pattern", "^[a-z][a-z0-9_.]*$", "minLength", 1)),
				opt("payload", with(anyValue("The event payload, any JSON value."), "default", obj{})),
			),
			Output: anyOutput,
			Floor:  true,
		},
		{
			Name:        "nika:assert",
			Description: "Check that a condition holds: fail with NIKA-BUILTIN-ASSERT-001 and `message` when `condition` is false. Returns true.",
			Params: params(
				req("condition", boolean("The condition that must be true.")),
				opt("message", with(str("The failure message when the condition is false."), "default", "assertion failed")),
			),
			Output: canonical(obj{"type": "boolean", "const": true}),
			Floor:  true,
			Codes:  []string{codes.BuiltinAssert},
		},
		{
			Name:        "nika:prompt",
			Description: "Ask the person at the terminal and wait for the answer: a yes/no confirmation, free text, or one of `choices`. Returns a boolean for mode `confirm`, otherwise the answer string; without a terminal it returns `default`.",
			Params: params(
				req("mode", enum("`confirm` asks yes/no, `input` asks for free text, `choice` asks to pick one of `choices`.", "confirm", "input", "choice")),
				req("message", with(str("The question shown to the person."), "minLength", 1)),
				opt("default", obj{"type": strs("boolean", "string"),
					"description": "The answer used without a terminal: a boolean for mode `confirm`, otherwise a string (one of `choices` for mode `choice`)."}),
				opt("choices", obj{"type": "array", "items": obj{"type": "string"}, "minItems": 1,
					"description": "The options to choose from; required for mode `choice` and used only by it."}),
			),
			Output: canonical(obj{"type": strs("boolean", "string")}),
			Codes:  []string{codes.BuiltinPrompt},
			check:  checkPrompt,
		},
		{
			Name:        "nika:done",
			Description: doneDescription,
			Params:      json.RawMessage(doneParams),
			Output:      anyOutput,
			Floor:       true,
			AgentOnly:   true,
			Codes:       []string{codes.BuiltinDone},
		},
		{
			Name:        "nika:wait",
			Description: "Pause for a duration such as `30s` or `5m`, or until an RFC 3339 time; give exactly one of `duration` and `until`. Returns {waited_ms}.",
			Params: params(
				opt("duration", str("How long to wait, as a Go duration greater than 0 and at most 24h, e.g. `500ms`, `30s`, `1h30m`.")),
				opt("until", with(str("Wait until this RFC 3339 time, e.g. `2026-06-13T09:30:00Z`; a time in the past returns at once."), "format", "date-time")),
				opt("timeout", str("Optional limit as a Go duration; a wait longer than it fails at once with NIKA-BUILTIN-WAIT-001.")),
			),
			Output: canonical(object("waited_ms", obj{"type": "integer", "minimum": 0, "description": "Milliseconds actually waited."})),
			Floor:  true,
			Codes:  []string{codes.BuiltinWait},
			check:  checkWait,
		},
		{
			Name:        "nika:compose",
			Description: composeDescription,
			Params:      json.RawMessage(composeParams),
			Output: canonical(object(
				"valid", boolean("Whether the draft has no error-level finding."),
				"stage", enum("Where checking stopped: `args`, `size` and `parse` are failures before the full check.", "args", "size", "parse", "check"),
				"error?", str("For stages args, size and parse: `<CODE> · <message>` or the reason."),
				"conformance?", obj{"type": "array", "description": "The first 12 findings, in the checker's order.",
					"items": object("code", str(""), "message", str(""))},
				"conformance_total?", integer("The number of findings."),
				"warnings_total?", integer("The number of warnings."),
				"tasks?", integer("The number of tasks."),
				"waves?", integer("The number of planned waves."),
			)),
			Floor:     true,
			AgentOnly: true,
			Codes:     []string{codes.BuiltinCompose},
			check:     checkCompose,
		},
		{
			Name:        "nika:inspect",
			Description: "Inspect the running workflow: token usage (`cost`), the records of settled tasks (`records`), the task graph (`dag_info`) or the work in progress (`threads`). Returns the requested view.",
			Params: params(
				req("view", enum("`cost`: {tokens_in, tokens_out, usd}; `records`: task id to record of settled tasks; `dag_info`: {workflow, tasks, waves, edges}; `threads`: [{task_id, iteration, attempt, started_at}].",
					"cost", "records", "dag_info", "threads")),
			),
			Output: anyOutput,
		},
	}
}

// fileBuiltins: the builtins of LANGUAGE.md §7.3 Files.
func fileBuiltins() []*Builtin {
	return []*Builtin{
		{
			Name:        "nika:read",
			Description: "Read a file and return its text with any UTF-8 byte-order mark removed, or its raw bytes when `binary` is true.",
			Params: params(
				req("path", with(str("The file to read; a relative path resolves against the run directory."), "minLength", 1)),
				opt("encoding", with(enum("Text encoding of the file.", "utf-8", "latin1"), "default", "utf-8")),
				opt("binary", with(boolean("Return the bytes instead of text."), "default", false)),
			),
			Output:  canonical(str("The text, or the bytes (base64 in JSON) when binary is true.")),
			Floor:   true,
			Effects: []string{effRead},
			Codes:   []string{codes.BuiltinReadFile, codes.BuiltinReadEncoding},
		},
		{
			Name:        "nika:write",
			Description: "Write content to a file atomically: a string or bytes verbatim, any other value as canonical JSON. Returns {path, bytes}.",
			Params: params(
				req("path", with(str("The file to write; a relative path resolves against the run directory."), "minLength", 1)),
				req("content", anyValue("What to write: a string or bytes verbatim, any other JSON value as canonical JSON.")),
				opt("create_dirs", with(boolean("Create missing parent directories."), "default", false)),
				opt("overwrite", with(boolean("Replace an existing file; when false, an existing file fails with NIKA-BUILTIN-WRITE-001."), "default", true)),
			),
			Output: canonical(object(
				"path", str("The path written."),
				"bytes", obj{"type": "integer", "minimum": 0, "description": "The number of bytes written."},
			)),
			Floor:   true,
			Effects: []string{effWrite},
			Codes:   []string{codes.BuiltinWriteExists, codes.BuiltinWriteParent, codes.BuiltinWriteIO},
		},
		{
			Name:        "nika:edit",
			Description: "Replace exact occurrences of the text `find` with `replace` in a file, atomically. With `count` n ≥ 1 the file must contain exactly n occurrences; with 0 every occurrence is replaced (at least one). Returns {path, replacements}.",
			Params: params(
				req("path", with(str("The file to edit; a relative path resolves against the run directory."), "minLength", 1)),
				req("find", with(str("The exact text to find (not a regular expression); must not be empty."), "minLength", 1)),
				req("replace", str("The replacement text.")),
				opt("count", with(integer("The exact number of occurrences expected; 0 replaces all of them."), "minimum", 0, "default", 1)),
			),
			Output: canonical(object(
				"path", str("The path edited."),
				"replacements", obj{"type": "integer", "minimum": 1, "description": "The number of occurrences replaced."},
			)),
			Floor:   true,
			Effects: []string{effRead, effWrite},
			Codes:   []string{codes.BuiltinEditNotFound, codes.BuiltinEditCount, codes.BuiltinEditFile},
		},
		{
			Name:        "nika:glob",
			Description: "List the regular files matching a glob pattern (`*`, `?`, `**`, `[…]`, `{a,b}`), dotfiles included. Returns byte-sorted slash-separated paths, relative for a relative pattern.",
			Params: params(
				req("pattern", with(str("The glob: `*` and `?` stay within a path segment, `**` spans segments, `[…]` is a character class, `{a,b}` alternatives; e.g. `src/**/*.go`."), "minLength", 1)),
				opt("exclude", with(obj{"type": "array", "items": obj{"type": "string"}, "description": "Glob patterns of paths to leave out."}, "default", []any{})),
			),
			Output:  canonical(obj{"type": "array", "items": obj{"type": "string"}}),
			Floor:   true,
			Effects: []string{effRead},
			Codes:   []string{codes.BuiltinGlob},
			check:   checkGlobArgs,
		},
		{
			Name:        "nika:grep",
			Description: "Search a file, or a directory recursively, for lines matching an RE2 regular expression; binary files are skipped. Returns [{path, line, match}] sorted by path, then line.",
			Params: params(
				req("pattern", with(str("The RE2 regular expression, matched against each line."), "minLength", 1)),
				opt("path", with(str("The file or directory to search."), "default", ".")),
				opt("case_insensitive", with(boolean("Ignore case when matching."), "default", false)),
			),
			Output: canonical(obj{"type": "array", "items": object(
				"path", str("The file, slash-separated."),
				"line", obj{"type": "integer", "minimum": 1, "description": "The 1-based line number."},
				"match", str("The whole matching line."),
			)}),
			Floor:   true,
			Effects: []string{effRead},
			Codes:   []string{codes.BuiltinGrepRegexp, codes.BuiltinGrepPath},
			check:   checkGrep,
		},
	}
}

// dataBuiltins: the builtins of LANGUAGE.md §7.4 Data.
func dataBuiltins() []*Builtin {
	return []*Builtin{
		{
			Name:        "nika:jq",
			Description: "Run a jq program on an input JSON value. Returns the program's single result; zero or several results are an error.",
			Params: params(
				req("expression", with(str("The jq program, e.g. `.items | map(.name)`. Time, environment and input functions are not available."), "minLength", 1)),
				req("input", anyValue("The JSON value the program reads; may be null.")),
			),
			Output: anyOutput,
			Floor:  true,
			Codes:  []string{codes.BuiltinJQCompile, codes.BuiltinJQRun},
			check:  checkJQArgs,
		},
		{
			Name:        "nika:json_diff",
			Description: "Compute a deterministic RFC 6902 JSON Patch that turns `before` into `after`. Returns the list of operations, [] when they are equal.",
			Params: params(
				req("before", anyValue("The original JSON value.")),
				req("after", anyValue("The changed JSON value.")),
			),
			Output: canonical(obj{"type": "array", "items": object(
				"op", enum("", "add", "remove", "replace"),
				"path", str("JSON Pointer."),
				"value?", obj{},
			)}),
		},
		{
			Name:        "nika:validate",
			Description: "Validate data against a JSON Schema (2020-12); a string `data` is parsed first when `format` is given. Returns {valid, errors: [{path, message}]}; invalid data is not an error.",
			Params: params(
				req("data", anyValue("The value to validate, or a JSON/YAML text when `format` is given.")),
				req("schema", obj{"type": strs("object", "boolean"), "description": "The JSON Schema 2020-12; only `$ref`s to fragments of this schema (`#/$defs/...`) are resolved."}),
				opt("format", enum("Parse a string `data` as this format before validating.", "json", "yaml")),
			),
			Output: canonical(object(
				"valid", boolean("Whether data conforms."),
				"errors", obj{"type": "array", "description": "Sorted by path, then message.", "items": object(
					"path", str("JSON Pointer into data."),
					"message", str(""),
				)},
			)),
			Floor: true,
			Codes: []string{codes.BuiltinValidateSchema, codes.BuiltinValidateData},
			check: checkValidate,
		},
		{
			Name:        "nika:json_merge_patch",
			Description: "Apply an RFC 7396 JSON Merge Patch to a target value. Returns the merged value.",
			Params: params(
				req("target", anyValue("The JSON value to patch.")),
				req("patch", anyValue("The merge patch: object members replace, `null` members delete, any other patch replaces the target.")),
			),
			Output: anyOutput,
		},
		{
			Name:        "nika:convert",
			Description: "Convert data between JSON, YAML, TOML and CSV: give a string `input` with its `from` format, or any structured value without `from`. Returns a string in the `to` format.",
			Params: params(
				req("input", anyValue("A text in the `from` format, or any non-string value (then omit `from`).")),
				opt("from", enum("The format of a string `input`; required for a string, not allowed otherwise.", "json", "yaml", "toml", "csv")),
				req("to", enum("The output format: canonical JSON, block YAML with sorted keys, TOML with sorted keys, or RFC 4180 CSV.", "json", "yaml", "toml", "csv")),
				opt("has_header", with(boolean("CSV only: the first row is a header, so rows become objects."), "default", true)),
			),
			Output: canonical(str("The converted text.")),
			Floor:  true,
			Codes:  []string{codes.BuiltinConvertParse, codes.BuiltinConvertRepr},
			check:  checkConvert,
		},
		{
			Name:        "nika:uuid",
			Description: "Generate a UUID, time-ordered version 7 by default or random version 4. Returns it as a lower-case canonical string.",
			Params: params(
				opt("version", with(enum("The UUID version.", "v7", "v4"), "default", "v7")),
			),
			Output: canonical(obj{"type": "string", "format": "uuid"}),
			Floor:  true,
		},
		{
			Name:        "nika:hash",
			Description: "Compute the digest of content: a string as UTF-8, bytes as they are, any other value as canonical JSON. Returns the digest as hex or base64.",
			Params: params(
				req("content", anyValue("What to hash: a string, bytes, or any JSON value.")),
				opt("algo", with(enum("The hash algorithm; blake3 gives 32 bytes.", "sha256", "sha512", "blake3"), "default", "sha256")),
				opt("encoding", with(enum("The digest encoding.", "hex", "base64"), "default", "hex")),
			),
			Output: canonical(str("The encoded digest.")),
			Floor:  true,
		},
		{
			Name:        "nika:date",
			Description: "Work with dates: `now`, `add` or `subtract` a duration, `format`, `parse`, or `diff` two dates. Takes and returns RFC 3339 timestamps (output with milliseconds); `format` returns a string and `diff` an integer number of milliseconds.",
			Params: params(
				req("op", enum("`now` {format?, timezone?}; `add`/`subtract` {date, duration}; `format` {date, format, timezone?}; `parse` {input, format?, timezone?}; `diff` {from, to} returns to − from in ms.", dateOps...)),
				opt("date", str("The RFC 3339 timestamp for add, subtract and format, e.g. `2026-06-13T09:30:00Z`.")),
				opt("duration", str("For add and subtract: a Go duration that may also use `d` (24h), e.g. `90m`, `2d12h`.")),
				opt("format", str("A name (`rfc3339`, `date`, `time`, `unix`, `unix_ms`) or a strftime pattern over %Y %y %m %d %H %M %S %L %j %a %A %b %B %z %Z %%. For parse the default is `rfc3339`.")),
				opt("timezone", with(str("An IANA time zone such as `Europe/Paris`; for parse it applies when the input has no offset."), "default", "UTC")),
				opt("input", str("For parse: the text to parse with `format`.")),
				opt("from", str("For diff: the start, an RFC 3339 timestamp.")),
				opt("to", str("For diff: the end, an RFC 3339 timestamp.")),
			),
			Output: canonical(obj{"type": strs("integer", "string"),
				"description": "An RFC 3339 timestamp with milliseconds, a formatted string, or (diff) an integer of milliseconds."}),
			Floor: true,
			Codes: []string{codes.BuiltinDate},
			check: checkDate,
		},
	}
}

// networkBuiltins: the builtins of LANGUAGE.md §7.5 Network.
func networkBuiltins() []*Builtin {
	return []*Builtin{
		{
			Name:        "nika:fetch",
			Description: "Fetch an http(s) URL and return the response converted by `mode`: Markdown (default), visible text, the result of a jq program over a JSON body, page metadata, the page's links, its main content as Markdown, or the text of the elements a CSS selector matches.",
			Params: params(
				req("url", with(str("The http or https URL."), "format", "uri", "minLength", 1)),
				opt("method", with(enum("The HTTP method.", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"), "default", "GET")),
				opt("headers", with(obj{"type": "object", "additionalProperties": obj{"type": "string"}, "description": "Request headers, name to value."}, "default", obj{})),
				opt("body", anyValue("The request body: a string is sent verbatim, any other value as canonical JSON with Content-Type application/json unless set.")),
				opt("mode", with(enum("`markdown`: HTML as Markdown; `text`: visible text; `jq`: run `jq` over the JSON body; `metadata`: {url, status, content_type, title, description, canonical, lang, og, twitter}; `links`: [{url, text}]; `article`: the main content, extracted readability-style, as Markdown; `selector`: [text of each element `selector` matches].",
					fetchModes...), "default", "markdown")),
				opt("jq", str("The jq program for mode `jq` (required there, not allowed otherwise); it must produce exactly one value.")),
				opt("selector", with(str("The CSS selector for mode `selector` (required there, not allowed otherwise), e.g. `h2, h3` or `table.prices td:nth-child(2)`."), "minLength", 1)),
				opt("timeout", with(str("Per-request timeout as a Go duration, redirects included."), "default", "30s")),
				opt("max_bytes", with(integer("The maximum body size in bytes."), "minimum", 1, "default", fetchMaxBytes)),
			),
			Output: canonical(obj{"description": "By mode: a string (`markdown`, `text`, `article`); [{url, text}] (`links`); [string], one per match (`selector`); " +
				"{url, status, content_type, title, description, canonical, lang, og, twitter} (`metadata`); the jq program's value (`jq`). " +
				"A HEAD request gives {url, status, content_type, content_length, headers} (mode `jq` runs its program over it)."}),
			Floor:   true,
			Effects: []string{effNet},
			Codes:   []string{codes.BuiltinFetchStatus, codes.BuiltinFetchTransport, codes.BuiltinFetchBody, codes.BuiltinJQCompile},
			check:   checkFetch,
			special: specialFetch,
		},
		{
			Name:        "nika:notify",
			Description: "Send a notification to a webhook: POST {workflow, task, severity, message, data, timestamp} as JSON to the `target` URL. Returns {delivered, status}.",
			Params: params(
				req("channel", enum("The delivery channel; this engine supports `webhook`.", notifyChannels...)),
				req("target", with(str("For `webhook`: the http or https URL to POST to."), "format", "uri", "minLength", 1)),
				req("message", with(str("The notification text."), "minLength", 1)),
				opt("severity", with(enum("How urgent it is.", "info", "warning", "error", "critical"), "default", "info")),
				opt("data", anyValue("Optional structured data sent with the message.")),
			),
			Output: canonical(object(
				"delivered", obj{"type": "boolean", "const": true},
				"status", integer("The HTTP status of the delivery."),
			)),
			Effects: []string{effNet},
			Codes:   []string{codes.BuiltinNotify},
			check:   checkNotify,
			special: specialNotify,
		},
	}
}
