package netfloor

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
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/nikahq/nika/spec"
)

// The test servers and the floor's clients start goroutines; none may survive.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// mapResolver maps names to addresses without DNS.
type mapResolver map[string][]string

func (r mapResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(addrs))
	for i, a := range addrs {
		out[i] = net.IPAddr{IP: net.ParseIP(a)}
	}
	return out, nil
}

// netPermits is a permits block with the given net.http entries.
func netPermits(entries ...string) *spec.Permits {
	return &spec.Permits{NetHTTP: entries, Tools: []string{"nika:*"}, ToolsSet: true}
}

// hitServer is a test server on 127.0.0.1 that counts its requests.
type hitServer struct {
	*httptest.Server
	hits atomic.Int64
	port string
}

func newHitServer(t *testing.T) *hitServer {
	t.Helper()
	s := &hitServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		io.WriteString(w, "ok")
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

func spErr(t *testing.T, err error) *spec.Error {
	t.Helper()
	var se *spec.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *spec.Error", err, err)
	}
	return se
}

// check runs a new floor's Check on raw.
func check(r Resolver, permits *spec.Permits, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	return New(r, permits).Check(context.Background(), u)
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
	res := mapResolver(names)
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
		// By name, resolved (nothing is dialled).
		for _, host := range []string{fmt.Sprintf("r%d.test", i), fmt.Sprintf("m%d.test", i)} {
			if strings.HasPrefix(host, "m") && !a.Is4() {
				continue
			}
			se := spErr(t, check(res, nil, "http://"+host+":9/"))
			if se.Code != codeSSRF || se.Details["range"] != r.class || se.Details["address"] != a.String() {
				t.Errorf("check %s (→ %s): %v %v, want %s range %s address %s", host, r.addr, se.Code, se.Details, codeSSRF, r.class, a)
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
	err := check(nil, netPermits("::/0"), "http://127.0.0.1:8080/")
	if se := spErr(t, err); se.Code != codePermits || se.Details["gate"] != "net.http" {
		t.Fatalf("%v, want NIKA-SEC-004 at the net.http gate", err)
	}
}

// The second line (D36): the transport alone, without the redirect check, still cannot reach an
// unchecked host or address.
func TestDialerRefusesUnchecked(t *testing.T) {
	srv := newHitServer(t)
	f := New(mapResolver{"checked.test": {"127.0.0.1"}}, netPermits("checked.test"))
	u, _ := url.Parse(srv.at("checked.test", "/"))
	if err := f.Check(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	client := f.Client(MaxRedirects)
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
	f := New(mapResolver{"example.com": {"127.0.0.1"}}, netPermits("example.com"))
	target, _ := url.Parse("https://example.com:" + u.Port() + "/")
	if err := f.Check(context.Background(), target); err != nil {
		t.Fatal(err)
	}
	client := f.Client(MaxRedirects)
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

// Without permits only the floor applies; a URL the floor cannot use is a transport error,
// worded by TransportMessage, never a refusal. (Every name goes through mapResolver: no test
// asks DNS.)
func TestCheckTransportErrors(t *testing.T) {
	for raw, want := range map[string]string{
		"ftp://example.com/x":  `ftp://example.com/x: scheme "ftp" is not supported; only http and https are`,
		"http:///path":         "http:///path has no host",
		"http://missing.test/": `cannot resolve host "missing.test": lookup missing.test: no such host`,
		"http://empty.test/":   `host "empty.test" has no address`,
		"http://\u0301a.test/": "host \"\u0301a.test\" is not a valid domain name: idna: invalid label \"\u0301a\"",
	} {
		err := check(mapResolver{"empty.test": {}}, nil, raw)
		var se *spec.Error
		if err == nil || errors.As(err, &se) {
			t.Errorf("%s: %v, want a transport error", raw, err)
			continue
		}
		if TransportMessage(err) != want {
			t.Errorf("%s: %q, want %q", raw, TransportMessage(err), want)
		}
	}
	// A public address passes the floor; it is recorded for the dialler.
	if err := check(mapResolver{"example.com": {"93.184.216.34"}}, nil, "https://example.com/"); err != nil {
		t.Errorf("a public address: %v", err)
	}
	if got := TransportMessage(&url.Error{Op: "Get", URL: "http://x/", Err: errors.New("connection refused")}); got != "connection refused" {
		t.Errorf("TransportMessage(url.Error) = %q", got)
	}
}

func TestArticle(t *testing.T) {
	for word, want := range map[string]string{"unspecified": "an", "loopback": "a", "link-local": "a", "": "a"} {
		if got := article(word); got != want {
			t.Errorf("article(%q) = %q, want %q", word, got, want)
		}
	}
}
