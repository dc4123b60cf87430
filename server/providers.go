package server

import (
	"net/http"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/anthropic"
	"github.com/nikahq/nika/provider/gemini"
	"github.com/nikahq/nika/provider/openai"
)

// Providers is the provider set of a server process.
type Providers struct {
	// Registry is shared by every run (Options.Providers).
	Registry *provider.Registry
	// Fronts are the wire providers in it, by name, for the limiter
	// gauge of the metrics (D19).
	Fronts map[string]*provider.Front
	// Unavailable maps each provider left out to the reason, which names
	// the variable to set and never a key (Options.Unavailable).
	Unavailable map[string]string
}

// EnvProviders builds the one provider set of a server process: the mock,
// plus every provider whose adapter can be built from the environment (its
// key is set, or it needs none), each behind one Front that owns its
// limiter and retries, with the engine configuration and HTTP client of
// that provider (as in buildProviders). A workflow may be submitted long after start-up, so
// the set covers every provider up front rather than the ones a first
// workflow names (as `nika run`'s buildProviders does; this is that
// function's loop over the whole provider table, kept here because server
// cannot import cmd/nika).
func EnvProviders(lookup func(string) (string, bool)) Providers {
	p := Providers{Registry: provider.NewRegistry(), Fronts: map[string]*provider.Front{}, Unavailable: map[string]string{}}
	p.Registry.Register("mock", provider.NewMock())
	// add builds provider name: its engine configuration (provider.ConfigFromEnv), its own HTTP
	// client sized to its limiter, its adapter from newAdapter, and the Front over them. A bad
	// engine variable leaves the provider out like a missing key, the reason naming the variable.
	add := func(name string, newAdapter func(*http.Client) (provider.Adapter, error)) {
		cfg, err := provider.ConfigFromEnv(name, lookup)
		if err != nil {
			p.Unavailable[name] = err.Error()
			return
		}
		a, err := newAdapter(provider.NewHTTPClient(cfg.MaxLimit)) // 0: sized for DefaultMaxLimit, as the Front is
		if err != nil {
			p.Unavailable[name] = err.Error()
			return
		}
		f := provider.NewFront(name, a, cfg)
		p.Fronts[name] = f
		p.Registry.Register(name, f)
	}
	add("anthropic", func(c *http.Client) (provider.Adapter, error) { return anthropic.New(lookup, c) })
	add("gemini", func(c *http.Client) (provider.Adapter, error) { return gemini.New(lookup, c) })
	for _, prof := range openai.Profiles {
		add(prof.Name, func(c *http.Client) (provider.Adapter, error) { return openai.New(prof, lookup, c) })
	}
	return p
}
