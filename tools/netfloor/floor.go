package netfloor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/idna"

	"github.com/nikahq/nika/spec"
)

// Resolver resolves host names for the network builtins. *net.Resolver satisfies it; tests
// inject one that maps names to loopback without a DNS server.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

const (
	codePermits = spec.CodeSecPermits
	codeSSRF    = spec.CodeSecSSRF
)

// MaxRedirects is the number of redirects a fetch follows (§7.5); one more is a transport
// error (NIKA-BUILTIN-FETCH-002 for nika:fetch).
const MaxRedirects = 10

// refusedRange is one range of the SSRF floor, with the class named in messages.
type refusedRange struct {
	prefix netip.Prefix
	class  string
}

// refusedRanges are the ranges of LANGUAGE.md §7.5, exactly. IPv4-mapped IPv6 addresses are
// unmapped before they are compared, so ::ffff:10.0.0.1 falls in 10.0.0.0/8.
var refusedRanges = []refusedRange{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "private"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
}

// refusedClass returns the class of the refused range holding a, or "" when a is not refused.
func refusedClass(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	for _, r := range refusedRanges {
		if r.prefix.Contains(a) {
			return r.class
		}
	}
	return ""
}

// Floor checks the URLs of one builtin call and dials only what it checked. One floor serves
// one call (its request and redirect hops); it is safe for the transport's concurrent use.
type Floor struct {
	resolver Resolver
	permits  *spec.Permits // nil: no permits block, only the floor applies

	mu      sync.Mutex
	hosts   map[string][]netip.Addr // ASCII lower-case host → its checked addresses, in resolver order
	checked map[netip.Addr]bool     // every checked address, unmapped and without zone
}

// New returns the floor of one call: r resolves its host names (nil: net.DefaultResolver),
// permits is the workflow's permits block (nil: none, only the floor applies).
func New(r Resolver, permits *spec.Permits) *Floor {
	if r == nil {
		r = net.DefaultResolver
	}
	return &Floor{resolver: r, permits: permits, hosts: map[string][]netip.Addr{}, checked: map[netip.Addr]bool{}}
}

// transportError is a failure to reach the server (a bad host name, DNS, too many redirects):
// the caller reports it under its own transient code (FETCH-002, NOTIFY-001).
type transportError struct{ msg string }

func (e *transportError) Error() string { return e.msg }

// hostKey is the form of a URL host the transport hands to DialContext: ASCII (IDNA) and
// lower-cased, without brackets or port, without a trailing dot.
func hostKey(host string) (string, error) {
	h := strings.TrimSuffix(host, ".")
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			a, err := idna.Lookup.ToASCII(h)
			if err != nil {
				return "", &transportError{fmt.Sprintf("host %q is not a valid domain name: %v", host, err)}
			}
			h = a
			break
		}
	}
	return strings.ToLower(h), nil
}

// Check runs the permits gate and the SSRF floor on one URL about to be requested, and
// records the host's checked addresses for the dialer. It returns ctx.Err() when ctx ends
// during the lookup.
func (f *Floor) Check(ctx context.Context, u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return &transportError{fmt.Sprintf("%s: scheme %q is not supported; only http and https are", u.Redacted(), u.Scheme)}
	}
	hostname := u.Hostname()
	if hostname == "" {
		return &transportError{fmt.Sprintf("%s has no host", u.Redacted())}
	}
	key, err := hostKey(hostname)
	if err != nil {
		return err
	}
	port := urlPort(u)
	if f.permits != nil && !netAllowed(f.permits.NetHTTP, key, port) {
		return spec.NewError(codePermits,
			fmt.Sprintf("host %q of %s is outside `permits.net.http`; add %q to `permits.net.http` to reach it", hostname, u.Redacted(), key),
			map[string]any{"url": u.Redacted(), "host": key, "gate": "net.http"})
	}
	addrs, err := f.resolve(ctx, key)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		class := refusedClass(a)
		if class == "" || f.permits != nil && exactAllowed(f.permits.NetHTTP, key, port, a) {
			continue
		}
		ua := a.Unmap().WithZone("")
		what := fmt.Sprintf("host %q resolves to %s", hostname, ua)
		if ip, err := netip.ParseAddr(key); err == nil && ip.WithZone("") == a.WithZone("") {
			what = "address " + ua.String()
		}
		return spec.NewError(codeSSRF,
			fmt.Sprintf("%s: %s, %s %s address, which the SSRF floor refuses; to reach it on purpose, add the exact host %q (or the address, or a CIDR containing it) to `permits.net.http`",
				u.Redacted(), what, article(class), class, key),
			map[string]any{"url": u.Redacted(), "host": key, "address": ua.String(), "range": class})
	}
	f.mu.Lock()
	f.hosts[key] = addrs
	for _, a := range addrs {
		f.checked[a.Unmap().WithZone("")] = true
	}
	f.mu.Unlock()
	return nil
}

// resolve returns the addresses of an ASCII lower-case host: an IP literal is its own address.
func (f *Floor) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ips, err := f.resolver.LookupIPAddr(ctx, host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &transportError{fmt.Sprintf("cannot resolve host %q: %v", host, err)}
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		out = append(out, a.WithZone(ip.Zone))
	}
	if len(out) == 0 {
		return nil, &transportError{fmt.Sprintf("host %q has no address", host)}
	}
	return out, nil
}

// dialContext is the transport's dialer: it dials only the addresses check recorded for the
// host, never resolving again.
func (f *Floor) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	key, err := hostKey(host)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	addrs := f.hosts[key]
	f.mu.Unlock()
	if len(addrs) == 0 {
		return nil, spec.NewError(codeSSRF, fmt.Sprintf("refusing to connect to %s: the SSRF floor has not checked this host", addr),
			map[string]any{"address": addr})
	}
	d := &net.Dialer{Control: f.control}
	var firstErr error
	for _, a := range addrs {
		target := net.JoinHostPort(a.Unmap().String(), port)
		c, err := d.DialContext(ctx, network, target)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// control is the dialer's second line (D36): whatever dials, only a checked address connects.
func (f *Floor) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return spec.NewError(codeSSRF, fmt.Sprintf("refusing to connect to %s: not an address the SSRF floor checked", address),
			map[string]any{"address": address})
	}
	f.mu.Lock()
	ok := f.checked[ap.Addr().Unmap().WithZone("")]
	f.mu.Unlock()
	if !ok {
		return spec.NewError(codeSSRF, fmt.Sprintf("refusing to connect to %s: not an address the SSRF floor checked", address),
			map[string]any{"address": address})
	}
	return nil
}

// Client returns an HTTP client that goes through the floor: no proxy, the checking dialer,
// and (when redirects > 0) each hop re-checked; more than redirects hops is a transport error.
// With redirects == 0, a redirect response is returned as it is.
func (f *Floor) Client(redirects int) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           f.dialContext,
		ForceAttemptHTTP2:     true,
		DisableKeepAlives:     true, // one call, one client: nothing to reuse, nothing left running
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if redirects == 0 {
				return http.ErrUseLastResponse
			}
			if len(via) > redirects {
				return &transportError{fmt.Sprintf("stopped after %d redirects (the limit is %d)", redirects, redirects)}
			}
			return f.Check(req.Context(), req.URL)
		},
	}
}

// urlPort is the URL's port, or the default port of its scheme.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// TransportMessage describes a failed request for FETCH-002 and NOTIFY-001: the innermost
// meaningful cause, without the url.Error prefix that repeats the method and URL.
func TransportMessage(err error) string {
	var te *transportError
	if errors.As(err, &te) {
		return te.msg
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// article is the indefinite article before a range name ("an unspecified", "a loopback").
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
