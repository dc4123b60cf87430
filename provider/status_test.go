package provider

import "testing"

func TestStatusReason(t *testing.T) {
	for _, tc := range []struct {
		status int
		quota  bool
		want   string
	}{
		{429, false, ReasonRateLimited}, {429, true, ReasonQuotaExceeded}, {402, false, ReasonQuotaExceeded},
		{401, false, ReasonAuthFailed}, {403, false, ReasonAuthFailed}, {404, false, ReasonModelNotFound},
		{408, false, ReasonTimeout}, {504, false, ReasonTimeout}, {409, false, ReasonServerError},
		{500, false, ReasonServerError}, {529, false, ReasonServerError}, {400, false, ReasonBadRequest},
		{422, false, ReasonBadRequest}, {200, false, ReasonServerError},
	} {
		if got := StatusReason(tc.status, tc.quota); got != tc.want {
			t.Errorf("StatusReason(%d, %v) = %s, want %s", tc.status, tc.quota, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\n  b\tc ", 100, "a b c"},
		{"abcdef", 3, "abc…"},
		{"ééé", 3, "é…"}, // 3 bytes fall inside the second é: cut back to a rune boundary
		{"", 5, ""},
	} {
		if got := OneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
