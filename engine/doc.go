// Package engine is nika's one composition root (ARCHITECTURE.md §2, D51): it turns engine
// options and a checked workflow into a ready run, and carries the run out. `nika run` and
// `nika serve` both use it; they map flags and environment to Options and nothing more, and
// import no verb, no wire adapter and no MCP client: only this package wires those.
//
// The stages of a run:
//
//  1. Options → Engine (New): the providers (Providers: one shared instance per provider, each
//     behind its limiter), the MCP registry (LoadMCP), the builtins, the bounds of the exec verb
//     and of agent batches (Limits, FromEnv), the clock.
//  2. A compiled workflow and the supplied vars → a Prepared run (Engine.Prepare): vars
//     resolved, secrets resolved and the masker over them, every provider the tasks name
//     available, the env values, a run id.
//  3. Engine.Execute runs it with the run's sinks: it builds the run's verbs (each run gets its
//     own MCP client, whose servers stop when the run ends), runs the planner and returns its
//     Result. EncodeReport is the masked canonical report of a result; TraceName names a trace file.
//
// Decisions where the design is silent:
//   - The exec verb is one value per Engine, so its process bound (MaxProcesses) holds for every
//     run of the process, as `nika serve` needs; `nika run` has one run per engine anyway.
//   - The `invoke` verb's clock and the agent's bound come from the Engine for both commands
//     (the two copies before had drifted: only the server passed its clock).
//   - Provider construction has two modes: an on-demand set (OnDemandProviders, the default)
//     builds a provider when a prepared run first names it and fails on one that cannot be built
//     (a missing key is exit 3 before anything runs, after the vars are checked); AllProviders
//     builds every provider of the table up front and records why each missing one is left out
//     (a service takes workflows long after it started).
//   - A service's rule on secrets (Options.AllowSecret) runs after the vars and before any
//     secret is read, so a refused secret is never read.
package engine
