// Package jsontext finds and decodes the JSON value in a model's reply
// (LANGUAGE.md §5.1): the whole reply, the first fenced code block, then the
// first balanced {…}/[…] span; shared by the infer and agent verbs.
package jsontext

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Candidates returns the JSON texts to try, in the order of LANGUAGE.md §5.1: the whole reply, the
// first fenced code block, the first balanced {…}/[…] span (string-aware). Empty and repeated
// candidates are dropped.
func Candidates(reply string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		for _, c := range out {
			if c == s {
				return
			}
		}
		out = append(out, s)
	}
	add(reply)
	if s, ok := fenced(reply); ok {
		add(s)
	}
	if s, ok := balanced(reply); ok {
		add(s)
	}
	return out
}

// fenced returns the content of the first fenced code block: a run of three or more backticks (or
// tildes), an optional info string up to the end of the line, then everything up to the next run
// of the same fence. An unclosed fence runs to the end of the reply.
func fenced(s string) (string, bool) {
	i := strings.Index(s, "```")
	if j := strings.Index(s, "~~~"); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i < 0 {
		return "", false
	}
	c := s[i]
	n := i
	for n < len(s) && s[n] == c {
		n++
	}
	fence := s[i:n]
	rest := s[n:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		// A one-line block: ```{"a":1}```.
		if end := strings.Index(rest, fence); end >= 0 {
			return rest[:end], true
		}
		return "", false
	}
	body := rest[nl+1:]
	if end := strings.Index(body, fence); end >= 0 {
		body = body[:end]
	}
	return body, true
}

// balanced returns the first balanced {…} or […] span, starting at the first opening bracket: string
// literals (with their escapes) are skipped, so brackets inside them do not count. A closing bracket
// of the wrong kind ends the search.
func balanced(s string) (string, bool) {
	start := strings.IndexAny(s, "{[")
	if start < 0 {
		return "", false
	}
	var stack []byte
	inString, escaped := false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return "", false
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return s[start : i+1], true
			}
		}
	}
	return "", false
}

var errTrailing = errors.New("unexpected data after the JSON value")

// Decode parses exactly one JSON value into the nika value model (LANGUAGE.md §4.3): an integer
// within int64 becomes int, any other number float64.
func Decode(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errTrailing
	}
	return normalize(v)
}

func normalize(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := x.Int64(); err == nil {
				return int(i), nil
			}
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, errors.New("the number " + s + " is out of range")
		}
		return f, nil
	case []any:
		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	case map[string]any:
		for k, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	}
	return v, nil
}

// Excerpt returns at most n bytes of s, cut at a rune boundary.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
