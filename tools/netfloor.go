package tools

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

// The network floor of nika:fetch and nika:notify (LANGUAGE.md §7.5, §2.4; DECISIONS.md D36).
//
// Every URL the client is about to request — the first one and each redirect hop — goes
// through floor.check before any connection is made:
//
//  1. Under permits, permits.net.http must admit the URL host (NIKA-SEC-004). Entries are
//     `host` (any port), `host:port`, `*.domain` (subdomains only, not the apex), an IP literal
//     or a CIDR, compared case-insensitively; a trailing dot of a fully qualified name is
//     ignored.
//  2. The host is resolved through the Resolver seam (an IP literal resolves to itself) and
//     EVERY address is checked against the refused ranges, IPv4-mapped IPv6 forms included. A
//     refused address is NIKA-SEC-005 unless an exact permits.net.http entry allows it: the
//     URL's hostname itself, an IP literal equal to the address, or a CIDR containing it. A
//     `host:port` or `ip:port` entry is exact too, for its port only. Wildcard entries never
//     allow a refused address. One refused address refuses the host, whatever the others are.
//  3. The checked addresses are recorded for that host. The transport's DialContext never
//     resolves: it dials only the recorded addresses of the host it is asked for (the IP, not
//     the name, so a DNS answer that changes between check and dial — rebinding — cannot
//     reach an unchecked address), while TLS SNI and the Host header keep the name, since the
//     transport takes them from the URL. As a second line, the net.Dialer's Control hook
//     refuses any address that is not in the checked set, whatever asked for it.
//
// The client never uses a proxy (Proxy: nil): a proxy would resolve and connect on our behalf,
// out of the floor's sight.

// Resolver resolves host names for the network builtins. *net.Resolver satisfies it; tests
// inject one that maps names to loopback without a DNS server.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

const codeSSRF = "NIKA-SEC-005"

// maxRedirects is the number of redirects a fetch follows (§7.5); one more is NIKA-BUILTIN-FETCH-002.
const maxRedirects = 10

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

// floor checks the URLs of one builtin call and dials only what it checked. One floor serves
// one call (its request and redirect hops); it is safe for the transport's concurrent use.
type floor struct {
	resolver Resolver
	permits  *spec.Permits // nil: no permits block, only the floor applies

	mu      sync.Mutex
	hosts   map[string][]netip.Addr // ASCII lower-case host → its checked addresses, in resolver order
	checked map[netip.Addr]bool     // every checked address, unmapped and without zone
}

func newFloor(r Resolver, permits *spec.Permits) *floor {
	if r == nil {
		r = net.DefaultResolver
	}
	return &floor{resolver: r, permits: permits, hosts: map[string][]netip.Addr{}, checked: map[netip.Addr]bool{}}
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

// check runs the permits gate and the SSRF floor on one URL about to be requested, and
// records the host's checked addresses for the dialer.
func (f *floor) check(ctx context.Context, u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return &transportError{fmt.Sprintf("%s: scheme %q is not supported; only http and https are", redactURL(u), u.Scheme)}
	}
	hostname := u.Hostname()
	if hostname == "" {
		return &transportError{fmt.Sprintf("%s has no host", redactURL(u))}
	}
	key, err := hostKey(hostname)
	if err != nil {
		return err
	}
	port := urlPort(u)
	if f.permits != nil && !netAllowed(f.permits.NetHTTP, key, port) {
		return spec.NewError(codePermits,
			fmt.Sprintf("host %q of %s is outside `permits.net.http`; add %q to `permits.net.http` to reach it", hostname, redactURL(u), key),
			map[string]any{"url": redactURL(u), "host": key, "gate": "net.http"})
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
				redactURL(u), what, article(class), class, key),
			map[string]any{"url": redactURL(u), "host": key, "address": ua.String(), "range": class})
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
func (f *floor) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
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
func (f *floor) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
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
func (f *floor) control(_, address string, _ syscall.RawConn) error {
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

// client returns an HTTP client that goes through the floor: no proxy, the checking dialer,
// and (when redirects > 0) each hop re-checked; more than redirects hops is a transport error.
// With redirects == 0, a redirect response is returned as it is.
func (f *floor) client(redirects int) *http.Client {
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
			return f.check(req.Context(), req.URL)
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

// netEntry is one parsed permits.net.http entry.
type netEntry struct {
	host     string // lower-case, no brackets, no trailing dot; "" for a CIDR
	port     string // "" for any port
	wildcard bool   // "*.domain": host holds ".domain"
	ip       netip.Addr
	cidr     netip.Prefix
}

func parseNetEntry(e string) netEntry {
	e = strings.ToLower(strings.TrimSpace(e))
	if p, err := netip.ParsePrefix(e); err == nil {
		return netEntry{cidr: p.Masked()}
	}
	var n netEntry
	h := e
	if hh, p, err := net.SplitHostPort(e); err == nil {
		h, n.port = hh, p
	}
	h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(h, "]"), "["), ".")
	if strings.HasPrefix(h, "*.") {
		n.wildcard, n.host = true, "."+entryHost(h[2:])
		return n
	}
	n.host = entryHost(h)
	if a, err := netip.ParseAddr(h); err == nil {
		n.ip = a.Unmap().WithZone("")
	}
	return n
}

// entryHost is the host of an entry in the form hostKey gives URL hosts: a Unicode name is
// compared by its ASCII (IDNA) form; a name IDNA refuses stays as written (it matches no URL).
func entryHost(h string) string {
	if k, err := hostKey(h); err == nil {
		return k
	}
	return h
}

// netAllowed is the permits.net.http gate (§2.4) for an ASCII lower-case host and a port.
func netAllowed(entries []string, host, port string) bool {
	var hostIP netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		hostIP = a.Unmap().WithZone("")
	}
	for _, raw := range entries {
		e := parseNetEntry(raw)
		switch {
		case e.cidr.IsValid():
			if hostIP.IsValid() && (e.cidr.Contains(hostIP) || mappedCIDR(e.cidr) && e.cidr.Contains(netip.AddrFrom16(hostIP.As16()))) {
				return true
			}
			continue
		case e.port != "" && e.port != port:
			continue
		case e.wildcard:
			if strings.HasSuffix(host, e.host) && host != e.host[1:] && hostIP == (netip.Addr{}) {
				return true
			}
		case e.ip.IsValid():
			if hostIP == e.ip {
				return true
			}
		case e.host == host:
			return true
		}
	}
	return false
}

// exactAllowed reports whether an explicit entry allows the refused address a reached through
// host and port: the exact hostname, an IP literal equal to a, or a CIDR containing a.
// Wildcards never do.
func exactAllowed(entries []string, host, port string, a netip.Addr) bool {
	ua := a.Unmap().WithZone("")
	for _, raw := range entries {
		e := parseNetEntry(raw)
		switch {
		case e.cidr.IsValid():
			if e.cidr.Contains(ua) || e.cidr.Contains(a.WithZone("")) || mappedCIDR(e.cidr) && e.cidr.Contains(netip.AddrFrom16(ua.As16())) {
				return true
			}
			continue
		case e.wildcard, e.port != "" && e.port != port:
			continue
		case e.ip.IsValid():
			if e.ip == ua {
				return true
			}
		case e.host == host:
			return true
		}
	}
	return false
}

// mappedCIDR reports whether p is written in the IPv4-mapped form (within ::ffff:0:0/96): such
// a CIDR contains the IPv4 addresses it maps. A wider IPv6 CIDR (::/0) does not lift the floor
// for IPv4 addresses.
func mappedCIDR(p netip.Prefix) bool {
	return p.Addr().Is4In6() && p.Bits() >= 96
}

// redactURL renders u without its password, for messages and details.
func redactURL(u *url.URL) string { return u.Redacted() }

// transportMessage describes a failed request for FETCH-002 and NOTIFY-001: the innermost
// meaningful cause, without the url.Error prefix that repeats the method and URL.
func transportMessage(err error) string {
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
