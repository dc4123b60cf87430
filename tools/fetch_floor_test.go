package tools

// The network floor (tools/netfloor) as nika:fetch meets it: its refusals pass through with their
// codes, redirects are re-checked, and the dialler never resolves again.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nikahq/nika/spec"
)

// codeSSRF is the floor's refusal (tools/netfloor).
const codeSSRF = "NIKA-SEC-005"

// fakeResolver maps names to addresses without DNS, and counts its lookups.
type fakeResolver struct {
	mu    sync.Mutex
	names map[string][]string
	// then, when set, answers every lookup after the first of a name (DNS rebinding).
	then  map[string][]string
	calls map[string]int
}

func newResolver(names map[string][]string) *fakeResolver {
	return &fakeResolver{names: names, then: map[string][]string{}, calls: map[string]int{}}
}

func (r *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[host]++
	addrs, ok := r.names[host]
	if later, ok2 := r.then[host]; ok2 && r.calls[host] > 1 {
		addrs, ok = later, true
	}
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(addrs))
	for i, a := range addrs {
		out[i] = net.IPAddr{IP: net.ParseIP(a)}
	}
	return out, nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// netPermits is a permits block admitting every nika: tool and the given net.http entries.
func netPermits(entries ...string) *spec.Permits {
	return &spec.Permits{NetHTTP: entries, Tools: []string{"nika:*"}, ToolsSet: true}
}

// hitServer is a test server on 127.0.0.1 that counts its requests and answers "ok" with the
// Host it saw.
type hitServer struct {
	*httptest.Server
	hits atomic.Int64
	port string
}

func newHitServer(t *testing.T, h http.HandlerFunc) *hitServer {
	t.Helper()
	s := &hitServer{}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "ok %s", r.Host)
		}
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	s.port = u.Port()
	return s
}

// at is the server's URL with another host name.
func (s *hitServer) at(host, path string) string {
	return "http://" + net.JoinHostPort(host, s.port) + path
}

func fetchWith(t *testing.T, r Resolver, permits *spec.Permits, args map[string]any) (any, error) {
	t.Helper()
	b := NewBuiltins()
	b.Resolver = r
	return b.Execute(context.Background(), Call{Name: "nika:fetch", Args: args, Permits: permits})
}

func spErr(t *testing.T, err error) *spec.Error {
	t.Helper()
	var se *spec.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *spec.Error", err, err)
	}
	return se
}

func TestFloorLoopbackAndPermits(t *testing.T) {
	srv := newHitServer(t, nil)
	res := newResolver(map[string][]string{
		"svc.internal.test":  {"127.0.0.1"},
		"mixed.test":         {"93.184.216.34", "127.0.0.1"},
		"mapped.test":        {"::ffff:127.0.0.1"},
		"xn--bcher-kva.test": {"127.0.0.1"},
	})
	cases := []struct {
		name    string
		url     string
		permits *spec.Permits
		code    string // "" = fetched
		rng     string // details.range of a SEC-005
	}{
		{"loopback literal refused by default", srv.at("127.0.0.1", "/"), nil, codeSSRF, "loopback"},
		{"name resolving to loopback refused", srv.at("svc.internal.test", "/"), nil, codeSSRF, "loopback"},
		{"one private address among public ones refused", srv.at("mixed.test", "/"), nil, codeSSRF, "loopback"},
		{"IPv4-mapped literal refused", srv.at("::ffff:127.0.0.1", "/"), nil, codeSSRF, "loopback"},
		{"name resolving to IPv4-mapped loopback refused", srv.at("mapped.test", "/"), nil, codeSSRF, "loopback"},
		{"exact IP literal permit", srv.at("127.0.0.1", "/"), netPermits("127.0.0.1"), "", ""},
		{"exact ip:port permit", srv.at("127.0.0.1", "/"), netPermits("127.0.0.1:" + srv.port), "", ""},
		{"CIDR permit", srv.at("127.0.0.1", "/"), netPermits("127.0.0.0/8"), "", ""},
		{"exact hostname permit", srv.at("svc.internal.test", "/"), netPermits("svc.internal.test"), "", ""},
		{"hostname permit is case-insensitive", srv.at("SVC.Internal.TEST", "/"), netPermits("svc.INTERNAL.test"), "", ""},
		{"host:port permit", srv.at("svc.internal.test", "/"), netPermits("svc.internal.test:" + srv.port), "", ""},
		{"IP literal permit allows a name resolving to it", srv.at("svc.internal.test", "/"), netPermits("*.internal.test", "127.0.0.1"), "", ""},
		{"CIDR permit allows a name resolving into it", srv.at("svc.internal.test", "/"), netPermits("*.internal.test", "127.0.0.0/30"), "", ""},
		{"IP permit allows the mapped form", srv.at("::ffff:127.0.0.1", "/"), netPermits("::ffff:127.0.0.1", "127.0.0.1"), "", ""},
		{"IDN host checked and dialled as punycode", srv.at("bücher.test", "/"), netPermits("xn--bcher-kva.test"), "", ""},
		{"trailing-dot name", srv.at("svc.internal.test.", "/"), netPermits("svc.internal.test"), "", ""},
		{"wildcard permit does not lift the floor", srv.at("svc.internal.test", "/"), netPermits("*.internal.test"), codeSSRF, "loopback"},
		{"CIDR not containing the address", srv.at("svc.internal.test", "/"), netPermits("*.internal.test", "10.0.0.0/8", "127.0.0.2"), codeSSRF, "loopback"},
		{"mixed name needs its own exact permit", srv.at("mixed.test", "/"), netPermits("*.test"), codeSSRF, "loopback"},
		{"host outside permits.net.http", srv.at("127.0.0.1", "/"), netPermits("svc.internal.test"), codePermits, ""},
		{"wrong port in host:port", srv.at("127.0.0.1", "/"), netPermits("127.0.0.1:1"), codePermits, ""},
		{"wildcard does not cover the apex", srv.at("internal.test", "/"), netPermits("*.internal.test"), codePermits, ""},
		{"empty permits deny", srv.at("127.0.0.1", "/"), netPermits(), codePermits, ""},
		{"permits.tools gate first", srv.at("127.0.0.1", "/"), &spec.Permits{NetHTTP: []string{"127.0.0.1"}}, codePermits, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := srv.hits.Load()
			out, err := fetchWith(t, res, c.permits, map[string]any{"url": c.url})
			if c.code == "" {
				if err != nil {
					t.Fatalf("fetch %s: %v", c.url, err)
				}
				if s, _ := out.(string); !strings.HasPrefix(s, "ok ") {
					t.Fatalf("output %q, want the server's answer", out)
				}
				if srv.hits.Load() != before+1 {
					t.Fatalf("server hits %d → %d, want one request", before, srv.hits.Load())
				}
				return
			}
			se := spErr(t, err)
			if se.Code != c.code {
				t.Fatalf("code %s, want %s (%v)", se.Code, c.code, err)
			}
			if se.Transient || se.Category != "security_error" {
				t.Errorf("category %s transient %v, want security_error, not transient", se.Category, se.Transient)
			}
			if c.rng != "" && se.Details["range"] != c.rng {
				t.Errorf("details.range = %v, want %s (details %v)", se.Details["range"], c.rng, se.Details)
			}
			if c.permits != nil && !c.permits.ToolsSet {
				if se.Details["gate"] != "tools" {
					t.Errorf("details %v, want the tools gate", se.Details)
				}
			} else if !strings.Contains(se.Message, "permits.net.http") {
				t.Errorf("message %q does not say how to fix it", se.Message)
			}
			if srv.hits.Load() != before {
				t.Fatalf("the refused request reached the server")
			}
		})
	}
}

// A redirect is re-checked at its hop: the permits gate and the floor both apply.
func TestRedirectHopRechecked(t *testing.T) {
	target := newHitServer(t, nil)
	res := newResolver(map[string][]string{
		"allowed.test":    {"127.0.0.1"},
		"evil.other.test": {"127.0.0.1"},
		"meta.other.test": {"169.254.169.254"},
	})
	var to atomic.Value
	origin := newHitServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to.Load().(string), http.StatusFound)
	})
	permits := netPermits("allowed.test", "*.other.test", "127.0.0.1:"+origin.port)
	cases := []struct {
		name, to, code string
	}{
		{"to a wildcard-permitted name resolving to loopback", target.at("evil.other.test", "/"), codeSSRF},
		{"to the metadata address", "http://meta.other.test/latest/meta-data/", codeSSRF},
		{"to a loopback literal outside permits", target.at("127.0.0.1", "/"), codePermits},
		{"to a host outside permits", "http://elsewhere.example/", codePermits},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			to.Store(c.to)
			before := origin.hits.Load()
			_, err := fetchWith(t, res, permits, map[string]any{"url": origin.at("allowed.test", "/start")})
			se := spErr(t, err)
			if se.Code != c.code || se.Transient {
				t.Fatalf("got %v (transient %v), want %s", err, se.Transient, c.code)
			}
			if origin.hits.Load() != before+1 {
				t.Fatalf("the first hop was not requested")
			}
			if target.hits.Load() != 0 {
				t.Fatalf("the refused hop reached its server")
			}
		})
	}
	// The same chain to an exactly permitted hop is followed, with the hop's Host.
	to.Store(target.at("evil.other.test", "/"))
	out, err := fetchWith(t, res, netPermits("allowed.test", "evil.other.test"), map[string]any{"url": origin.at("allowed.test", "/")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ok evil.other.test:" + target.port; out != want {
		t.Fatalf("output %q, want %q", out, want)
	}
}

func TestRedirectLimit(t *testing.T) {
	var srv *hitServer
	srv = newHitServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/r/%d", &n)
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusMovedPermanently)
			return
		}
		io.WriteString(w, "landed")
	})
	p := netPermits("127.0.0.1")
	out, err := fetchWith(t, nil, p, map[string]any{"url": srv.URL + "/r/10", "mode": "text"})
	if err != nil || out != "landed" {
		t.Fatalf("10 redirects: %v, %v; want landed", out, err)
	}
	before := srv.hits.Load()
	_, err = fetchWith(t, nil, p, map[string]any{"url": srv.URL + "/r/11", "mode": "text"})
	se := spErr(t, err)
	if se.Code != codeFetchTransport || !se.Transient || !strings.Contains(se.Message, "redirects") {
		t.Fatalf("11 redirects: %v (transient %v), want a transient FETCH-002 about redirects", err, se.Transient)
	}
	if got := srv.hits.Load() - before; got != 11 {
		t.Fatalf("%d requests, want 11 (the 12th is never sent)", got)
	}
}

// The dialer never resolves again: it dials the address the floor checked (DNS rebinding).
func TestDialUsesCheckedAddress(t *testing.T) {
	srv := newHitServer(t, nil)
	res := newResolver(map[string][]string{"rebind.test": {"127.0.0.1"}})
	res.then["rebind.test"] = []string{"192.0.2.1"} // TEST-NET-1: unroutable
	out, err := fetchWith(t, res, netPermits("rebind.test"), map[string]any{"url": srv.at("rebind.test", "/x"), "timeout": "10s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ok rebind.test:" + srv.port; out != want {
		t.Fatalf("output %q, want %q (the Host must stay the name)", out, want)
	}
	if n := res.count("rebind.test"); n != 1 {
		t.Fatalf("%d lookups, want exactly 1", n)
	}
}

func TestFloorResolveFailures(t *testing.T) {
	res := newResolver(map[string][]string{"empty.test": {}})
	for _, host := range []string{"missing.test", "empty.test"} {
		_, err := fetchWith(t, res, nil, map[string]any{"url": "http://" + host + "/"})
		se := spErr(t, err)
		if se.Code != codeFetchTransport || !se.Transient || !strings.Contains(se.Message, host) {
			t.Errorf("%s: %v (transient %v), want a transient FETCH-002 naming the host", host, err, se.Transient)
		}
	}
}

// A CIDR written in the IPv4-mapped form admits the IPv4 host at the gate; it must then also
// allow that refused address at the floor, as it is the same address (§7.5: a CIDR containing
// the address, IPv4-mapped forms included).
func TestMappedCIDRPermitAllowsIPv4Address(t *testing.T) {
	srv := newHitServer(t, nil)
	for _, entry := range []string{"::ffff:127.0.0.0/104", "::ffff:127.0.0.1/128"} {
		if _, err := fetchWith(t, nil, netPermits(entry), map[string]any{"url": srv.at("127.0.0.1", "/")}); err != nil {
			t.Errorf("permits.net.http [%s]: %v, want the fetch to pass", entry, err)
		}
	}
}

// A wide IPv6 CIDR is not an IPv4-mapped one: ::/0 does not allow 127.0.0.1 at the floor.
func TestWideIPv6CIDRDoesNotAllowIPv4Loopback(t *testing.T) {
	srv := newHitServer(t, nil)
	_, err := fetchWith(t, nil, netPermits("::/0"), map[string]any{"url": srv.at("127.0.0.1", "/")})
	if se := spErr(t, err); se.Code != codeSSRF && se.Code != codePermits {
		t.Fatalf("%v, want a refusal", err)
	}
	if srv.hits.Load() != 0 {
		t.Fatal("the request reached the server")
	}
}

// A permits.net.http entry may spell an internationalized host in Unicode, as the URL does
// (`nika check` compares them as written): the entry names the same host as its punycode form.
func TestUnicodeNetEntryMatchesIDNHost(t *testing.T) {
	srv := newHitServer(t, nil)
	res := newResolver(map[string][]string{"xn--bcher-kva.test": {"127.0.0.1"}, "a.xn--bcher-kva.test": {"127.0.0.1"}})
	for _, c := range []struct {
		url     string
		entries []string
	}{
		{srv.at("bücher.test", "/"), []string{"bücher.test"}},
		{srv.at("BÜCHER.test", "/"), []string{"Bücher.Test:" + srv.port}},
		{srv.at("a.bücher.test", "/"), []string{"*.bücher.test", "127.0.0.1"}},
	} {
		if _, err := fetchWith(t, res, netPermits(c.entries...), map[string]any{"url": c.url}); err != nil {
			t.Errorf("fetch %s under %q: %v", c.url, c.entries, err)
		}
	}
}
