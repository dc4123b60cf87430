// Package netfloor is the network floor of nika:fetch, nika:notify and the URL images of
// infer.vision (LANGUAGE.md §7.5, §2.4; DECISIONS.md D36): the permits.net.http gate and the
// SSRF floor, and an HTTP client that dials only the addresses they checked.
//
// Every URL the client is about to request — the first one and each redirect hop — goes
// through Floor.Check before any connection is made:
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
//
// Refusals are *spec.Error values: NIKA-SEC-004 (the gate, details {url, host, gate}) and
// NIKA-SEC-005 (the floor, details {url, host, address, range}); a failure to reach the server
// (a bad host name, DNS, too many redirects) is a plain error for the caller to report under its
// own transient code, worded by TransportMessage.
package netfloor
