package catalog

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nikahq/nika/spec/internal/codes"
)

// Cross-argument rules and own static codes, one function per builtin. Each reads only
// arguments that are literal and not yet reported (call.literal, call.str), so a value that
// already drew an issue draws no second one.

const maxWait = 24 * time.Hour

func checkWait(c *call) {
	hasD, hasU := c.has("duration"), c.has("until")
	switch {
	case !hasD && !hasU:
		c.fail("", "`nika:wait` needs one of `duration` or `until`",
			"Add `duration` (a Go duration such as `30s`) or `until` (an RFC 3339 time such as `2026-06-13T09:30:00Z`).")
	case hasD && hasU:
		c.fail("", "`nika:wait` takes exactly one of `duration` and `until`, not both",
			"Remove `duration` or `until`.")
	}
	if s, ok := c.str("duration"); ok {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			c.fail("duration", fmt.Sprintf("`duration` `%s` is not a Go duration", s),
				"Write it like `500ms`, `30s`, `5m` or `1h30m` (units ns, us, ms, s, m, h).")
		case d <= 0:
			c.fail("duration", fmt.Sprintf("`duration` `%s` is not greater than 0", s),
				"Use a positive duration such as `1s`, or remove the task.")
		case d > maxWait:
			c.fail("duration", fmt.Sprintf("`duration` `%s` is longer than 24h", s),
				"Use at most `24h`; to wait longer, give `until` an RFC 3339 time instead.")
		}
	}
	if s, ok := c.str("until"); ok {
		if err := checkRFC3339(s); err != nil {
			c.fail("until", fmt.Sprintf("`until` %s %s", render(s), err.Error()), "Write it like `2026-06-13T09:30:00Z` or `2026-06-13T11:30:00+02:00`.")
		}
	}
	checkTimeout(c, "timeout")
}

// checkTimeout checks a literal Go duration argument that must be > 0.
func checkTimeout(c *call, name string) {
	s, ok := c.str(name)
	if !ok {
		return
	}
	if d, err := time.ParseDuration(s); err != nil {
		c.fail(name, fmt.Sprintf("`%s` `%s` is not a Go duration", name, s), "Write it like `10s`, `2m` or `1h`.")
	} else if d <= 0 {
		c.fail(name, fmt.Sprintf("`%s` `%s` is not greater than 0", name, s), "Use a positive duration such as `30s`.")
	}
}

func checkPrompt(c *call) {
	mode, modeKnown := c.str("mode")
	switch {
	case modeKnown && mode == "choice" && !c.has("choices"):
		c.fail("", "mode `choice` requires `choices`", "Add `choices`, a non-empty list of the strings to choose from.")
	case modeKnown && mode != "choice" && c.has("choices"):
		c.fail("choices", fmt.Sprintf("`choices` is only used with mode `choice`, not `%s`", mode),
			"Remove `choices`, or set `mode: choice`.")
	}
	if modeKnown && c.has("default") {
		isStr, known := c.isString("default")
		switch {
		case known && mode == "confirm" && isStr:
			c.fail("default", "`default` must be a boolean for mode `confirm`",
				"Use `default: true` or `default: false` (an expression must be a whole-string placeholder yielding a boolean).")
		case known && mode != "confirm" && !isStr:
			c.fail("default", fmt.Sprintf("`default` must be a string for mode `%s`", mode), "Give `default` a string.")
		}
	}
	if modeKnown && mode != "choice" {
		return
	}
	def, ok := c.str("default")
	if !ok {
		return
	}
	choices, ok := c.literal("choices")
	if !ok {
		return
	}
	list, _ := choices.([]any)
	var options []string
	for _, e := range list {
		s, _ := e.(string)
		if s == def {
			return
		}
		options = append(options, s)
	}
	detail := fmt.Sprintf("Use one of %s as `default`, or add it to `choices`", quotedList(options))
	if s := suggest(def, options); s != "" {
		detail += fmt.Sprintf(" (did you mean `%s`?)", s)
	}
	c.fail("default", fmt.Sprintf("`default` `%s` is not one of `choices`", def), detail+".")
}

func checkCompose(c *call) {
	if s, ok := c.str("workflow_yaml"); ok && len(s) > composeMaxBytes {
		c.fail("workflow_yaml", fmt.Sprintf("draft is %d bytes; the limit is %d", len(s), composeMaxBytes),
			"Shorten the draft workflow.")
	}
}

func checkGlobArgs(c *call) {
	if p, ok := c.str("pattern"); ok {
		if err := CheckGlob(p); err != nil {
			c.add(Issue{Code: codes.BuiltinGlob, Arg: "pattern", Message: fmt.Sprintf("invalid glob `%s`: %s", p, err.Error()),
				Detail: "Fix the pattern: `*` and `?` match within a segment, `**` is a whole segment, `[…]` and `{…}` must be closed."})
		}
	}
	if v, ok := c.literal("exclude"); ok {
		list, _ := v.([]any)
		for i, e := range list {
			p, _ := e.(string)
			if err := CheckGlob(p); err != nil {
				c.add(Issue{Code: codes.BuiltinGlob, Arg: "exclude", Message: fmt.Sprintf("invalid glob `%s` at `exclude/%d`: %s", p, i, err.Error()),
					Detail: "Fix the pattern: `*` and `?` match within a segment, `**` is a whole segment, `[…]` and `{…}` must be closed."})
				return
			}
		}
	}
}

func checkGrep(c *call) {
	p, ok := c.str("pattern")
	if !ok {
		return
	}
	if _, err := regexp.Compile(p); err != nil {
		c.add(Issue{Code: codes.BuiltinGrepRegexp, Arg: "pattern", Message: "invalid RE2 regular expression: " + oneLine(err.Error()),
			Detail: "Fix the regular expression; RE2 has no backreferences or look-around, and a literal `(`, `[`, `.` or `*` needs a `\\`."})
	}
}

func checkJQArgs(c *call) {
	if src, ok := c.str("expression"); ok {
		if is := checkJQ(src); is != nil {
			c.add(Issue{Code: codes.BuiltinJQCompile, Arg: "expression", Message: is.msg, Detail: is.detail})
		}
	}
}

func checkValidate(c *call) {
	if s, ok := c.literal("schema"); ok {
		if err := checkSchemaLiteral(s); err != nil {
			c.add(Issue{Code: codes.BuiltinValidateSchema, Arg: "schema", Message: err.Error(),
				Detail: "Give `schema` a valid JSON Schema 2020-12; define shared parts under `$defs` and reference them as `#/$defs/name`."})
		}
	}
	if f, ok := c.str("format"); ok && f == "json" {
		if data, ok := c.str("data"); ok {
			var v any
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				c.add(Issue{Code: codes.BuiltinValidateData, Arg: "data", Message: "`data` is not valid JSON: " + oneLine(err.Error()),
					Detail: "Fix the JSON text, or pass the value itself without `format`."})
			}
		}
	}
}

func checkConvert(c *call) {
	isStr, known := c.isString("input")
	if !known {
		return
	}
	switch {
	case isStr && !c.has("from"):
		c.fail("", "a string `input` needs `from`",
			"Add `from` (json, yaml, toml or csv) naming the format of the text; to convert a structured value, pass it as a whole-string placeholder so it keeps its type.")
	case !isStr && c.has("from"):
		c.fail("from", "`from` applies only to a string `input`", "Remove `from`: `input` is already a structured value.")
	}
}

func checkDate(c *call) {
	op, opKnown := c.str("op")
	if opKnown {
		allowed, required, _ := dateOpArgs(op)
		for i, a := range c.args {
			if c.first[a.Name] != i || a.Name == "op" || c.bad[a.Name] || slices.Contains(allowed, a.Name) {
				continue
			}
			c.fail(a.Name, fmt.Sprintf("argument `%s` is not used by op `%s`", a.Name, op),
				fmt.Sprintf("Remove `%s`; op `%s` takes %s.", a.Name, op, opArgsText(allowed, required)))
		}
		for _, r := range allowed {
			if required[r] && !c.has(r) {
				c.fail("", fmt.Sprintf("op `%s` requires `%s`", op, r),
					fmt.Sprintf("Add `%s`; op `%s` takes %s.", r, op, opArgsText(allowed, required)))
			}
		}
	}
	dateErr := func(arg, value, reason, detail string) {
		c.add(Issue{Code: codes.BuiltinDate, Arg: arg, Message: fmt.Sprintf("`%s` %s %s", arg, render(value), reason), Detail: detail})
	}
	for _, name := range []string{"date", "from", "to"} {
		if s, ok := c.str(name); ok {
			if err := checkRFC3339(s); err != nil {
				dateErr(name, s, err.Error(), "Write an RFC 3339 timestamp such as `2026-06-13T09:30:00Z` or `2026-06-13T11:30:00+02:00`.")
			}
		}
	}
	if s, ok := c.str("duration"); ok {
		if _, err := ParseDateDuration(s); err != nil {
			dateErr("duration", s, "is not a duration", "Write a Go duration that may use `d` for 24h, e.g. `30m`, `36h`, `2d`.")
		}
	}
	if s, ok := c.str("timezone"); ok {
		if err := checkTimezone(s); err != nil {
			dateErr("timezone", s, err.Error(), "Use an IANA time zone name such as `UTC`, `Europe/Paris` or `America/New_York`.")
		}
	}
	format, formatOK := "rfc3339", true
	if c.has("format") {
		format, formatOK = c.str("format")
		if formatOK {
			if err := CheckDateFormat(format); err != nil {
				dateErr("format", format, "is not a date format: "+err.Error(), "Use a name (rfc3339, date, time, unix, unix_ms) or a strftime pattern over %Y %y %m %d %H %M %S %L %j %a %A %b %B %z %Z %%.")
				formatOK = false
			}
		}
	}
	if opKnown && op == "parse" && formatOK {
		if s, ok := c.str("input"); ok {
			if err := checkParseInput(s, format); err != nil {
				dateErr("input", s, err.Error(), "Make `input` match `format`, or change `format`.")
			}
		}
	}
}

func opArgsText(allowed []string, required map[string]bool) string {
	if len(allowed) == 0 {
		return "no other arguments"
	}
	parts := make([]string, len(allowed))
	for i, a := range allowed {
		parts[i] = a
		if !required[a] {
			parts[i] += "?"
		}
	}
	return strings.Join(parts, ", ")
}

// specialFetch replaces the generic enum check of the `mode` values this engine does not
// support (LANGUAGE.md §7.5: NIKA-BUILTIN-001, "mode not supported by this engine").
func specialFetch(c *call, i int) bool {
	a := c.args[i]
	if a.Name != "mode" || a.Dynamic || a.StringTyped {
		return false
	}
	if m, ok := a.Value.(string); ok && slices.Contains(fetchUnsupported, m) {
		c.fail("mode", fmt.Sprintf("mode `%s` is not supported by this engine", m),
			fmt.Sprintf("Use one of the supported modes %s.", quotedList(fetchModes)))
		return true
	}
	return false
}

func checkFetch(c *call) {
	if s, ok := c.str("url"); ok {
		if msg := checkHTTPURL(s); msg != "" {
			c.fail("url", "`url` "+msg, "Use an absolute `http://` or `https://` URL, e.g. `https://example.com/page`.")
		}
	}
	mode, modeKnown := "markdown", true
	if c.has("mode") {
		mode, modeKnown = c.str("mode")
	}
	switch {
	case modeKnown && mode == "jq" && !c.has("jq"):
		c.fail("", "mode `jq` requires `jq`", "Add `jq` with the program to run over the JSON body, e.g. `jq: .items | length`.")
	case modeKnown && mode != "jq" && c.has("jq"):
		c.fail("jq", fmt.Sprintf("`jq` is only allowed with mode `jq`, not `%s`", mode), "Set `mode: jq`, or remove `jq`.")
	}
	switch {
	case modeKnown && mode == "selector" && !c.has("selector"):
		c.fail("", "mode `selector` requires `selector`", "Add `selector` with the CSS selector of the elements to read, e.g. `selector: h2`.")
	case modeKnown && mode != "selector" && c.has("selector"):
		c.fail("selector", fmt.Sprintf("`selector` is only allowed with mode `selector`, not `%s`", mode), "Set `mode: selector`, or remove `selector`.")
	}
	if src, ok := c.str("jq"); ok {
		if is := checkJQ(src); is != nil {
			c.add(Issue{Code: codes.BuiltinJQCompile, Arg: "jq", Message: is.msg, Detail: is.detail})
		}
	}
	if sel, ok := c.str("selector"); ok && sel != "" {
		if _, err := ParseSelector(sel); err != nil {
			c.fail("selector", fmt.Sprintf("`selector` `%s` is not a valid CSS selector: %v", sel, err),
				"Use a CSS selector such as `h2`, `article p`, `a[href]` or `ul > li:first-child`; pseudo-elements (`::before`) are not supported.")
		}
	}
	checkTimeout(c, "timeout")
}

// specialNotify replaces the generic enum check for the optional channels this engine does
// not support (D25).
func specialNotify(c *call, i int) bool {
	a := c.args[i]
	if a.Name != "channel" || a.Dynamic || a.StringTyped {
		return false
	}
	if ch, ok := a.Value.(string); ok && slices.Contains(notifyUnsupported, ch) {
		c.fail("channel", fmt.Sprintf("channel `%s` is not supported by this engine", ch),
			"Use `channel: webhook` with an http(s) URL as `target`.")
		return true
	}
	return false
}

func checkNotify(c *call) {
	if ch, ok := c.str("channel"); !ok || ch != "webhook" {
		return
	}
	if s, ok := c.str("target"); ok {
		if msg := checkHTTPURL(s); msg != "" {
			c.fail("target", "webhook `target` "+msg, "Use an absolute `http://` or `https://` URL.")
		}
	}
}

// checkHTTPURL returns why s is not an absolute http(s) URL with a host, or "".
func checkHTTPURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("`%s` is not a valid URL", s)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return fmt.Sprintf("`%s` has no scheme; only http and https are supported", s)
	default:
		return fmt.Sprintf("scheme `%s` is not supported; only http and https are", u.Scheme)
	}
	if u.Host == "" {
		return fmt.Sprintf("`%s` has no host", s)
	}
	return ""
}
