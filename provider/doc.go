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
// reuses connections instead of opening one per request.
package provider
