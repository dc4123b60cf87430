package server

import (
	"net/http"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/anthropic"
	"github.com/nikahq/nika/provider/gemini"
	"github.com/nikahq/nika/provider/openai"
)

// EnvProviders builds the one provider registry of a server process: the
// mock, plus every provider whose adapter can be built from the
// environment (its key is set, or it needs none), each behind one Front
// that owns its limiter and retries. A workflow may be submitted long after
// start-up, so the registry covers every provider up front rather than the
// ones a first workflow names (as `nika run`'s buildProviders does; this is
// that function's loop over the whole provider table, kept here because
// server cannot import cmd/nika). unavailable maps each provider left out
// to the reason, which names the variable to set and never a key.
func EnvProviders(lookup func(string) (string, bool)) (reg *provider.Registry, unavailable map[string]string) {
	reg = provider.NewRegistry()
	reg.Register("mock", provider.NewMock())
	unavailable = map[string]string{}
	client := &http.Client{} // per-request deadlines come from the context
	add := func(name string, a provider.Adapter, err error) {
		if err != nil {
			unavailable[name] = err.Error()
			return
		}
		reg.Register(name, provider.NewFront(name, a, provider.FrontConfig{}))
	}
	a, err := anthropic.New(lookup, client)
	add("anthropic", a, err)
	g, err := gemini.New(lookup, client)
	add("gemini", g, err)
	for _, p := range openai.Profiles {
		o, err := openai.New(p, lookup, client)
		add(p.Name, o, err)
	}
	return reg, unavailable
}
