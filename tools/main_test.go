package tools

import (
	"testing"

	"go.uber.org/goleak"
)

// The HTTP servers and clients of the network builtins, the prompts and the waits start
// goroutines; none may survive.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
