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
//     with NIKA-PARSE-001 (D12).
//   - A checker panic (a bug) becomes a code-less `internal_error` finding
//     instead of crashing the process.
package spec
