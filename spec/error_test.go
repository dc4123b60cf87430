package spec

import (
	"encoding/json"
	"errors"
	"io"
	"testing"
)

func TestErrorFromRegistry(t *testing.T) {
	e := NewError("NIKA-BUILTIN-FETCH-002", "dial tcp: refused\nsecond line", nil)
	if e.Category != "network_error" || !e.Transient {
		t.Errorf("category/transient = %s/%v, want network_error/true", e.Category, e.Transient)
	}
	if e.Message != "dial tcp: refused" {
		t.Errorf("message = %q, want one line", e.Message)
	}
	if e.Error() != "NIKA-BUILTIN-FETCH-002: dial tcp: refused" {
		t.Errorf("Error() = %q", e.Error())
	}
	if x := NewError("NIKA-EXEC-001", "exit 3", nil); x.Transient || x.Category != "process_error" {
		t.Errorf("EXEC-001 = %+v", x)
	}
	if x := NewError("NIKA-NOPE-999", "?", nil); x.Category != "internal_error" {
		t.Errorf("unknown code category = %q", x.Category)
	}
}

func TestErrorWrapAndJSON(t *testing.T) {
	e := Errorf("NIKA-TIMEOUT-001", "task %q timed out", "fetch").Wrap(io.ErrUnexpectedEOF)
	e.TaskID, e.Attempt = "fetch", 2
	if !errors.Is(e, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not see the cause")
	}
	var target *Error
	if !errors.As(error(e), &target) || target.Code != "NIKA-TIMEOUT-001" {
		t.Error("errors.As does not find the *Error")
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":"NIKA-TIMEOUT-001","category":"timeout_error","message":"task \"fetch\" timed out","transient":false,"details":{},"task_id":"fetch","attempt":2}`
	if string(b) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", b, want)
	}
	internal := &Error{Category: "internal_error", Message: "bug"}
	b, _ = json.Marshal(internal)
	if string(b) != `{"code":null,"category":"internal_error","message":"bug","transient":false,"details":{},"task_id":"","attempt":0}` {
		t.Errorf("internal JSON = %s", b)
	}
}
