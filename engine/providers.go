package engine

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/anthropic"
	"github.com/nikahq/nika/provider/gemini"
	"github.com/nikahq/nika/provider/openai"
	"github.com/nikahq/nika/spec"
)

// Providers is a provider set: the registry the verbs call, the wire providers in it by name
// (their limiters feed the metrics), and why each provider left out is missing. Each provider
// has one instance per set: the runs that share a set share its limiters.
type Providers struct {
	mu       sync.Mutex // guards Fronts and Unavailable while an on-demand set grows
	onDemand bool       // a provider is built when a run first names it (Engine.Prepare)
	Registry *provider.Registry
	Fronts   map[string]*provider.Front
	// Unavailable maps each provider left out to the reason, which names the variable to set
	// and never a key.
	Unavailable map[string]string
	// Invalid names the providers of Unavailable left out for a bad engine variable
	// (NIKA_<P>_MAX_INFLIGHT, _RPM, _TPM, _STREAM) rather than a missing key, in table order: a mistake
	// to report at start-up.
	Invalid []string
}

// configError is a provider's engine variable that is not valid.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

func newProviders() *Providers {
	p := &Providers{Registry: provider.NewRegistry(), Fronts: map[string]*provider.Front{}, Unavailable: map[string]string{}}
	p.Registry.Register("mock", provider.NewMock())
	return p
}

// MockProviders is a set with the mock provider only.
func MockProviders() *Providers { return newProviders() }

// OnDemandProviders is an empty set (the mock aside) that builds each provider from the
// environment when a prepared run first names it, as `nika run` needs: only the providers the
// workflow uses are built, and a missing key is an error before anything runs (exit 3).
func OnDemandProviders() *Providers {
	p := newProviders()
	p.onDemand = true
	return p
}

// ensure makes sure the provider of model is in the set, building it when the set is on
// demand. The error names the variable to set, never a key.
func (p *Providers) ensure(model string, lookup func(string) (string, bool)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.Registry.For(model); err == nil {
		return nil
	}
	name, _, _ := provider.SplitModel(model)
	if !p.onDemand {
		why := p.Unavailable[name]
		if why == "" {
			why = "it is not configured on this server"
		}
		return fmt.Errorf("provider %s is not available: %s", name, why)
	}
	if _, ok := wireFor(name, lookup); !ok {
		return nil // the checker refused unknown providers; nothing to build
	}
	return p.add(name, lookup)
}

// wire is the constructor of the wire adapter of provider name, by its row's spec.Wire*; nil
// for the mock, which has no wire. With the provider table (spec.Providers: names, key and base
// URL variables, default URLs) this is all the engine knows of providers.
func wire(row spec.Provider, lookup func(string) (string, bool)) func(*http.Client) (provider.Adapter, error) {
	switch row.Wire {
	case spec.WireAnthropic:
		return func(c *http.Client) (provider.Adapter, error) { return anthropic.New(lookup, c) }
	case spec.WireGemini:
		return func(c *http.Client) (provider.Adapter, error) { return gemini.New(lookup, c) }
	case spec.WireChatCompletions:
		prof, _ := openai.Lookup(row.Name)
		return func(c *http.Client) (provider.Adapter, error) { return openai.New(prof, lookup, c) }
	}
	return nil
}

// wireFor returns the constructor of provider name's wire adapter, or false for a name no wire
// serves (the mock, or a name the checker refuses before a run is built).
func wireFor(name string, lookup func(string) (string, bool)) (func(*http.Client) (provider.Adapter, error), bool) {
	row, ok := spec.LookupProvider(name)
	if !ok {
		return nil, false
	}
	newAdapter := wire(row, lookup)
	return newAdapter, newAdapter != nil
}

// wireNames lists every provider of the table a wire serves, by name.
func wireNames() []string {
	var names []string
	for _, row := range spec.Providers() {
		if wire(row, nil) != nil {
			names = append(names, row.Name)
		}
	}
	return names
}

// add builds provider name: its engine configuration (provider.ConfigFromEnv:
// NIKA_<PROVIDER>_MAX_INFLIGHT, _RPM, _TPM, _STREAM), its own HTTP client sized to its limiter, its wire
// adapter, and the Front over them that owns the limiter and the retries (AGENT.md §11.2).
func (p *Providers) add(name string, lookup func(string) (string, bool)) error {
	newAdapter, ok := wireFor(name, lookup)
	if !ok {
		return fmt.Errorf("no wire serves provider %q", name)
	}
	cfg, err := provider.ConfigFromEnv(name, lookup)
	if err != nil {
		return &configError{err}
	}
	a, err := newAdapter(provider.NewHTTPClient(cfg.MaxLimit)) // 0: sized for DefaultMaxLimit, as the Front is
	if err != nil {
		return err
	}
	f := provider.NewFront(name, a, cfg)
	p.Fronts[name] = f
	p.Registry.Register(name, f)
	return nil
}

// AllProviders builds every provider of the table that the environment allows (its key is set,
// or it needs none, and its engine variables are valid), plus the mock; each one left out is in
// Unavailable with the reason. A service takes workflows long after it started, so it builds the
// whole set up front rather than the ones a first workflow names.
func AllProviders(lookup func(string) (string, bool)) *Providers {
	p := newProviders()
	for _, name := range wireNames() {
		if err := p.add(name, lookup); err != nil {
			p.Unavailable[name] = err.Error()
			var ce *configError
			if errors.As(err, &ce) {
				p.Invalid = append(p.Invalid, name)
			}
		}
	}
	return p
}
