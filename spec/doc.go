// Package spec is the nika workflow language: the AST with positions
// (Parse), the one static checker (Check, Analyze), findings and their
// renderers, the NIKA error-code registry with its explanations, and the
// embedded JSON Schema of the format. Sub-packages hold the expression front
// end (expr), pure jq (jq), JSON Schema (schema), canonical JSON (canon) and
// the builtin catalog (catalog).
//
// # Decisions taken where the design documents are silent
//
// These complete LANGUAGE.md and DECISIONS.md; the code and the fixtures in
// testdata/fixtures follow them.
//
//   - Columns count characters (runes), 1-based; the byte offset kept in Pos
//     is authoritative and computed from the source, not from the YAML
//     library.
//   - A task without `id` is NIKA-PARSE-006 ("bad task id"), at the task's
//     mapping.
//   - Unknown keys inside `on_error` are NIKA-PARSE-012 (§3.10 says "anything
//     else"); engine keys there are still NIKA-PARSE-020.
//   - `for_each` given a string that is not exactly one `${{ … }}`, or an
//     expression of known non-list type, is NIKA-VAR-005, like `when`.
//   - A file that is not valid UTF-8 is NIKA-PARSE-001 at the first invalid
//     byte. A mapping key that is not a string (`1:`, `true:`) is
//     NIKA-PARSE-019. An integer outside int64 is NIKA-PARSE-019.
//   - Tool globs that start with a wildcard are accepted; a bare `*` draws
//     `tool-glob-star` and a bare `**` the extra rule `tool-glob-doublestar`
//     (AGENT.md §1.2 asks for a warning on `**`).
//   - The file-extension lint fires only for names that end neither in
//     `.yaml` nor `.yml` (D47).
//   - Static permits checks compare only literal subjects. A relative path is
//     compared with relative `fs` globs and an absolute one with absolute
//     globs; a path that cannot be compared statically is left to the
//     runtime check.
//   - NIKA-BUILTIN-GREP-002 (path not found) is never static: the checker
//     does not read the file system. NIKA-BUILTIN-JQ-002 is never static
//     either: running a literal program at check time cannot be bounded
//     deterministically (`repeat(1)`), so its value count is a run-time
//     matter.
//   - Flow collections nested deeper than 256 levels are NIKA-PARSE-001
//     before the YAML parser runs: its cost grows much faster than the input.
//   - A tab used as a separator inside a flow mapping (`{<TAB>a: 1}`) is
//     valid YAML 1.2 that goccy/go-yaml rejects; nika reports its
//     NIKA-PARSE-001 (fixture valid-tab-in-flow is kept, skipped, as a known
//     limitation of the parser).
//   - A missing model on an on_finally `infer`/`agent` step is reported like
//     a task's (NIKA-PARSE-018).
//   - The MCP registry is `.nika/mcp_servers.json` in the run directory, or
//     the file NIKA_MCP_CONFIG names; `nika check` reads only its server
//     names (D7). Without the file,
//     unregistered servers are a runtime NIKA-INVOKE-001.
//   - Aliases are never expanded while checking: an aliased subtree is
//     checked where its anchor is, and shared (not copied) by the typed
//     model. Materializing a literal value stops at 10,000 nodes or 1 MiB
//     with NIKA-PARSE-001 (D12), and at 1,000 levels of nesting (so a
//     self-referencing anchor stays finite). The message names the limit
//     passed and says "with its aliases expanded" only when the value as
//     written is within the limits, i.e. when expanding is what passed them.
//   - A checker panic (a bug) becomes a code-less `internal_error` finding
//     instead of crashing the process.
//   - Text findings are inert on a terminal (WriteText, FormatFinding): a
//     workflow is untrusted input, so control characters in the snippet,
//     file name, path, message and detail are written as escapes (`\x1b`,
//     `\x07`; C1 controls, bidirectional overrides and isolates as `\uNNNN`;
//     a byte that is not UTF-8 as `\xNN`), a tab as one space. A snippet
//     line longer than 120 columns is cut to a 120-column window around the
//     caret (about a third before it), `…` on each cut side. The caret
//     counts the escaped widths, so it stays under its character. JSON
//     output needs none of this: its encoder escapes controls.
//   - `infer.thinking`: writing the mapping asks for thinking, so `enabled`
//     defaults to true (`enabled: false` turns it off) and `budget_tokens` to
//     2048. Anthropic gets `thinking.budget_tokens` (raised to its minimum of
//     1024; without `max_tokens`, max_tokens = budget + 4096); Gemini 2.5 and
//     later `thinkingConfig.thinkingBudget`; OpenAI's reasoning models and
//     Ollama `reasoning_effort` (budget < 4096 low, < 16384 medium, else
//     high); OpenRouter `reasoning.max_tokens`. Any other provider or model
//     ignores it, and the task emits a `log` event at level `warn` saying so
//     (on stderr and in the trace). The mock takes it silently (§6.3).
//   - `infer.vision`: a file follows nika:read's rules and a URL nika:fetch's
//     (permits.fs.read, permits.net.http, the SSRF floor, 10 redirects, 30 s);
//     their failures keep those codes (NIKA-SEC-004, NIKA-SEC-005,
//     NIKA-BUILTIN-READ-001, NIKA-BUILTIN-FETCH-001/002), with the input named
//     (`vision[0]: …`). The bytes must sniff as PNG, JPEG, GIF or WebP and be
//     at most 20 MiB, else NIKA-VAR-006. Images go before the prompt in the
//     user message. The mock loads nothing (it ignores vision, §6.3), so it
//     stays offline.
//   - A set NIKA_RUN_DEPTH that is not a whole number ≥ 0 stops `nika run`
//     and `nika serve` with exit 3 instead of counting as 0.
package spec
