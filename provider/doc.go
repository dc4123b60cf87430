// Package provider is nika's model-provider layer: the provider-neutral transcript, requests and
// outcomes, the batch-first Provider contract, the per-run Registry, and the offline mock provider.
//
// Wire adapters (OpenAI-compatible, Anthropic, Gemini) translate the neutral types to and from their
// wires; they live beside the mock and are added separately. Every failure is a *spec.Error with code
// NIKA-INFER-001 and the details of DECISIONS.md D27 (see Failure).
//
// Each wire provider's Front is configured from the environment (ConfigFromEnv):
// NIKA_<PROVIDER>_MAX_INFLIGHT caps its requests in flight (default DefaultMaxLimit), and
// NIKA_<PROVIDER>_RPM and NIKA_<PROVIDER>_TPM are its published budgets of requests and tokens per
// minute (default none); <PROVIDER> is the name upper-cased, as in NIKA_OPENAI_API_KEY (EnvVar).
// Each provider has its own HTTP client (NewHTTPClient), which keeps as many idle connections per
// host as that cap and speaks HTTP/2 where the server offers it, so a limiter at its ceiling
// reuses connections instead of opening one per request. NIKA_<PROVIDER>_STREAM (1 or true, 0 or
// false; default on) says whether CompleteStream streams that provider's replies (FrontConfig.NoStream).
//
// # Streaming
//
// A reply can be read while the model is still writing it (issue 17), so that a consumer (the
// agent) learns each tool call the moment its arguments are complete. The contract is layered
// like the rest of the package:
//
//   - StreamAdapter is an optional capability of an Adapter (found by type assertion, as
//     database/sql finds a driver's optional interfaces): ExchangeStream is one exchange whose reply
//     is read as it streams, returning the very Response the plain Exchange returns for the same
//     answer. The three wire adapters have it; the SSE framing they share is SSEReader.
//   - Streamer is the optional capability of a Provider, which the Front has: CompleteStream(ctx,
//     req, obs) answers one request under the same limiter, retries, MaxSends, Deadline and token
//     accounting as Complete (each attempt is one send, in flight until its stream ends). Stream
//     calls any Provider that way, answering through Complete for one that is not a Streamer.
//   - StreamObserver is what the caller hears: text deltas, each tool call with its index in the
//     response once its arguments can no longer change, and a restart before a transient failure
//     is retried from scratch (what was announced is then void). It is a struct of optional
//     callbacks, as net/http/httptrace.ClientTrace is, rather than an interface or a channel:
//     a consumer sets only the hooks it needs, the adapters call it synchronously on the reading
//     goroutine (no goroutine, no buffering, no ordering to reconstruct), and a nil observer is
//     free. The Front stands a tracker between the adapter and the observer, which announces at
//     the end whatever the wire did not stream (a plain fallback, a server without streaming) and
//     drops repeats, so the observer's promises hold for every adapter.
//
// Complete never streams: a batch is answered whole, as before.
package provider
