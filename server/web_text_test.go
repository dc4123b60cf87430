package server

import (
	"strings"
	"testing"

	"github.com/nikahq/nika/engine"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/provider/providertest"
)

// An agent turn's panel shows what the model wrote that turn (the live stream's agent_text), as
// text and with the run's secrets masked: a model can repeat a secret it was given.
func TestWebShowsTheModelsTextMasked(t *testing.T) {
	b := sayingRun(t, "the key is s3cr3t-value, <b>bold</b>", "s3cr3t-value")
	if !strings.Contains(b, `<blockquote class="model-text">the key is `) || !strings.Contains(b, "&lt;b&gt;bold&lt;/b&gt;") {
		t.Errorf("the turn does not show the model's text as text:\n%s", b)
	}
	if strings.Contains(b, "s3cr3t-value") {
		t.Errorf("the panel shows a secret the model repeated:\n%s", b)
	}
}

// A secret that a 2,000-byte cut would split is masked before the cut: neither its start nor its
// end reaches the page.
func TestWebMasksBeforeCuttingTheModelsText(t *testing.T) {
	const secret = "sk-LIVE-0123456789abcdef"
	b := sayingRun(t, strings.Repeat("a", maxTurnText-10)+secret+" and more", secret)
	if !strings.Contains(b, `<blockquote class="model-text">aaaa`) {
		t.Fatalf("the turn does not show the model's text:\n%s", b)
	}
	for _, part := range []string{"sk-LIVE", "0123456789abcdef"} {
		if strings.Contains(b, part) {
			t.Errorf("the panel shows part of a secret the cut went through: %q", part)
		}
	}
}

// sayingRun runs one agent task whose model replies reply, with secret TOK (env WEB_TOK) set to
// secret, and returns its task panel.
func sayingRun(t *testing.T, reply, secret string) string {
	t.Helper()
	reg := provider.NewRegistry()
	reg.Register("mock", providertest.NewScripted(providertest.Reply(reply)))
	env := map[string]string{"WEB_TOK": secret}
	_, c := start(t, Options{SecretEnv: []string{"WEB_TOK"}, Engine: engine.Options{
		Env:       func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Providers: &engine.Providers{Registry: reg},
	}})
	id := c.submit(`nika: v1
workflow: said
secrets:
  TOK: { source: env, key: WEB_TOK }
tasks:
  - id: a
    agent: { prompt: "Tell me.", model: mock/echo, max_turns: 2 }
`, nil)
	c.events(id)
	_, b := c.page("GET", "/ui/runs/"+id+"/tasks/a", "", nil)
	return b
}
