package provider

import (
	"maps"
	"strconv"
	"sync"

	"github.com/nikahq/nika/spec"
)

// Registry maps provider names ("openai", "mock", …) to the one instance of each that serves a run
// (D5, AGENT.md §11.2): every verb of the run gets its provider from the same Registry, so one
// per-provider limiter sees the whole load. There is no global registry; the caller builds one and
// passes it down. A Registry is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	providers map[string]Provider
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{providers: map[string]Provider{}}
}

// Register makes p the instance for provider name, replacing any earlier one. A nil p removes the
// name.
func (r *Registry) Register(name string, p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p == nil {
		delete(r.providers, name)
		return
	}
	r.providers[name] = p
}

// Instances returns the registered instances by provider name: a copy, which later calls to Register
// do not change. It is for observers (the metrics, the live stream's provider_state), which look at
// every provider a run built, not just the ones a model id names.
func (r *Registry) Instances() map[string]Provider {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.providers)
}

// For returns the instance that serves model ("<provider>/<name>"). A malformed id is NIKA-INFER-001
// with reason bad_request; a provider with no registered instance is reason model_not_found. Whether
// the instance serves that particular name is for its Complete to say.
func (r *Registry) For(model string) (Provider, *spec.Error) {
	prov, _, ok := SplitModel(model)
	if !ok {
		return nil, Failure{Model: model, Reason: ReasonBadRequest,
			Message: "malformed model id " + strconv.Quote(model) + ": want <provider>/<name>"}.Err()
	}
	r.mu.RLock()
	p := r.providers[prov]
	r.mu.RUnlock()
	if p == nil {
		return nil, Failure{Model: model, Reason: ReasonModelNotFound,
			Message: "no provider " + strconv.Quote(prov) + " is configured for model " + strconv.Quote(model)}.Err()
	}
	return p, nil
}
