package netfloor

import (
	"net"
	"net/netip"
	"strings"
)

// The entries of permits.net.http (§2.4): `host` (any port), `host:port`, `*.domain`, an IP
// literal or a CIDR. netAllowed is the gate; exactAllowed says which entries may lift the
// floor for a refused address.

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
