// Package mcp is nika's MCP client (LANGUAGE.md §5.3, DECISIONS.md D7, D37) on the official Go SDK:
// the server registry (Registry, read from .nika/mcp_servers.json or NIKA_MCP_CONFIG) and one
// Client per run that starts the registry's stdio servers lazily, lists and calls their tools, and
// shuts every server down, process group and all, when the run ends. *Client is the run's
// tools.Source: `invoke: {tool: mcp:…}` and the agent universe both go through it.
//
// # Decisions taken where the design is silent
//
//   - A server runs with a small inherited environment (HOME, LOGNAME, PATH, SHELL, TERM, USER,
//     TMPDIR, LANG, LC_ALL, LC_CTYPE, TZ), then its registry `env` on top, as other MCP clients do:
//     the engine's own environment holds provider keys that a third-party server has no business
//     reading. Its working directory is the run directory; its stderr is kept (the last 4 KiB)
//     for NIKA-MCP-001 messages, never printed.
//   - "Not configured" (NIKA-MCP-001, not transient) is a registry entry without a `command`, an
//     entry that does not decode, or a command that does not exist; so is a server that answers
//     tools/list with an error, or with a list nika cannot read (its session is kept). Every
//     other failure to start, a crash and a dropped connection are NIKA-MCP-001, transient.
//   - One session per server per run, shared by every task; a session that dies is dropped, and
//     the next call starts the server again (this is what makes NIKA-MCP-001 worth a retry).
//     Concurrent first calls start a server once; a start that fails is reported to the calls
//     that waited for it, and a later call tries again.
//   - tools/list is read once per session (every page) and kept; a tool whose name is not a valid
//     nika tool segment ([A-Za-z0-9_-]+) cannot be named in a workflow and is left out.
//   - Arguments are checked against the tool's input schema with spec/schema; a schema that does
//     not compile there (an external $ref, an unknown $schema) is not checked by nika, and the
//     server remains the judge.
//   - A JSON-RPC error answer to tools/call (as opposed to an `isError` result) is NIKA-MCP-002
//     too: the server understood the call and refused it. A result the SDK cannot decode (a
//     content type it does not know, say) from a server that still answers a ping is
//     NIKA-INVOKE-003, not transient, and the session is kept: the server has not crashed.
//   - Output: with no content blocks at all, "all blocks are text" holds and the output is "".
//   - Progress (CallProgress): a tools/call carries a progress token ("nika-<n>", unique in the
//     run) only when the caller takes progress; a call made through Call asks for none. A
//     notifications/progress is delivered only to the call whose token it names, from the
//     session that call went to, and only until the call returns: the SDK hands the answer to
//     the call as soon as it is read, so notifications a server sends right before its answer
//     may still be queued then, and they are dropped rather than reported after the call ended.
//   - Close lets each server exit by itself for Options.Grace after closing its stdin (the MCP
//     stdio shutdown), then kills its process group whatever happened, so grandchildren die too.
//     On Linux a server that exits by itself has its group killed at once: a grandchild that
//     holds its stdout would otherwise keep its session, and the calls in flight, waiting.
//   - On Linux a server's group is a watched one (tools/procgroup): when the engine dies, even
//     by SIGKILL, the group's watcher kills the server and its grandchildren. The group id is
//     then the watcher's pid, not the server's. Elsewhere a SIGKILLed engine leaves its
//     servers running (see tools/procgroup, "Limits").
package mcp
