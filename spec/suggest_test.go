package spec

import "testing"

func TestSuggest(t *testing.T) {
	keys := []string{"depends_on", "retry", "when", "with", "timeout", "output", "on_error"}
	for _, tc := range []struct{ in, want string }{
		{"dependsOn", "depends_on"},
		{"retrys", "retry"},
		{"wen", "when"}, // distance 1 to both when (ins) and with? wen->when 1, wen->with 2
		{"wit", "with"},
		{"zzzzzz", ""},
		{"TIMEOUT", "timeout"},
		{"outptu", "output"},
	} {
		if got := suggest(tc.in, keys); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// ties are broken alphabetically
	if got := suggest("ab", []string{"ac", "aa"}); got != "aa" {
		t.Errorf("tie: got %q, want aa", got)
	}
}
