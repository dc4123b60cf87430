package server

import (
	"net/http"
	"strings"
	"testing"
)

// Without a token the server trusts loopback (D35), but a web page open in
// a browser on the same machine is not a local client: a cross-site form
// or no-cors fetch (a "simple" request a browser sends without asking)
// must not submit or cancel runs, and neither may a page that reached
// 127.0.0.1 through DNS rebinding (its Host header names the attacker's
// domain). Plain clients (curl, the Go client) send neither header.
func TestBrowsersCannotDriveALoopbackServer(t *testing.T) {
	_, c := start(t, Options{})
	send := func(method, path, body string, header map[string]string, host string) int {
		t.Helper()
		req, err := http.NewRequest(method, c.ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := c.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	crossSite := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
	oldBrowser := map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		host               string
		code               int
	}{
		{"cross-site simple POST", "POST", "/v1/runs", crossSite, "", http.StatusForbidden},
		{"cross-origin POST without Sec-Fetch-Site", "POST", "/v1/runs", oldBrowser, "", http.StatusForbidden},
		{"cross-site DELETE", "DELETE", "/v1/runs/r-x", crossSite, "", http.StatusForbidden},
		{"rebound POST", "POST", "/v1/runs", map[string]string{"Origin": "http://evil.example:8080", "Sec-Fetch-Site": "same-origin"}, "evil.example:8080", http.StatusForbidden},
		{"rebound GET", "GET", "/v1/runs/r-x", nil, "evil.example:8080", http.StatusForbidden},
		{"plain client", "POST", "/v1/runs", nil, "", http.StatusAccepted},
		{"plain client by name", "GET", "/v1/runs/r-x", nil, "localhost", http.StatusNotFound},
		{"health through any name", "GET", "/healthz", nil, "evil.example:8080", http.StatusOK},
	} {
		if code := send(tc.method, tc.path, body(helloYAML, nil), tc.header, tc.host); code != tc.code {
			t.Errorf("%s: %s %s = %d, want %d", tc.name, tc.method, tc.path, code, tc.code)
		}
	}
}
