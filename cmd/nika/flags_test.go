package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every flag a command defines is named in its synopsis (`nika COMMAND -h`), in `nika help` and
// in the README's row for the command: a flag nobody can find is a flag nobody uses.
func TestEveryFlagIsDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(pkgDir, "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	flagLine := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)
	for _, cmd := range []string{"run", "run --temporal", "worker", "answer", "serve", "check", "graph"} {
		// `run --temporal` is its own command; its flag takes a value (-h would be it).
		args := append(strings.Fields(strings.Replace(cmd, "--temporal", "--temporal=127.0.0.1:1", 1)), "-h")
		r := runInProcess(t, t.TempDir(), args...)
		if r.code != 0 {
			t.Fatalf("nika %s -h: exit %d", cmd, r.code)
		}
		help := section(usageText, "  nika "+cmd+" ", "\n  nika ")
		row := section(string(readme), "| `nika "+cmd+" ", "\n")
		if row == "" {
			t.Fatalf("README has no row for nika %s", cmd)
		}
		for _, m := range flagLine.FindAllStringSubmatch(r.stdout, -1) {
			name := "--" + m[1]
			for where, text := range map[string]string{"synopsis": synopses[cmd], "nika help": help, "README": row} {
				if !strings.Contains(text, name+" ") && !strings.Contains(text, name+"]") && !strings.Contains(text, name+"=") {
					t.Errorf("nika %s %s is missing from the %s", cmd, name, where)
				}
			}
		}
	}
}

// section is the text from the first start to the next end after it ("" without start).
func section(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s[len(start):], end); j >= 0 {
		return s[:len(start)+j]
	}
	return s
}
