package temporal

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Jobs' heartbeat goroutines end with their jobs; the test environment's own are its business.
// Recording histories (-update) dials a real server, whose client keeps goroutines of its own.
func TestMain(m *testing.M) {
	flag.Parse()
	if *update {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
