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
//   - nika:prompt has no terminal in a server: it answers its `default`.
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
package server
