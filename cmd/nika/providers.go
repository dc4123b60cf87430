package main

import (
	"fmt"
	"net/http"
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
// the environment only (§6.1); a missing key is returned as a message
// naming the variable, before anything runs (exit 3).
func buildProviders(w *workflow.Workflow, lookup func(string) (string, bool)) (*provider.Registry, string) {
	reg := provider.NewRegistry()
	reg.Register("mock", provider.NewMock())
	client := &http.Client{} // per-request deadlines come from the context
	seen := map[string]bool{"mock": true}
	for _, t := range w.Tasks {
		name, _, _ := strings.Cut(t.Model, "/")
		if t.Model == "" || seen[name] {
			continue
		}
		seen[name] = true
		var a provider.Adapter
		var err error
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
		reg.Register(name, provider.NewFront(name, a, provider.FrontConfig{}))
	}
	return reg, ""
}
