package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
)

// nika:convert (LANGUAGE.md §7.4) and the text parsers nika:validate shares.
//
// Parsing: json by encoding/json (numbers per §4.3: an integer within int64 is int, any other
// number float64; one value, nothing after it); yaml by the YAML 1.2 core profile of workflow
// files (spec.Parse, D12: one document, string keys, no duplicates, no merge keys), aliases
// expanded up to 1,000,000 nodes or 64 MiB; toml by go-toml/v2, date-times becoming their TOML
// text; csv by RFC 4180 (encoding/csv), a leading BOM dropped, every row the width of the first.
//
// Writing: json is canonical JSON; yaml is block style with 2-space indentation and sorted
// keys, strings quoted only when they would not read back as the same string (this package's
// own emitter, so the output is stable); toml has sorted keys (go-toml/v2); csv is RFC 4180 with
// \n line ends. Bytes are written as their standard base64 text everywhere.

const (
	codeConvertParse = spec.CodeBuiltinConvertParse
	codeConvertRepr  = spec.CodeBuiltinConvertRepr
)

func runConvert(_ context.Context, in *invocation) (any, error) {
	from, err := in.str("from", "")
	if err != nil {
		return nil, err
	}
	to, err := in.str("to", "")
	if err != nil {
		return nil, err
	}
	hasHeader, err := in.boolean("has_header", true)
	if err != nil {
		return nil, err
	}
	input := in.args["input"]
	text, isText, terr := textOf(input)
	var v any
	switch {
	case from != "" && !isText:
		return nil, in.typeError("input", "a string when `from` is given", input)
	case from != "" && terr != nil:
		return nil, spec.NewError(codeConvertParse, "`input` is not valid "+from+": "+terr.Error(), map[string]any{"from": from})
	case from != "":
		if v, err = parseFormat(from, text, hasHeader); err != nil {
			return nil, spec.NewError(codeConvertParse, "`input` is not valid "+from+": "+err.Error(), map[string]any{"from": from}).Wrap(err)
		}
	default:
		if _, isStr := input.(string); isStr {
			return nil, argsError(in.call.Name, []violation{{Path: "", Message: "a string `input` needs `from` (json, yaml, toml or csv)"}})
		}
		v = input
	}
	out, err := render(to, v, hasHeader)
	if err != nil {
		return nil, spec.NewError(codeConvertRepr, "the value cannot be written as "+to+": "+err.Error(), map[string]any{"to": to}).Wrap(err)
	}
	return out, nil
}

// parseText parses the text of nika:validate's data.
func parseText(format, text string) (any, error) { return parseFormat(format, text, true) }

func parseFormat(format, text string, hasHeader bool) (any, error) {
	switch format {
	case "json":
		return parseJSON(text)
	case "yaml":
		return parseYAML(text)
	case "toml":
		return parseTOML(text)
	case "csv":
		return parseCSV(text, hasHeader)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

func render(format string, v any, hasHeader bool) (string, error) {
	switch format {
	case "json":
		b, err := canon.Marshal(v)
		if err != nil {
			return "", errors.New(strings.TrimPrefix(err.Error(), "canon: "))
		}
		return string(b), nil
	case "yaml":
		return renderYAML(v), nil
	case "toml":
		return renderTOML(v)
	case "csv":
		return renderCSV(v, hasHeader)
	}
	return "", fmt.Errorf("unknown format %q", format)
}

func utf8Valid(b []byte) bool { return utf8.Valid(b) }

// ---- json ----

func parseJSON(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no JSON value")
		}
		return nil, jsonError(text, dec, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("extra data after the JSON value at offset %d", dec.InputOffset())
	}
	return normalize(v, 0)
}

func jsonError(text string, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(text, int(se.Offset))
		return fmt.Errorf("%d:%d: %s", line, col, se.Error())
	}
	return err
}

func lineCol(text string, off int) (line, col int) {
	off = min(max(off, 0), len(text))
	before := text[:off]
	line = strings.Count(before, "\n") + 1
	col = off - strings.LastIndexByte(before, '\n')
	return line, col
}

// jsonValue converts a value holding bytes to plain JSON values (bytes become base64 text).
func jsonValue(v any) (any, error) {
	b, err := canon.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseJSON(string(b))
}

// ---- toml ----

func parseTOML(text string) (any, error) {
	var m map[string]any
	if err := toml.Unmarshal([]byte(text), &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%d:%d: %s", row, col, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return fromTOML(m)
}

// fromTOML converts go-toml's values to the nika value model; date-times become their text.
func fromTOML(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := fromTOML(e)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := fromTOML(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case interface{ MarshalText() ([]byte, error) }:
		b, err := x.MarshalText()
		if err != nil {
			return nil, err
		}
		return string(b), nil
	}
	return normalize(v, 0)
}

func renderTOML(v any) (string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("a TOML document is a table, and the value is %s", kindOf(v))
	}
	t, err := toTOML(m, "")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	if err := enc.Encode(t); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// toTOML refuses null (TOML has none) and turns bytes into base64 text.
func toTOML(v any, at string) (any, error) {
	switch x := v.(type) {
	case nil:
		if at == "" {
			at = "the root"
		}
		return nil, fmt.Errorf("null at %s: TOML has no null", at)
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := toTOML(e, at+"/"+escapePointer(k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := toTOML(e, at+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return v, nil
}

// ---- csv ----

func parseCSV(text string, hasHeader bool) (any, error) {
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(text, "\uFEFF")))
	records, err := r.ReadAll()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%d:%d: %s", pe.Line, pe.Column, pe.Err.Error())
		}
		return nil, err
	}
	out := make([]any, 0, len(records))
	if !hasHeader {
		for _, rec := range records {
			row := make([]any, len(rec))
			for i, c := range rec {
				row[i] = c
			}
			out = append(out, row)
		}
		return out, nil
	}
	if len(records) == 0 {
		return out, nil
	}
	header := records[0]
	seen := make(map[string]bool, len(header))
	for _, h := range header {
		if seen[h] {
			return nil, fmt.Errorf("the header names the column %q twice", h)
		}
		seen[h] = true
	}
	for _, rec := range records[1:] {
		row := make(map[string]any, len(header))
		for i, h := range header {
			row[h] = rec[i]
		}
		out = append(out, row)
	}
	return out, nil
}

// renderCSV writes a list of flat objects (header: the sorted union of their keys, written when
// hasHeader; a missing key is an empty cell) or a list of lists. Cells: strings as they are, null
// as empty, booleans and numbers as their JSON text, bytes as base64.
func renderCSV(v any, hasHeader bool) (string, error) {
	rows, ok := v.([]any)
	if !ok {
		return "", fmt.Errorf("CSV is written from a list of objects or a list of lists, and the value is %s", kindOf(v))
	}
	var records [][]string
	objects, lists := 0, 0
	for _, r := range rows {
		switch r.(type) {
		case map[string]any:
			objects++
		case []any:
			lists++
		default:
			return "", fmt.Errorf("CSV rows are objects or lists, and a row is %s", kindOf(r))
		}
	}
	switch {
	case objects > 0 && lists > 0:
		return "", errors.New("CSV rows are all objects or all lists, not a mix")
	case objects > 0:
		keys := map[string]bool{}
		for _, r := range rows {
			for k := range r.(map[string]any) {
				keys[k] = true
			}
		}
		header := sortedKeys(keys)
		if hasHeader {
			records = append(records, header)
		}
		for i, r := range rows {
			m := r.(map[string]any)
			rec := make([]string, len(header))
			for j, k := range header {
				c, err := csvCell(m[k])
				if err != nil {
					return "", fmt.Errorf("at /%d/%s: %w", i, escapePointer(k), err)
				}
				rec[j] = c
			}
			records = append(records, rec)
		}
	default:
		for i, r := range rows {
			l := r.([]any)
			rec := make([]string, len(l))
			for j, e := range l {
				c, err := csvCell(e)
				if err != nil {
					return "", fmt.Errorf("at /%d/%d: %w", i, j, err)
				}
				rec[j] = c
			}
			records = append(records, rec)
		}
	}
	var b strings.Builder
	for _, rec := range records {
		if len(rec) == 1 && rec[0] == "" {
			b.WriteString("\"\"\n") // an empty line would read back as no row at all
			continue
		}
		w := csv.NewWriter(&b)
		if err := w.Write(rec); err != nil {
			return "", err
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func csvCell(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case map[string]any, []any:
		return "", fmt.Errorf("a CSV cell cannot hold %s", kindOf(v))
	}
	b, err := canon.Marshal(v)
	if err != nil {
		return "", errors.New(strings.TrimPrefix(err.Error(), "canon: "))
	}
	return string(b), nil
}
