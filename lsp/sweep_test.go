package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every request at every position of the fixtures is answered without an
// error: a handler that panicked would answer with an internal error.
func TestEveryPositionIsAnswered(t *testing.T) {
	tail := "  - id: half\n    depends_on: [\n    infer: { prompt: \"${{ tasks. " // does not parse
	for _, name := range []string{"broken.nika.yaml", "valid.nika.yaml", "broken.nika.yaml+tail"} {
		text := fixture(t, strings.TrimSuffix(name, "+tail"))
		if strings.HasSuffix(name, "+tail") {
			text += tail
		}
		c := session(t, validURI, text, Options{})
		for off := 0; off <= len(text); off++ {
			if off < len(text) && !utf8Start(text[off]) {
				continue
			}
			p := utf16At(text, off)
			for _, m := range []string{"textDocument/hover", "textDocument/completion", "textDocument/definition"} {
				if e := c.callErr(m, pos(validURI, p), nil); e != nil {
					t.Fatalf("%s at %s:%d:%d: %v", m, name, p.Line+1, p.Character, e)
				}
			}
			if off%7 == 0 {
				refs := pos(validURI, p)
				refs["context"] = map[string]any{"includeDeclaration": true}
				if e := c.callErr("textDocument/references", refs, nil); e != nil {
					t.Fatalf("references at %s:%d:%d: %v", name, p.Line+1, p.Character, e)
				}
				ca := map[string]any{"textDocument": map[string]any{"uri": validURI}, "range": Range{p, p},
					"context": map[string]any{"diagnostics": []any{}}}
				if e := c.callErr("textDocument/codeAction", ca, nil); e != nil {
					t.Fatalf("codeAction at %s:%d:%d: %v", name, p.Line+1, p.Character, e)
				}
			}
		}
	}
}

// The example workflows, at every 13th position: real files, every feature
// of the language.
func TestEveryExampleIsAnswered(t *testing.T) {
	files, err := filepath.Glob("../examples/workflows/*.nika.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		uri := "file://" + f
		c := start(t, Options{}, nil)
		c.initialize()
		c.open(uri, text)
		c.diagnostics(uri, 1)
		for off := 0; off <= len(text); off += 13 {
			for off < len(text) && !utf8Start(text[off]) {
				off++
			}
			p := utf16At(text, off)
			for _, m := range []string{"textDocument/hover", "textDocument/completion", "textDocument/definition"} {
				if e := c.callErr(m, pos(uri, p), nil); e != nil {
					t.Fatalf("%s at %s:%d:%d: %v", m, f, p.Line+1, p.Character, e)
				}
			}
		}
		c.shutdown()
	}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
