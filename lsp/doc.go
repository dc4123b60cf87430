// Package lsp is `nika lsp`: a language server (LSP 3.17) for nika
// workflows, spoken over one connection — the stdio of `nika lsp` — with
// the base protocol's Content-Length framing. Serve runs one session.
//
// What it serves, all from the one checker of `nika check`
// (spec.CheckSource with the same CheckOptions):
//
//   - diagnostics: every finding of the document, published when it is
//     opened and after every change (debounced by Options.Debounce), with
//     its NIKA code (a warning's lint rule), its message and detail, and a
//     range; Diagnostic.Data keeps the finding's 1-based line and rune
//     column, path, message and detail exactly as `nika check --json` has
//     them;
//   - hover: the findings under the cursor with their code's `nika explain`
//     text, a NIKA code written in the file, a `tasks.X` reference's task
//     (verb, model or tool, dependencies, output shape, bindings), a var or
//     env constant, an expression's static type, a builtin's description and
//     parameters (spec/catalog), a key's description (the JSON Schema);
//   - completion: the keys the schema allows at the cursor, a builtin's
//     parameters in `args:`, task ids in `depends_on` and after `tasks.`,
//     record fields and bindings after `tasks.X.`, builtins and the MCP
//     registry's servers in `tool:`, `tools:` and `permits.tools`, codes in
//     `on_codes`, providers in `model:`, declared names after `vars.`,
//     `env.`, `secrets.` and `with.`, enumerated values;
//   - go to definition and find references of task ids (and of vars, env
//     and secrets names);
//   - code actions: a quick fix for every finding whose detail has a "did
//     you mean" (the name replaced) and for NIKA-DAG-003 (the missing
//     `depends_on` entry added).
//
// # The contract
//
//   - Positions are LSP's: 0-based lines, characters in UTF-16 code units
//     (the server announces positionEncoding utf-16, which every client
//     supports). Conversions go through the checker's byte offsets, which
//     are authoritative, so a finding after non-ASCII text on its line is
//     where `nika check` says; a leading byte-order mark, which the checker
//     drops, is accounted for.
//   - A finding has one position, where the caret goes. Its range is the
//     token that starts there, read from the raw source: a placeholder
//     `${{ … }}`, a scalar as written (quotes included), a flow collection,
//     a block scalar's indicator line, or a word.
//   - Text sync is incremental (full texts are accepted too). A document's
//     text is replaced on each change, never edited in place.
//   - One goroutine checks in the background: a document is checked when
//     its debounce has passed, one check at a time. spec.CheckSource cannot
//     be interrupted, so a check superseded by a newer change is discarded
//     when it ends (and a publication already queued is dropped before it
//     is written): diagnostics of a text the client has since changed are
//     never published. Each publication carries its document version.
//   - Requests are answered from the current text: a request that arrives
//     before the background check of that text checks it at once (and the
//     check loop then reuses that analysis). Completion reads the cursor's
//     place from the text line by line, and names from the latest text
//     that parsed, so it works while the text is half typed.
//   - Lifecycle per LSP 3.17: before initialize, requests fail with
//     ServerNotInitialized (-32002) and notifications are dropped; after
//     shutdown, requests fail with InvalidRequest; exit ends the session.
//     Serve returns nil after shutdown then exit (or the end of the input
//     after shutdown), ErrNoShutdown otherwise (`nika lsp` exits 1 then, as
//     LSP asks), and a framing error when a header cannot be read past.
//   - Bad input does not end a session when it can be read past: a body
//     that is not JSON is answered with a parse error (id null); a handler
//     that panics fails its request with an internal error.
//   - Writes never block the read loop: messages are queued to one writer
//     goroutine. Every goroutine Serve starts has ended when it returns.
//
// # Decisions taken where the documents are silent
//
//   - A diagnostic's message is the finding's message, then its detail on a
//     line of its own (an editor showing one line shows what is wrong).
//   - The file name checked is the path of a file: URI (so the
//     file-extension lint and `nika check` agree), the URI itself otherwise.
//   - The MCP registry is read once, by `nika lsp`, at start-up, like
//     `nika check` reads it (the working directory's .nika/mcp_servers.json
//     or NIKA_MCP_CONFIG).
//   - No $/cancelRequest: every request is answered synchronously and
//     quickly, which LSP allows.
//   - JSON-RPC framing is written here (about 60 lines) rather than taken
//     from a library, as are the few protocol types used.
package lsp
