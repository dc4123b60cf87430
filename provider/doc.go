// Package provider is nika's model-provider layer: the provider-neutral transcript, requests and
// outcomes, the batch-first Provider contract, the per-run Registry, and the offline mock provider.
//
// Wire adapters (OpenAI-compatible, Anthropic, Gemini) translate the neutral types to and from their
// wires; they live beside the mock and are added separately. Every failure is a *spec.Error with code
// NIKA-INFER-001 and the details of DECISIONS.md D27 (see Failure).
package provider
