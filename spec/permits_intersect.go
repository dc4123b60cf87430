package spec

import (
	"net/netip"
	"path"
	"slices"
	"strings"
)

// IntersectPermits returns the permits a workflow runs under when a host
// imposes a ceiling on it (DECISIONS.md D35, `nika serve --permits`): what
// both the ceiling and the workflow's own permits allow. A nil ceiling
// imposes nothing (own is returned as is); a nil own (a workflow without a
// `permits` block) gets a copy of the ceiling.
//
// Exec is intersected exactly. The glob lists (fs.read, fs.write,
// net.http, tools) cannot in general be intersected into one list of the
// same language, so the result is a sound under-approximation: an entry of
// either side is kept only when an entry of the other side provably covers
// it (equal, or a trailing `**`/`*`, a host entry covering host:port, a
// CIDR covering an address, a wildcard domain covering a narrower
// wildcard); everything else is denied. Tool negations of both sides are
// appended after every positive glob, so a name one side denies stays
// denied. Net entries covered only by a wildcard domain are dropped,
// because an explicit entry would let a refused address through the SSRF
// floor (LANGUAGE.md §7.5) where the ceiling's wildcard would not.
func IntersectPermits(ceiling, own *Permits) *Permits {
	if ceiling == nil {
		return own
	}
	if own == nil {
		return clonePermits(ceiling)
	}
	out := &Permits{
		FSRead:   intersectGlobs(ceiling.FSRead, own.FSRead, fsCovers),
		FSWrite:  intersectGlobs(ceiling.FSWrite, own.FSWrite, fsCovers),
		NetHTTP:  intersectGlobs(ceiling.NetHTTP, own.NetHTTP, netCovers),
		ToolsSet: ceiling.ToolsSet && own.ToolsSet,
		Tools:    intersectTools(ceiling.Tools, own.Tools),
	}
	switch {
	case !execAny(ceiling) || !execAny(own):
		// One side denies exec: the result denies it.
	case ceiling.ExecList == nil && own.ExecList == nil:
		out.Exec = true
	case ceiling.ExecList == nil:
		out.ExecList = slices.Clone(own.ExecList)
	case own.ExecList == nil:
		out.ExecList = slices.Clone(ceiling.ExecList)
	default:
		out.ExecList = []string{}
		for _, p := range own.ExecList {
			if slices.Contains(ceiling.ExecList, p) && !slices.Contains(out.ExecList, p) {
				out.ExecList = append(out.ExecList, p)
			}
		}
	}
	return out
}

// execAny reports whether p allows some exec (true, or a list, even empty:
// a list is still "argv form only", and an empty one then refuses every
// program with a message naming the list).
func execAny(p *Permits) bool { return p.Exec || p.ExecList != nil }

func clonePermits(p *Permits) *Permits {
	c := *p
	c.FSRead, c.FSWrite = slices.Clone(p.FSRead), slices.Clone(p.FSWrite)
	c.NetHTTP, c.ExecList, c.Tools = slices.Clone(p.NetHTTP), slices.Clone(p.ExecList), slices.Clone(p.Tools)
	return &c
}

// intersectGlobs keeps the entries of a covered by an entry of b, then those
// of b covered by an entry of a, without duplicates. The result is never
// nil: under permits an empty list denies.
func intersectGlobs(a, b []string, covers func(outer, inner string) bool) []string {
	out := []string{}
	keep := func(xs, others []string) {
		for _, x := range xs {
			if slices.Contains(out, x) {
				continue
			}
			for _, o := range others {
				if covers(o, x) {
					out = append(out, x)
					break
				}
			}
		}
	}
	keep(a, b)
	keep(b, a)
	return out
}

// intersectTools keeps the positive globs one side's positives cover, then
// appends every negation of both sides: with last-match-wins, a trailing
// negation denies whatever it matches, which is at least as strict as
// either list.
func intersectTools(a, b []string) []string {
	var pa, pb, negs []string
	for _, list := range [][]string{a, b} {
		for _, g := range list {
			if strings.HasPrefix(g, "!") {
				if !slices.Contains(negs, g) {
					negs = append(negs, g)
				}
			}
		}
	}
	for _, g := range a {
		if !strings.HasPrefix(g, "!") {
			pa = append(pa, g)
		}
	}
	for _, g := range b {
		if !strings.HasPrefix(g, "!") {
			pb = append(pb, g)
		}
	}
	return append(intersectGlobs(pa, pb, toolCovers), negs...)
}

// toolCovers reports whether every name glob inner matches, outer matches
// too (LANGUAGE.md §2.4.1: `*` is any run without `/` or `:`, `**` any run).
func toolCovers(outer, inner string) bool {
	switch {
	case outer == inner || outer == "**":
		return true
	case strings.HasSuffix(outer, "**"):
		p := strings.TrimSuffix(outer, "**")
		return !strings.Contains(p, "*") && strings.HasPrefix(inner, p)
	case strings.HasSuffix(outer, "*"):
		p := strings.TrimSuffix(outer, "*")
		if strings.Contains(p, "*") || !strings.HasPrefix(inner, p) {
			return false
		}
		rest := inner[len(p):]
		return !strings.ContainsAny(rest, "/:") && !strings.Contains(rest, "**")
	}
	return false
}

// fsCovers reports whether every path glob inner matches, outer matches
// too (LANGUAGE.md §2.4 fs globs, both anchored the same way).
func fsCovers(outer, inner string) bool {
	if outer == "" || inner == "" {
		return false // matches nothing at run time, though it cleans to "."
	}
	oa, osegs := fsSplit(outer)
	ia, isegs := fsSplit(inner)
	if oa == "/" && len(osegs) == 1 && osegs[0] == "**" {
		return true // every subject is an absolute path
	}
	if oa != ia {
		return false
	}
	if slices.Equal(osegs, isegs) {
		return true
	}
	n := len(osegs)
	if n == 0 || osegs[n-1] != "**" || len(isegs) < n-1 {
		return false
	}
	// A cleaned glob has its `..` segments first, and the runtime anchors
	// them above the anchor: one beyond outer's literal prefix climbs out
	// of outer's tree (`**` does not cover `../x`).
	if len(isegs) > n-1 && isegs[n-1] == ".." {
		return false
	}
	for i, seg := range osegs[:n-1] {
		if strings.ContainsAny(seg, `*?[\`) || seg != isegs[i] {
			return false
		}
	}
	return true
}

// fsSplit splits a path glob into its anchor ("/", "~" or "." for the run
// directory) and its cleaned segments, as the runtime matcher reads it.
func fsSplit(g string) (anchor string, segs []string) {
	var rest string
	switch {
	case g == "~" || strings.HasPrefix(g, "~/"):
		anchor, rest = "~", path.Clean(strings.TrimPrefix(g[1:], "/"))
	case strings.HasPrefix(g, "/"):
		anchor, rest = "/", strings.TrimPrefix(path.Clean(g), "/")
	default:
		anchor, rest = ".", path.Clean(g)
	}
	if rest == "." || rest == "" {
		return anchor, nil
	}
	return anchor, strings.Split(rest, "/")
}

// netEntry is one parsed permits.net.http entry.
type netEntry struct {
	kind   byte // 'n' host name, 'w' wildcard domain, 'i' IP literal, 'c' CIDR, 0 unparsed
	host   string
	port   string
	addr   netip.Addr
	prefix netip.Prefix
}

func parseNet(e string) netEntry {
	e = strings.ToLower(e)
	if p, err := netip.ParsePrefix(e); err == nil {
		return netEntry{kind: 'c', prefix: p.Masked()}
	}
	// The runtime reads an address entry unmapped and without its zone
	// (tools/netfloor): `::ffff:127.0.0.1` is 127.0.0.1, which an IPv6
	// CIDR does not explicitly allow.
	if a, err := netip.ParseAddr(e); err == nil {
		return netEntry{kind: 'i', addr: a.Unmap().WithZone("")}
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		return netEntry{kind: 'i', addr: ap.Addr().Unmap().WithZone(""), port: itoa(int(ap.Port()))}
	}
	host, port := e, ""
	if i := strings.LastIndexByte(e, ':'); i >= 0 {
		host, port = e[:i], e[i+1:]
	}
	if host == "" || strings.ContainsAny(host, ":/[]") {
		return netEntry{}
	}
	if w, ok := strings.CutPrefix(host, "*."); ok {
		if w == "" || strings.Contains(w, "*") {
			return netEntry{}
		}
		return netEntry{kind: 'w', host: w, port: port}
	}
	if strings.Contains(host, "*") {
		return netEntry{}
	}
	return netEntry{kind: 'n', host: host, port: port}
}

// netCovers reports whether every address entry inner allows, outer allows
// too, with the same SSRF explicitness (see IntersectPermits).
func netCovers(outer, inner string) bool {
	if strings.EqualFold(outer, inner) {
		return true
	}
	o, i := parseNet(outer), parseNet(inner)
	if o.port != "" && o.port != i.port {
		return false
	}
	switch o.kind {
	case 'n':
		return i.kind == 'n' && i.host == o.host
	case 'w':
		return i.kind == 'w' && (i.host == o.host || strings.HasSuffix(i.host, "."+o.host))
	case 'i':
		return i.kind == 'i' && i.addr == o.addr
	case 'c':
		switch i.kind {
		case 'i':
			return o.prefix.Contains(i.addr)
		case 'c':
			// A CIDR in the IPv4-mapped form also allows the IPv4 addresses
			// it maps past the SSRF floor, a wider IPv6 one does not
			// (tools/netfloor): only a mapped CIDR covers a mapped one.
			if mappedPrefix(i.prefix) && !mappedPrefix(o.prefix) {
				return false
			}
			return i.prefix.Bits() >= o.prefix.Bits() && o.prefix.Contains(i.prefix.Addr())
		}
	}
	return false
}

// mappedPrefix reports whether p is written in the IPv4-mapped form
// (within ::ffff:0:0/96), as the runtime's floor reads it.
func mappedPrefix(p netip.Prefix) bool { return p.Addr().Is4In6() && p.Bits() >= 96 }
