package temporal

import (
	"testing"

	"go.uber.org/goleak"
)

// Jobs' heartbeat goroutines end with their jobs; the test environment's own are its business.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
