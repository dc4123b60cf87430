package spec

import (
	"encoding/json"
	"fmt"
)

// Error is the one runtime error type of nika (D8): the error object of
// LANGUAGE.md §8.1. Every failure that crosses a package boundary is an
// *Error carrying its NIKA code; causes are wrapped, so errors.Is and
// errors.As see through it.
type Error struct {
	Code      string         // a registered code; "" only for internal_error
	Category  string         // fixed per code (§8.2)
	Message   string         // one line
	Transient bool           // whether repeating the same attempt could succeed
	Details   map[string]any // code-specific data; never nil once marshalled
	TaskID    string
	Attempt   int // 1-based; 0 when not yet known
	cause     error
}

// NewError builds an *Error whose category and default transience come from
// the registry. Codes whose transience depends on the case (INFER-001,
// FETCH-001, …) start non-transient: set Transient explicitly.
//
// Pass a spec.Code… constant. An unregistered code does not panic (a code can
// also arrive at run time, from a script or a wire): it keeps the code and
// degrades to a non-transient internal_error. The module's own code never
// takes that path: TestNoCodeLiterals fails on a code literal outside the
// registry, on an unregistered code in any literal and on an error built
// with a literal that is not a code, and TestOneConstantPerRow ties every
// constant to a registry row.
func NewError(code, message string, details map[string]any) *Error {
	e := &Error{Code: code, Message: oneLine(message), Details: details}
	if c, ok := LookupCode(code); ok {
		e.Category = c.Category
		e.Transient = c.Transient == "yes"
	} else {
		e.Category = "internal_error"
	}
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	return e
}

// Errorf builds an *Error with a formatted message and no details.
func Errorf(code, format string, args ...any) *Error {
	return NewError(code, fmt.Sprintf(format, args...), nil)
}

// Wrap attaches the underlying cause, for errors.Is / errors.As.
func (e *Error) Wrap(cause error) *Error {
	e.cause = cause
	return e
}

// Error renders "CODE: message".
func (e *Error) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the wrapped cause.
func (e *Error) Unwrap() error { return e.cause }

// MarshalJSON writes the §8.1 object: code is null only for internal errors,
// details is {} when empty.
func (e *Error) MarshalJSON() ([]byte, error) {
	type wire struct {
		Code      *string        `json:"code"`
		Category  string         `json:"category"`
		Message   string         `json:"message"`
		Transient bool           `json:"transient"`
		Details   map[string]any `json:"details"`
		TaskID    string         `json:"task_id"`
		Attempt   int            `json:"attempt"`
	}
	w := wire{Category: e.Category, Message: e.Message, Transient: e.Transient, Details: e.Details, TaskID: e.TaskID, Attempt: e.Attempt}
	if e.Code != "" {
		w.Code = &e.Code
	}
	if w.Details == nil {
		w.Details = map[string]any{}
	}
	return json.Marshal(w)
}
