package main

import (
	"fmt"
	"strings"

	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/anthropic"
	"github.com/nikahq/nika/provider/gemini"
	"github.com/nikahq/nika/provider/openai"
	"github.com/nikahq/nika/workflow"
)

// buildProviders makes one provider instance per provider the workflow's
// tasks name (AGENT.md §11.2): the mock, or a wire adapter behind a Front
// that owns the limiter and retries. Credentials and base URLs come from
// the environment only (§6.1), and so does each provider's engine
// configuration (provider.ConfigFromEnv: NIKA_<PROVIDER>_MAX_INFLIGHT, _RPM,
// _TPM); each provider gets its own HTTP client, sized to its limiter. A
// missing key or a bad engine variable is returned as a message naming the
// variable, before anything runs (exit 3).
func buildProviders(w *workflow.Workflow, lookup func(string) (string, bool)) (*provider.Registry, string) {
	reg := provider.NewRegistry()
	reg.Register("mock", provider.NewMock())
	seen := map[string]bool{"mock": true}
	for _, t := range w.Tasks {
		name, _, _ := strings.Cut(t.Model, "/")
		if t.Model == "" || seen[name] {
			continue
		}
		seen[name] = true
		cfg, err := provider.ConfigFromEnv(name, lookup)
		if err != nil {
			return nil, fmt.Sprintf("task %q uses %s: %v", t.ID, t.Model, err)
		}
		client := provider.NewHTTPClient(cfg.MaxLimit) // 0: sized for DefaultMaxLimit, as the Front is
		var a provider.Adapter
		switch name {
		case "anthropic":
			a, err = anthropic.New(lookup, client)
		case "gemini":
			a, err = gemini.New(lookup, client)
		default:
			p, ok := openai.Lookup(name)
			if !ok {
				continue // the checker refused unknown providers; nothing to build
			}
			a, err = openai.New(p, lookup, client)
		}
		if err != nil {
			return nil, fmt.Sprintf("task %q uses %s: %v", t.ID, t.Model, err)
		}
		reg.Register(name, provider.NewFront(name, a, cfg))
	}
	return reg, ""
}
