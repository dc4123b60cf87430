package core

import (
	"strings"
	"testing"
)

// §3.1 step 3 / §5.2 b: the unclean names of §13.2.
func TestUncleanNamesAreRejected(t *testing.T) {
	long := "nika:" + strings.Repeat("x", 252)
	for _, n := range []string{"", "nika:re\x00ad", "nika:read\n", "nika:\u0085x", " nika:read", "nika:read ", "\tnika:read", long} {
		if Clean(n) {
			t.Errorf("%q (%d bytes) is clean", n, len(n))
		}
	}
	for _, n := range []string{"nika:read", "mcp:fs/read_text_file", "nika:" + strings.Repeat("x", 251), "a b"} {
		if !Clean(n) {
			t.Errorf("%q is unclean", n)
		}
	}
}
