package spec_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
)

// billionLaughs is the classic alias bomb: ten anchors, each a list of nine
// aliases of the previous one. Expanded, the last one has 9^10 leaves; D12
// says aliases are never expanded while checking and materializing stops at
// 10,000 nodes or 1 MiB.
func billionLaughs() []byte {
	var b strings.Builder
	b.WriteString("nika: v1\nworkflow: lol\nvars:\n  l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("  l" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("tasks:\n  - id: a\n    with: { bomb: *a9 }\n    exec: { command: [\"echo\", \"${{ with.bomb }}\"] }\n")
	return []byte(b.String())
}

// deepFlow nests n flow sequences inside a with value.
func deepFlow(n int) []byte {
	return []byte("nika: v1\nworkflow: deep\ntasks:\n  - id: a\n    with: { x: " +
		strings.Repeat("[", n) + strings.Repeat("]", n) +
		" }\n    exec: { command: [\"echo\", \"${{ with.x }}\"] }\n")
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

// FuzzCheck feeds arbitrary bytes to the checker: it must never panic (a
// recovered panic surfaces as an internal_error finding, which fails here
// too), and every finding must be well formed.
func FuzzCheck(f *testing.F) {
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasSuffix(n, ".out") || strings.HasSuffix(n, ".out.todo") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(fixtureDir, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add(billionLaughs())
	f.Add(deepFlow(2000))
	f.Add([]byte(""))
	f.Add([]byte("\xef\xbb\xbf"))
	f.Add([]byte("nika: v1\nworkflow: x\ntasks:\n  - id: a\n    exec: { command: \"echo ${{ \" }\n"))

	f.Fuzz(func(t *testing.T, src []byte) {
		for _, opts := range []spec.CheckOptions{{}, {MCPServers: []string{"github"}, Model: "mock/echo"}} {
			a := spec.CheckSource("fuzz.nika.yaml", src, opts)
			if a == nil {
				t.Fatal("CheckSource returned nil")
			}
			checkFindings(t, src, a.Findings)
		}
	})
}

func checkFindings(t *testing.T, src []byte, fs []spec.Finding) {
	t.Helper()
	body := bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	// Line breaks are LF, CRLF and a lone CR (YAML 1.2 §5.4).
	lines := bytes.Count(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n")) +
		bytes.Count(bytes.ReplaceAll(body, []byte("\r\n"), nil), []byte("\r")) + 1
	for _, f := range fs {
		where := findingLine(f) + " " + f.Path + ": " + f.Message
		if f.Category == "internal_error" {
			t.Errorf("checker panicked: %s\ninput:\n%q", where, src)
		}
		if f.Pos.Line < 1 || f.Pos.Column < 1 {
			t.Errorf("invalid position %d:%d: %s", f.Pos.Line, f.Pos.Column, where)
		}
		if f.Pos.Line > lines {
			t.Errorf("line %d past the end of the file (%d lines): %s", f.Pos.Line, lines, where)
		}
		if f.Pos.Offset < 0 || f.Pos.Offset > len(body) {
			t.Errorf("offset %d outside the file (%d bytes): %s", f.Pos.Offset, len(body), where)
		}
		if strings.TrimSpace(f.Message) == "" {
			t.Errorf("empty message: %s", where)
		}
		if !utf8.ValidString(f.Message) || !utf8.ValidString(f.Detail) {
			t.Errorf("message or detail is not valid UTF-8: %q / %q", f.Message, f.Detail)
		}
		switch f.Severity {
		case spec.SeverityError:
			if f.Code != "" {
				if _, ok := spec.LookupCode(f.Code); !ok {
					t.Errorf("unregistered code %s: %s", f.Code, where)
				}
			}
		case spec.SeverityWarning:
			if f.Rule == "" || f.Code != "" {
				t.Errorf("a warning needs a rule and no code: %s", where)
			}
		default:
			t.Errorf("bad severity %q: %s", f.Severity, where)
		}
	}
}
