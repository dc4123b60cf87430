package tools

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/spec"
)

// The HTTP servers and clients of the network builtins start goroutines; none may survive.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

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

func TestRefusedRanges(t *testing.T) {
	refused := []struct {
		addr, class string
	}{
		{"127.0.0.1", "loopback"}, {"127.255.255.254", "loopback"}, {"::1", "loopback"},
		{"10.0.0.1", "private"}, {"10.255.255.255", "private"},
		{"172.16.0.1", "private"}, {"172.31.255.254", "private"},
		{"192.168.0.1", "private"}, {"192.168.255.255", "private"},
		{"100.64.0.1", "private"}, {"100.127.255.254", "private"},
		{"fc00::1", "private"}, {"fdff:ffff::1", "private"},
		{"169.254.0.1", "link-local"}, {"169.254.169.254", "link-local"}, {"fe80::1", "link-local"}, {"febf::1", "link-local"},
		{"0.0.0.0", "unspecified"}, {"0.255.255.255", "unspecified"}, {"::", "unspecified"},
	}
	allowed := []string{
		"8.8.8.8", "93.184.216.34", "11.0.0.1", "172.15.255.255", "172.32.0.1", "192.167.255.255",
		"192.169.0.1", "100.63.255.255", "100.128.0.1", "169.253.255.255", "169.255.0.1", "1.0.0.0",
		"128.0.0.1", "2001:db8::1", "2606:4700::1111", "fe00::1", "fec0::1", "fbff::1", "::2",
		"::ffff:8.8.8.8",
	}
	names := map[string][]string{}
	for i, r := range refused {
		names[fmt.Sprintf("r%d.test", i)] = []string{r.addr}
		names[fmt.Sprintf("m%d.test", i)] = []string{"::ffff:" + r.addr}
	}
	res := newResolver(names)
	for i, r := range refused {
		a := netip.MustParseAddr(r.addr)
		if got := refusedClass(a); got != r.class {
			t.Errorf("refusedClass(%s) = %q, want %q", a, got, r.class)
		}
		if a.Is4() {
			m := netip.AddrFrom16(a.As16())
			if got := refusedClass(m); got != r.class {
				t.Errorf("refusedClass(%s) = %q, want %q", m, got, r.class)
			}
		}
		// Through the builtin, by name (the address never dialled: port 9 is discard).
		for _, host := range []string{fmt.Sprintf("r%d.test", i), fmt.Sprintf("m%d.test", i)} {
			if strings.HasPrefix(host, "m") && !a.Is4() {
				continue
			}
			_, err := fetchWith(t, res, nil, map[string]any{"url": "http://" + host + ":9/"})
			se := spErr(t, err)
			if se.Code != codeSSRF || se.Details["range"] != r.class || se.Details["address"] != a.String() {
				t.Errorf("fetch %s (→ %s): %v %v, want %s range %s address %s", host, r.addr, se.Code, se.Details, codeSSRF, r.class, a)
			}
		}
	}
	for _, s := range allowed {
		if got := refusedClass(netip.MustParseAddr(s)); got != "" {
			t.Errorf("refusedClass(%s) = %q, want not refused", s, got)
		}
	}
}

func TestNetAllowedGate(t *testing.T) {
	cases := []struct {
		entries    []string
		host, port string
		want       bool
	}{
		{[]string{"api.example.com"}, "api.example.com", "443", true},
		{[]string{"API.Example.COM"}, "api.example.com", "8080", true},
		{[]string{"api.example.com."}, "api.example.com", "80", true},
		{[]string{"api.example.com:8080"}, "api.example.com", "8080", true},
		{[]string{"api.example.com:8080"}, "api.example.com", "443", false},
		{[]string{"*.example.com"}, "a.b.example.com", "443", true},
		{[]string{"*.example.com"}, "example.com", "443", false},
		{[]string{"*.example.com"}, "badexample.com", "443", false},
		{[]string{"10.1.2.3"}, "10.1.2.3", "80", true},
		{[]string{"10.0.0.0/8"}, "10.1.2.3", "80", true},
		{[]string{"10.0.0.0/8"}, "ten.example", "80", false},
		{[]string{"::1"}, "::1", "80", true},
		{[]string{"[::1]:8080"}, "::1", "8080", true},
		{[]string{"[::1]"}, "::1", "80", true},
		{[]string{"fd00::/8"}, "fd00::5", "80", true},
		{[]string{"example.com"}, "www.example.com", "443", false},
		{nil, "example.com", "443", false},
	}
	for _, c := range cases {
		if got := netAllowed(c.entries, c.host, c.port); got != c.want {
			t.Errorf("netAllowed(%q, %s, %s) = %v, want %v", c.entries, c.host, c.port, got, c.want)
		}
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

// The second line (D36): the transport alone, without the redirect check, still cannot reach an
// unchecked host or address.
func TestDialerRefusesUnchecked(t *testing.T) {
	srv := newHitServer(t, nil)
	f := newFloor(newResolver(map[string][]string{"checked.test": {"127.0.0.1"}}), netPermits("checked.test"))
	u, _ := url.Parse(srv.at("checked.test", "/"))
	if err := f.check(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	client := f.client(maxRedirects)
	defer client.CloseIdleConnections()
	if tr := client.Transport.(*http.Transport); tr.Proxy != nil {
		t.Fatal("the transport has a proxy")
	}
	// A host the floor never checked, sent straight through the transport.
	req, _ := http.NewRequest(http.MethodGet, srv.at("127.0.0.1", "/"), nil)
	_, err := client.Transport.RoundTrip(req)
	if se := spErr(t, err); se.Code != codeSSRF {
		t.Fatalf("unchecked host: %v, want %s", err, codeSSRF)
	}
	// The Control hook refuses an address outside the checked set, whatever asked for it.
	if err := f.control("tcp4", "10.0.0.1:80", nil); err == nil || spErr(t, err).Code != codeSSRF {
		t.Fatalf("control(10.0.0.1): %v, want %s", err, codeSSRF)
	}
	if err := f.control("tcp4", "127.0.0.1:"+srv.port, nil); err != nil {
		t.Fatalf("control(checked address): %v", err)
	}
	if err := f.control("tcp6", "[::ffff:127.0.0.1]:"+srv.port, nil); err != nil {
		t.Fatalf("control(mapped checked address): %v", err)
	}
	// A dial through a net.Dialer with the hook, to a listening but unchecked address, never
	// connects (a plain dialer does).
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address on this machine: %v", err)
	}
	defer ln.Close()
	plain, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("sanity: plain dial of %s: %v", ln.Addr(), err)
	}
	plain.Close()
	d := &net.Dialer{Control: f.control}
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err == nil {
		c.Close()
		t.Fatal("dialled an unchecked address")
	}
	if se := spErr(t, err); se.Code != codeSSRF {
		t.Fatalf("hooked dial: %v, want %s", err, codeSSRF)
	}
	if srv.hits.Load() != 0 {
		t.Fatal("a refused request reached the server")
	}
}

// TLS keeps the name: SNI and certificate verification use the URL host, not the dialled IP.
func TestFloorTLSKeepsServerName(t *testing.T) {
	var sni atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni.Store(r.TLS.ServerName)
		io.WriteString(w, "secure")
	}))
	srv.StartTLS()
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	// httptest's certificate is valid for example.com (and the loopback IPs).
	f := newFloor(newResolver(map[string][]string{"example.com": {"127.0.0.1"}}), netPermits("example.com"))
	target, _ := url.Parse("https://example.com:" + u.Port() + "/")
	if err := f.check(context.Background(), target); err != nil {
		t.Fatal(err)
	}
	client := f.client(maxRedirects)
	defer client.CloseIdleConnections()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}
	resp, err := client.Get(target.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secure" || sni.Load() != "example.com" {
		t.Fatalf("body %q, SNI %v; want secure, example.com", body, sni.Load())
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

// An IPv6 CIDR admits IPv4 hosts only when written in the IPv4-mapped form, as `nika check`
// reads it: ::/0 (every IPv6 address) does not open permits.net.http to every IPv4 host.
func TestIPv6CIDRGateAndIPv4Hosts(t *testing.T) {
	cases := []struct {
		entry, host string
		want        bool
	}{
		{"::/0", "93.184.216.34", false},
		{"2000::/3", "93.184.216.34", false},
		{"::ffff:0:0/96", "93.184.216.34", true},
		{"::ffff:93.184.216.0/120", "93.184.216.34", true},
		{"::/0", "2606:2800:220:1::1", true},
	}
	for _, c := range cases {
		if got := netAllowed([]string{c.entry}, c.host, "80"); got != c.want {
			t.Errorf("netAllowed([%s], %s) = %v, want %v", c.entry, c.host, got, c.want)
		}
	}
	srv := newHitServer(t, nil)
	_, err := fetchWith(t, nil, netPermits("::/0"), map[string]any{"url": srv.at("127.0.0.1", "/")})
	if se := spErr(t, err); se.Code != codePermits || se.Details["gate"] != "net.http" {
		t.Fatalf("%v, want NIKA-SEC-004 at the net.http gate", err)
	}
}
