package fields

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/nikahq/nika/spec"
)

func TestString(t *testing.T) {
	f := map[string]any{"s": "x", "i": 3, "f": 2.5, "b": false, "n": nil, "o": map[string]any{"b": 1, "a": "z"},
		"bytes": []byte("x"), "nan": math.NaN()}
	for _, tt := range []struct {
		name, want, code string
		present          bool
	}{
		{"s", "x", "", true}, {"i", "3", "", true}, {"f", "2.5", "", true}, {"b", "false", "", true},
		{"n", "null", "", true}, {"o", `{"a":"z","b":1}`, "", true}, {"absent", "", "", false},
		{"bytes", "", "NIKA-VAR-007", true}, {"nan", "", "NIKA-VAR-006", true},
	} {
		got, ok, err := String(f, tt.name)
		if got != tt.want || ok != tt.present || (err == nil) != (tt.code == "") || (err != nil && err.Code != tt.code) {
			t.Errorf("String(%s) = %q, %v, %v", tt.name, got, ok, err)
		}
		if err != nil && err.Details["field"] != tt.name {
			t.Errorf("String(%s): details %v", tt.name, err.Details)
		}
	}
}

func TestNumbers(t *testing.T) {
	f := map[string]any{"i": 2, "f": 0.5, "whole": 3.0, "s": "1", "inf": math.Inf(1), "n": nil}
	for _, tt := range []struct {
		name string
		want float64
		ok   bool
	}{{"i", 2, true}, {"f", 0.5, true}, {"whole", 3, true}, {"s", 0, false}, {"inf", 0, false}, {"n", 0, false}} {
		got, present, err := Number(f, tt.name)
		if !present || got != tt.want || (err == nil) != tt.ok {
			t.Errorf("Number(%s) = %v, %v, %v", tt.name, got, present, err)
		}
	}
	for _, tt := range []struct {
		name string
		want int
		ok   bool
	}{{"i", 2, true}, {"whole", 3, true}, {"f", 0, false}, {"s", 0, false}, {"n", 0, false}} {
		got, present, err := Integer(f, tt.name)
		if !present || got != tt.want || (err == nil) != tt.ok {
			t.Errorf("Integer(%s) = %v, %v, %v", tt.name, got, present, err)
		}
	}
	if _, present, err := Integer(f, "absent"); present || err != nil {
		t.Error("absent integer")
	}
}

func TestCancelled(t *testing.T) {
	cause := errors.New("deadline of task x")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	inner := errors.New("provider said cancelled")
	e := Cancelled(ctx, inner)
	if e.Code != spec.CodeCancel || e.Category != "cancelled" || !errors.Is(e, cause) || !errors.Is(e, context.Canceled) || !errors.Is(e, inner) {
		t.Errorf("Cancelled = %+v (%v)", e, errors.Unwrap(e))
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if e := Cancelled(ctx2, nil); !errors.Is(e, context.Canceled) || e.Message != "cancelled: context canceled" {
		t.Errorf("plain cancel = %q", e.Message)
	}
}
