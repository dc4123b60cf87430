// Package scripts reads the script files of the planner core's tests (planner/testdata/*.txt,
// planner/script_test.go describes the format and the commands): planner's tests play them
// against the core, temporal's run the same cases on the local and the Temporal driver.
//
// A file is a sequence of blocks, separated by blank lines:
//
//	command arg key=value ...
//	input lines
//	----
//	expected output
//
// Lines starting with # between blocks are comments.
package scripts

import (
	"fmt"
	"strings"
)

// Block is one command of a script file and what it should print.
type Block struct {
	Pre      []string // comments and blank lines before it
	Cmd      string
	Input    []string
	Expected []string
	Line     int // the command's line, 1-based
}

// Parse splits a script file into its blocks and the comments after the last one.
func Parse(data []byte) ([]Block, []string, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var blocks []Block
	var pre []string
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			i++
			continue
		}
		b := Block{Pre: pre, Cmd: l, Line: i + 1}
		pre = nil
		i++
		for ; i < len(lines) && lines[i] != "----"; i++ {
			b.Input = append(b.Input, lines[i])
		}
		if i == len(lines) {
			return nil, nil, fmt.Errorf("line %d: %q has no ---- line", b.Line, b.Cmd)
		}
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			b.Expected = append(b.Expected, lines[i])
		}
		blocks = append(blocks, b)
	}
	return blocks, pre, nil
}

// Command splits a command line into its name, its positional arguments and its key=value
// arguments.
func Command(line string) (name string, pos []string, args map[string]string) {
	fields := SplitArgs(line)
	args = map[string]string{}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	return fields[0], pos, args
}

// SplitArgs splits a command line on spaces outside quotes and brackets, so that a JSON value
// may hold spaces.
func SplitArgs(line string) []string {
	var out []string
	var cur strings.Builder
	depth, quoted, escaped := 0, false, false
	for _, r := range line {
		switch {
		case escaped:
			escaped = false
		case quoted && r == '\\':
			escaped = true
		case r == '"':
			quoted = !quoted
		case !quoted && (r == '[' || r == '{'):
			depth++
		case !quoted && (r == ']' || r == '}'):
			depth--
		case !quoted && depth == 0 && r == ' ':
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
