// Package server is `nika serve`: an HTTP service that checks, queues and
// runs submitted workflows on the planner, streams their canonical events
// and keeps their run reports (issue 7, DECISIONS.md D22, D35).
//
// The API: POST /v1/runs → 202 {"run_id"} (400 with the `nika check --json`
// findings for an invalid workflow, 413 for a body over the limit, 429 when
// the queue is full, 503 while shutting down); GET /v1/runs/{id} →
// {"run_id", "state", "report", "trace_error"?}; GET /v1/runs/{id}/events → the canonical
// stream as NDJSON, following the run live; DELETE /v1/runs/{id} cancels;
// GET /metrics (the injected handler); GET /healthz and GET /readyz.
//
// The same listener serves the web view (issue 18): `/` the runs, `/runs/{id}` a run's task
// graph, task panel and agent turns, `/new` the editor; see "The web view" below.
//
// The server runs every workflow on one engine (package engine, Options.Engine): it imports no
// verb, no wire adapter and no MCP client; the engine wires them.
//
// # Decisions taken where the design documents are silent
//
//   - One provider registry per process, built eagerly at start-up
//     (engine.AllProviders, which `nika serve` passes in Options.Engine): the mock and every provider whose adapter can be built
//     from the environment (a key present, or none needed). Every run's
//     verbs get that same registry, so one limiter per provider sees the
//     whole load. A submission naming a provider that is not in it is
//     refused with 400 before anything is queued, naming the variable to
//     set (never a key).
//   - Submission does everything `nika run` does before running (check,
//     compile, vars, secrets, providers) synchronously, so every refusal is
//     a 400 at once and a queued run can only fail by running. Vars are a
//     JSON object; a string is taken as the text of `--var`, any other value
//     as its canonical JSON text, converted by the var's declared type.
//   - Security (D35): every run gets spec.IntersectPermits(ceiling, own):
//     a workflow without `permits` runs under the ceiling (default `{}`,
//     pure compute). The submission is checked under that intersection
//     (spec.CheckOptions.Ceiling), so a literal subject it refuses (an exec
//     under `{}`) is a 400 with its finding; subjects known only at run time
//     are checked then. Env secrets are read only from names allowed by
//     SecretEnv; any other env secret, and every `source: file` secret
//     (permits do not govern secret files, so a submitted workflow could
//     otherwise read any file the server can), is refused with 400
//     NIKA-SEC-004. The exec verb's children get a minimal environment
//     (PATH, HOME, TMPDIR, LANG, LC_ALL, TZ), never the server's provider
//     keys.
//   - Authentication: with AuthToken set, every endpoint but /healthz and
//     /readyz needs `Authorization: Bearer <token>`, the scheme matched
//     case-insensitively (RFC 9110 §11.1: `bearer`, `BEARER`), the token
//     compared in constant time over SHA-256 digests, so not even the
//     length leaks; /metrics is protected too, since its labels name
//     submitted workflows. Without
//     AuthToken, loopback is trusted, so a browser on the same machine must
//     not pass for a local client: every endpoint but the health checks
//     answers only a Host that is loopback (127.0.0.1, [::1], localhost;
//     DNS rebinding names the attacker's domain), and cross-origin
//     POST/DELETE from a page are 403 (http.CrossOriginProtection, with
//     or without a token).
//   - Concurrency: at most MaxRuns runs execute at once; up to QueueSize
//     more wait in FIFO order; beyond that POST is 429 with `Retry-After: 5`
//     (seconds: a slot frees only when a run ends). A run cancelled
//     while queued never starts: it is `cancelled` at once, its report has
//     every task `cancelled` with a null error, and its event stream is
//     empty. DELETE of a finished run is 409.
//   - Retention: the last KeepRuns finished runs (default 1000) are kept in
//     memory with their reports and event streams, as long as together they
//     hold at most KeepBytes (default 256 MiB; the newest finished run is
//     kept whatever its size); older ones are forgotten (404). Running and
//     queued runs are never evicted.
//   - Shutdown: /readyz turns 503 and POST 503; queued runs are cancelled at
//     once; running runs drain until the Shutdown context ends, then they
//     are cancelled (their on_finally steps still run, bounded by their
//     timeouts) and awaited. Close additionally abandons on_finally steps
//     (the second signal of `nika run`).
//   - Label values: the server puts no label on anything itself; the live
//     stream goes to the injected LiveSink, and capping the `workflow` and
//     `model` label values that come from submitted YAML (first 100
//     distinct, the rest `other`, D35) is the metrics package's job
//     (`nika serve` injects one metrics.Metrics for the whole process).
//   - MCP: with Options.MCP, each run gets its own client over the
//     registry, closed when the run ends (its servers' process groups are
//     killed, D37). MCP tools still pass permits.tools, so under the
//     default ceiling they are NIKA-SEC-004.
//   - nika:prompt has no terminal in a server: it answers its `default`,
//     and one without a default pauses the run (state `paused`, its
//     `questions` listed) until POST /v1/runs/{id}/answers runs it again
//     from its journal. With Options.Backend (`nika serve --temporal`) the
//     run waits on Temporal instead and the answers are signalled to it.
//   - Path submissions read only a regular file under Workflows: a FIFO,
//     a directory, a socket or a device (directly or through a symlink) is
//     400 at once, never opened for a FIFO to block the request (the type
//     is checked before the open and again on the file, opened
//     non-blocking). Error bodies name files as the client did, relative to
//     the workflows directory, and never a path of the server's own (its
//     workflows directory, a file's full name).
//   - Shutdown and the listener: StopAdmitting (Shutdown's first step)
//     turns /readyz and POST to 503; `nika serve` keeps its listener open
//     while the runs drain, up to --shutdown-timeout, so clients get that
//     503 rather than a refused connection, and closes it after.
//   - Trace files (TraceDir, issue 12): one NDJSON file per run, created
//     when it starts (event.File). A trace that cannot be created, or not be
//     written in full (a full disk; at write, fsync or close), does not
//     change the run: its state and report are the workflow's. It is never
//     silent either: the server log says which file and why, and GET
//     /v1/runs/{id} of the finished run carries "trace_error", that same
//     message (absent when the trace is complete or there is none). A write
//     that fails cuts the file back to its last whole line, so it is a valid
//     prefix of the stream; the in-memory stream of /events is complete.
//
// # The web view
//
// Pages: `/` (the kept runs, newest first: state, workflow, start, duration, task counts;
// ?state= and ?workflow= filter them), `/runs/{id}` (the task graph, the run's facts and
// outputs; ?task=ID adds that task's panel), `/runs/{id}/trace` (the canonical stream so far, as
// a download), POST `/runs/{id}/cancel`, `/new` (GET the editor; POST it, action=check or run),
// `/explain/{code}`, `/signin` and POST `/signout`. Helpers of the pages' script live under
// `/ui/`: `/ui/runs/stream` and `/ui/runs/{id}/stream` (Server-Sent Events),
// `/ui/runs/{id}/tasks/{task}` (the task panel alone), POST `/ui/check` (the editor's findings),
// `/ui/static/` (the embedded stylesheet and script).
//
//   - Made of what the web is: server-rendered html/template pages, one stylesheet and one
//     plain script embedded in the binary (ui/, package embed), no build step, nothing fetched
//     from elsewhere. Every page, fragment and file is sent with
//     `Content-Security-Policy: default-src 'self'; base-uri 'none'; form-action 'self';
//     frame-ancestors 'none'; object-src 'none'`, nosniff, `X-Frame-Options: DENY` and
//     `Referrer-Policy: same-origin`: no inline script or style anywhere, so markup that came
//     through escaping still could not run. No data is ever written into a script: the script
//     reads JSON from the event streams and swaps in fragments the server rendered (escaped).
//     API responses keep their headers as they were.
//   - Without script, everything static works: the runs table and its filter (a GET form), the
//     graph with each task's state at load time (each node is a link to ?task=ID, so the graph is
//     keyboard navigable as links), the panel, the cancel button and the editor (forms; the
//     editor's Check shows the findings). Script adds the live updates, choosing a task without
//     a reload, cancelling without leaving the page, and the editor's check as one types.
//   - Live updates are Server-Sent Events over the run's existing logs: `canonical` is each
//     line of the stream GET /v1/runs/{id}/events serves (masked, the same bytes); `live` is the
//     run's live stream (D19), which each run now also keeps for its view (at most 50,000
//     notes, counted in KeepBytes): the canonical stream releases a task's events in canonical
//     order at settlement (AGENT.md §10.2), so only the live stream says "running" while a task
//     runs and when each tool call of a batch started and ended. Live notes keep no free text (a
//     tool's progress message is untrusted and unmasked) and the one model-chosen name, the
//     tool, is masked. A task's colour is its canonical terminal state once released, else
//     running while a job of it runs, else how its last job ended. Event ids let a reconnecting
//     EventSource resume; a stream writes what it has and flushes once before it waits, so a
//     replay of thousands of events goes out in a few writes. The page of a finished run does
//     not follow anything (it already shows the end). The runs page's stream re-reads the table
//     at most four times a second, and ends once the server is shutting down and nothing runs,
//     so an open page does not hold up the exit.
//   - The task panel: status; one row per job (attempt, for_each item) with its status, duration
//     and code; the error, its code linking to `/explain/{code}`; the output (from the report,
//     so once the run has finished) as collapsible JSON; the `output:` bindings, which the report
//     does not carry (D22): they are recomputed over the kept output with the task's own compiled
//     jq programs (pure, bounded to two seconds), so over a masked output they show the masked
//     value; the task's canonical events. For an agent task, its turns: the provider requests'
//     model and tokens, the budget checkpoint, the tools offered, nudges and stalls, and each tool
//     batch as lanes on a time axis, one per call in request order (overlapping bars ran at
//     once), each labelled with its place in the fold, which is request order (AGENT.md §11).
//     Neither stream carries the model's intermediate text (D18: events never carry outputs),
//     so the timeline shows the final answer as the task's output only.
//   - The graph is laid out by dag's waves, one column per wave, a task's row following the mean
//     row of its dependencies (one barycentre pass): O(V + E), deterministic; drawn as one SVG
//     string with every id escaped. BenchmarkRunGraph500 measures a 500-task graph.
//   - Sign-in: with AuthToken, every web path but /signin and /ui/static/ needs a session
//     (or the bearer header, so scripts can read pages): a page asked for without one is a 303 to
//     /signin?next=…, anything else a 401. POST /signin with the token (constant-time, like the
//     header) sets `nika_session`, HttpOnly, SameSite=Strict, Path=/, Secure over TLS, for 12
//     hours: the expiry and its HMAC-SHA256 under a key drawn at start-up, so a restart signs
//     everyone out and a cookie says nothing about the token. Sign-out clears the browser's
//     cookie (it is stateless: a copied cookie lasts until it expires). The return path is kept
//     on this server. The API (/v1/…, /metrics) takes only the bearer header, never the cookie.
//     Without a token the loopback rules above hold for the pages too; the cross-origin check
//     covers every form (sign-in, cancel, submit).
//   - `/new` submits through the same path as POST /v1/runs (check under the ceiling, compile,
//     vars, secrets, providers, queue), vars written one `name=value` a line as `--var`; the
//     findings are the same checker's, each shown under its source line with a caret at its
//     column. An uploaded file is read like the text.
package server
