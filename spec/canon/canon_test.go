package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(%#v): %v", v, err)
	}
	return string(b)
}

func TestMarshalTable(t *testing.T) {
	type tagged struct {
		B int    `json:"b"`
		A string `json:"a"`
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `null`},
		{"true", true, `true`},
		{"false", false, `false`},
		{"int", 42, `42`},
		{"neg int64", int64(-9223372036854775808), `-9223372036854775808`},
		{"int8", int8(-8), `-8`},
		{"int16", int16(16), `16`},
		{"int32", int32(32), `32`},
		{"uint", uint(7), `7`},
		{"uint8", uint8(255), `255`},
		{"uint16", uint16(65535), `65535`},
		{"uint32", uint32(1 << 31), `2147483648`},
		{"uint64 max", uint64(math.MaxUint64), `18446744073709551615`},
		{"uintptr", uintptr(3), `3`},
		{"float 1.0", 1.0, `1`},
		{"float -0", math.Copysign(0, -1), `-0`},
		{"float 0.1", 0.1, `0.1`},
		{"float 1e21", 1e21, `1e+21`},
		{"float 1e20", 1e20, `100000000000000000000`},
		{"float 1e-6", 1e-6, `0.000001`},
		{"float 1e-7", 1e-7, `1e-7`},
		{"float 123.456", 123.456, `123.456`},
		{"float32 0.1", float32(0.1), `0.1`},
		{"float32 1e21", float32(1e21), `1e+21`},
		{"string", "hi", `"hi"`},
		{"html not escaped", "<a href=\"x\">&</a>", `"<a href=\"x\">&</a>"`},
		{"backslash", `a\b`, `"a\\b"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"control chars", "\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"line separators raw", "a\u2028b\u2029c", "\"a\u2028b\u2029c\""},
		{"non-ascii", "héllo ✓ 😀", `"héllo ✓ 😀"`},
		{"invalid utf8", "a\xffb\xc3", "\"a\uFFFDb\uFFFD\""},
		{"bytes", []byte("hello"), `"aGVsbG8="`},
		{"nil bytes", []byte(nil), `""`},
		{"empty array", []any{}, `[]`},
		{"nil array", []any(nil), `[]`},
		{"empty object", map[string]any{}, `{}`},
		{"nil object", map[string]any(nil), `{}`},
		{"array", []any{1, "a", nil, true, 2.5}, `[1,"a",null,true,2.5]`},
		{"string slice", []string{"b", "a"}, `["b","a"]`},
		{"string map", map[string]string{"b": "1", "a": "2"}, `{"a":"2","b":"1"}`},
		{"key order at depth", map[string]any{
			"b": map[string]any{"z": 1, "a": []any{map[string]any{"y": 1, "x": 2}}},
			"a": 1,
			"B": 2,
			"é": 3,
			"":  4,
		}, `{"":4,"B":2,"a":1,"b":{"a":[{"x":2,"y":1}],"z":1},"é":3}`},
		{"json.Number verbatim", json.Number("1.50e+02"), `1.50e+02`},
		{"raw message", json.RawMessage(` { "b" : [1.0, 2] , "a" : "<" } `), `{"a":"<","b":[1.0,2]}`},
		{"raw duplicate key", json.RawMessage(`{"a":1,"a":2}`), `{"a":2}`},
		{"nil raw message", json.RawMessage(nil), `null`},
		{"fallback struct", tagged{B: 1, A: "<"}, `{"a":"<","b":1}`},
		{"fallback time", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), `"2024-01-02T03:04:05Z"`},
		{"fallback typed slice", []int{3, 1}, `[3,1]`},
		{"fallback nested", map[string]any{"t": tagged{B: 2}}, `{"t":{"a":"","b":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustMarshal(t, tt.in); got != tt.want {
				t.Errorf("Marshal(%#v)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	cyclicSlice := []any{nil}
	cyclicSlice[0] = cyclicSlice
	tests := []struct {
		name string
		in   any
	}{
		{"NaN", math.NaN()},
		{"+Inf", math.Inf(1)},
		{"-Inf", math.Inf(-1)},
		{"NaN nested", map[string]any{"a": []any{math.NaN()}}},
		{"float32 Inf", float32(math.Inf(1))},
		{"bad json.Number", json.Number("1.")},
		{"empty json.Number", json.Number("")},
		{"bad raw", json.RawMessage(`{"a":`)},
		{"raw trailing data", json.RawMessage(`1 2`)},
		{"unsupported type", make(chan int)},
		{"cyclic map", cyclic},
		{"cyclic slice", cyclicSlice},
		{"keys collide after repair", map[string]any{"\xff": 1, "\xfe": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := Marshal(tt.in); err == nil {
				t.Fatalf("Marshal: want error, got %s", b)
			}
		})
	}
	_, err := Marshal(math.NaN())
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("NaN error is %T, want *Error", err)
	}
}

func TestInvalidUTF8KeysSortByRepairedForm(t *testing.T) {
	got := mustMarshal(t, map[string]any{"\xff": 1, "\uFFFE": 2, "z": 3})
	want := "{\"z\":3,\"\uFFFD\":1,\"\uFFFE\":2}"
	if got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestAppend(t *testing.T) {
	dst := []byte("prefix:")
	out, err := Append(dst, map[string]any{"b": 1, "a": 2})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `prefix:{"a":2,"b":1}` {
		t.Errorf("got %s", out)
	}
}

// stdMarshal is encoding/json without HTML escaping and without the trailing newline.
func stdMarshal(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func randString(r *rand.Rand, exotic bool) string {
	const alphabet = "abcXYZ019 <>&\"\\/\b\f\n\r\t\x00\x1f\x7féü✓😀"
	runes := []rune(alphabet)
	n := r.IntN(8)
	var sb strings.Builder
	for range n {
		sb.WriteRune(runes[r.IntN(len(runes))])
		if exotic && r.IntN(10) == 0 {
			switch r.IntN(3) {
			case 0:
				sb.WriteString("\u2028")
			case 1:
				sb.WriteByte(0xff)
			default:
				sb.WriteString("\xe2\x82") // truncated sequence
			}
		}
	}
	return sb.String()
}

func randValue(r *rand.Rand, depth int, exotic bool) any {
	k := r.IntN(10)
	if depth > 3 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return int(r.Int64()) >> r.IntN(64)
	case 3:
		switch r.IntN(4) {
		case 0:
			return float64(r.IntN(1000))
		case 1:
			return r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		case 2:
			return math.Float64frombits(r.Uint64() &^ (0x7ff << 52)) // finite, often subnormal
		default:
			return r.Float64()
		}
	case 4:
		return randString(r, exotic)
	case 5:
		b := make([]byte, r.IntN(10))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	case 6:
		return uint64(r.Uint64())
	case 7, 8:
		m := map[string]any{}
		for range r.IntN(6) {
			m[randString(r, exotic)] = randValue(r, depth+1, exotic)
		}
		return m
	default:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = randValue(r, depth+1, exotic)
		}
		return a
	}
}

// For valid UTF-8 without U+2028/U+2029, the output must equal encoding/json's byte for byte.
func TestMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		v := randValue(r, 0, false)
		got := mustMarshal(t, v)
		want := stdMarshal(t, v)
		if got != string(want) {
			t.Fatalf("case %d: %#v\n got %s\nwant %s", i, v, got, want)
		}
	}
}

// For any value the output is valid JSON, valid UTF-8, compact, decodes to the same value as
// encoding/json's output, and is a fixed point of re-canonicalization.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		v := randValue(r, 0, true)
		got, err := Marshal(v)
		if err != nil {
			if strings.Contains(err.Error(), "equal after UTF-8 repair") {
				continue
			}
			t.Fatalf("case %d: %v", i, err)
		}
		if !json.Valid(got) || !utf8.Valid(got) {
			t.Fatalf("case %d: invalid output %q", i, got)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, got); err != nil || !bytes.Equal(compact.Bytes(), got) {
			t.Fatalf("case %d: not compact: %s", i, got)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(stdMarshal(t, v), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("case %d: decoded values differ\n ours %#v\n std  %#v", i, a, b)
		}
		again, err := Marshal(json.RawMessage(got))
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("case %d: not a fixed point: %s vs %s (%v)", i, got, again, err)
		}
	}
}

func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`null`, `{"b":1,"a":[1.0,"x\u2028"]}`, `"\ud800"`, `1e400`, `[{"":{}}]`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return // e.g. number out of float64 range
		}
		got, err := Marshal(v)
		if err != nil {
			if strings.Contains(err.Error(), "equal after UTF-8 repair") {
				return
			}
			t.Fatalf("Marshal(%q): %v", data, err)
		}
		if !json.Valid(got) || !utf8.Valid(got) {
			t.Fatalf("invalid output %q", got)
		}
		raw, err := Marshal(json.RawMessage(data))
		if err != nil {
			t.Fatalf("Marshal(RawMessage %q): %v", data, err)
		}
		var a, b any
		_ = json.Unmarshal(got, &a)
		_ = json.Unmarshal(raw, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("value and raw forms differ: %s vs %s", got, raw)
		}
	})
}

var benchValue = map[string]any{
	"id":      12345,
	"name":    "nika <workflow>",
	"score":   0.875,
	"tags":    []any{"a", "b", "c"},
	"enabled": true,
	"nested": map[string]any{
		"stdout":    "hello\nworld\n",
		"stderr":    "",
		"exit_code": 0,
	},
	"data": []byte("binary"),
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = Append(buf[:0], benchValue); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodingJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(benchValue); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFinite(t *testing.T) {
	in := map[string]any{"a": math.NaN(), "b": []any{1.5, math.Inf(1), "x"}, "c": map[string]any{"d": math.Inf(-1)}}
	b, err := Marshal(Finite(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"a":null,"b":[1.5,null,"x"],"c":{"d":null}}` {
		t.Errorf("got %s", b)
	}
	if _, err := Marshal(in); err == nil {
		t.Error("the input itself must still be refused: Finite copies")
	}
}
