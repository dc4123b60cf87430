package nearest

import "testing"

func TestName(t *testing.T) {
	keys := []string{"depends_on", "retry", "when", "with", "timeout", "output", "on_error"}
	for _, tc := range []struct{ in, want string }{
		{"dependsOn", "depends_on"},
		{"retrys", "retry"},
		{"wen", "when"},
		{"wit", "with"},
		{"zzzzzz", ""},
		{"TIMEOUT", "timeout"},
		{"outptu", "output"},
		{"retry", ""}, // an exact candidate needs no suggestion
	} {
		if got := Name(tc.in, keys); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Name("ab", []string{"ac", "aa"}); got != "aa" {
		t.Errorf("ties: got %q, want aa (alphabetical)", got)
	}
	if got := Name("é", []string{"e", "ê"}); got != "e" {
		t.Errorf("runes: got %q, want e", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"kitten", "sitting", 3}, {"abc", "abc", 0}, {"abc", "", 3}, {"ab", "ba", 2}} {
		if got := distance(tc.a, tc.b, 10); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := distance("abcdef", "uvwxyz", 2); got != 3 {
		t.Errorf("cut short: got %d, want 3 (max+1)", got)
	}
}
