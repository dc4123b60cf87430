package spec

import (
	"reflect"
	"slices"
	"testing"
)

func TestIntersectPermitsNilSides(t *testing.T) {
	own := &Permits{Exec: true, Tools: []string{"nika:*"}, ToolsSet: true}
	if got := IntersectPermits(nil, own); got != own {
		t.Errorf("nil ceiling: got %+v, want the workflow's own permits", got)
	}
	ceiling := &Permits{FSRead: []string{"data/**"}}
	got := IntersectPermits(ceiling, nil)
	if got == ceiling || !reflect.DeepEqual(got, ceiling) {
		t.Errorf("nil own: got %p %+v, want a copy of the ceiling %p", got, got, ceiling)
	}
	got.FSRead[0] = "changed"
	if ceiling.FSRead[0] != "data/**" {
		t.Error("the copy shares its lists with the ceiling")
	}
	// The default ceiling {} denies exec to a workflow without permits.
	if p := IntersectPermits(&Permits{}, nil); p == nil || p.Exec || p.ExecList != nil {
		t.Errorf("{} ∩ nil = %+v, want exec denied", p)
	}
}

func TestIntersectPermitsExec(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ceiling, own Permits
		exec         bool
		list         []string
	}{
		{"both true", Permits{Exec: true}, Permits{Exec: true}, true, nil},
		{"ceiling false", Permits{}, Permits{Exec: true}, false, nil},
		{"own false", Permits{Exec: true}, Permits{}, false, nil},
		{"true and list", Permits{Exec: true}, Permits{ExecList: []string{"git"}}, false, []string{"git"}},
		{"list and true", Permits{ExecList: []string{"echo"}}, Permits{Exec: true}, false, []string{"echo"}},
		{"lists", Permits{ExecList: []string{"echo", "git", "make"}}, Permits{ExecList: []string{"make", "sh", "git", "git"}}, false, []string{"make", "git"}},
		{"disjoint lists", Permits{ExecList: []string{"echo"}}, Permits{ExecList: []string{"sh"}}, false, []string{}},
		{"list and false", Permits{ExecList: []string{"echo"}}, Permits{}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := IntersectPermits(&tc.ceiling, &tc.own)
			if got.Exec != tc.exec || !reflect.DeepEqual(got.ExecList, tc.list) {
				t.Errorf("exec = %v %#v, want %v %#v", got.Exec, got.ExecList, tc.exec, tc.list)
			}
		})
	}
}

func TestIntersectPermitsLists(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ceiling, own Permits
		want         Permits
	}{
		{"fs subtree covers a narrower glob",
			Permits{FSRead: []string{"data/**"}}, Permits{FSRead: []string{"data/in/*.csv", "etc/**", "data/../etc/x"}},
			Permits{FSRead: []string{"data/in/*.csv"}, FSWrite: []string{}, NetHTTP: []string{}, Tools: []string{}}},
		{"fs root covers everything, anchors otherwise differ",
			Permits{FSRead: []string{"/**"}, FSWrite: []string{"/tmp/**"}}, Permits{FSRead: []string{"~/x", "src/**"}, FSWrite: []string{"out/**", "/tmp/a/./b"}},
			Permits{FSRead: []string{"~/x", "src/**"}, FSWrite: []string{"/tmp/a/./b"}, NetHTTP: []string{}, Tools: []string{}}},
		{"fs a wildcard prefix covers nothing",
			Permits{FSRead: []string{"*/**"}}, Permits{FSRead: []string{"a/b"}},
			Permits{FSRead: []string{}, FSWrite: []string{}, NetHTTP: []string{}, Tools: []string{}}},
		{"fs equal globs, from either side",
			Permits{FSRead: []string{"a/*.md"}}, Permits{FSRead: []string{"./a/*.md"}},
			Permits{FSRead: []string{"a/*.md", "./a/*.md"}, FSWrite: []string{}, NetHTTP: []string{}, Tools: []string{}}},
		{"net hosts, ports, CIDRs",
			Permits{NetHTTP: []string{"api.example.com", "10.0.0.0/8", "*.cdn.example.com"}},
			Permits{NetHTTP: []string{"API.example.com:443", "10.1.2.3", "10.2.0.0/16", "11.0.0.1", "*.eu.cdn.example.com", "img.cdn.example.com", "example.com"}},
			Permits{NetHTTP: []string{"API.example.com:443", "10.1.2.3", "10.2.0.0/16", "*.eu.cdn.example.com"}, FSRead: []string{}, FSWrite: []string{}, Tools: []string{}}},
		{"net a port does not cover another; an address entry covers its ports",
			Permits{NetHTTP: []string{"h:80", "[::1]:8080"}}, Permits{NetHTTP: []string{"h:81", "h", "::1"}},
			Permits{NetHTTP: []string{"h:80", "[::1]:8080"}, FSRead: []string{}, FSWrite: []string{}, Tools: []string{}}},
		{"tools positives covered, negations of both kept last",
			Permits{Tools: []string{"nika:*", "!nika:write", "mcp:gh/**"}, ToolsSet: true},
			Permits{Tools: []string{"nika:read", "nika:write", "mcp:gh/issues/list", "mcp:fs/read", "!mcp:gh/x"}, ToolsSet: true},
			Permits{Tools: []string{"nika:read", "nika:write", "mcp:gh/issues/list", "!nika:write", "!mcp:gh/x"}, ToolsSet: true, FSRead: []string{}, FSWrite: []string{}, NetHTTP: []string{}}},
		{"tools one side without a list denies",
			Permits{Tools: []string{"nika:*"}, ToolsSet: true}, Permits{},
			Permits{Tools: []string{}, FSRead: []string{}, FSWrite: []string{}, NetHTTP: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := IntersectPermits(&tc.ceiling, &tc.own)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", *got, tc.want)
			}
		})
	}
}

// Soundness: whatever the intersection admits, both sides admit.
func TestIntersectToolsIsSound(t *testing.T) {
	lists := [][]string{
		{"nika:*"}, {"**"}, {"nika:**", "!nika:exec"}, {"mcp:*/*"}, {"mcp:gh/*", "!mcp:gh/delete*"},
		{"nika:read", "nika:write"}, {"*"}, {"mcp:**"}, {"!nika:read", "nika:read"}, {"nika:re*"},
	}
	names := []string{"nika:read", "nika:write", "nika:exec", "mcp:gh/list", "mcp:gh/delete_repo", "mcp:fs/read", "nika", "mcp:gh/a/b", "x"}
	for _, a := range lists {
		for _, b := range lists {
			got := intersectTools(a, b)
			for _, n := range names {
				if ToolAllowed(got, n) && !(ToolAllowed(a, n) && ToolAllowed(b, n)) {
					t.Errorf("%q ∩ %q = %q admits %s, which one side denies", a, b, got, n)
				}
			}
		}
	}
	// And it is not vacuous: equal lists keep what they admit.
	if got := intersectTools([]string{"nika:*"}, []string{"nika:*"}); !ToolAllowed(got, "nika:read") {
		t.Errorf("nika:* ∩ nika:* = %q denies nika:read", got)
	}
}

// A relative (or ~) glob whose leading `..` climbs out of the anchor is
// not under the ceiling's `**`: the runtime anchors `../**` at the parent
// of the run directory (tools/fsgate), so keeping it would hand a
// submitted workflow the whole parent tree under a ceiling of the run
// directory only.
func TestIntersectPermitsFSDotDotEscapes(t *testing.T) {
	for _, tc := range []struct{ ceiling, own string }{
		{"**", "../**"},
		{"**", "../etc/passwd"},
		{"./**", "x/../../etc/passwd"},
		{"~/**", "~/../other/**"},
		{"../**", "../../**"},
		{"data/**", "data/../../x"},
	} {
		got := IntersectPermits(&Permits{FSRead: []string{tc.ceiling}, FSWrite: []string{tc.ceiling}},
			&Permits{FSRead: []string{tc.own}, FSWrite: []string{tc.own}})
		if len(got.FSRead) != 0 || len(got.FSWrite) != 0 {
			t.Errorf("%q ∩ %q = read %q write %q, want nothing: the glob leaves the ceiling's tree", tc.ceiling, tc.own, got.FSRead, got.FSWrite)
		}
	}
	// Not vacuous: `..` the ceiling itself climbs is covered.
	if got := IntersectPermits(&Permits{FSRead: []string{"../shared/**"}}, &Permits{FSRead: []string{"../shared/x/*.csv"}}); len(got.FSRead) != 1 {
		t.Errorf("../shared/** ∩ ../shared/x/*.csv = %q, want the narrower glob", got.FSRead)
	}
}

// The runtime reads an IP entry unmapped (`::ffff:127.0.0.1` is 127.0.0.1,
// tools/netfloor), so an IPv6 CIDR of the ceiling, which does not
// explicitly allow the IPv4 loopback past the SSRF floor, must not cover
// a mapped address: `::/0` ∩ `::ffff:127.0.0.1` kept the entry and let
// the workflow reach 127.0.0.1.
func TestIntersectPermitsNetMappedAddresses(t *testing.T) {
	for _, tc := range []struct {
		ceiling, own string
		kept         bool
	}{
		{"::/0", "::ffff:127.0.0.1", false},
		{"::/0", "[::ffff:127.0.0.1]:80", false},
		{"::ffff:0:0/96", "::ffff:10.0.0.1", false},
		{"::ffff:10.0.0.0/104", "::ffff:10.0.0.1", false},
		{"127.0.0.0/8", "::ffff:127.0.0.1", true},
		{"127.0.0.1", "::ffff:127.0.0.1", true},
		{"fe80::/10", "fe80::1%eth0", true},
		// A CIDR in the mapped form allows its IPv4 addresses past the SSRF
		// floor; a wider IPv6 CIDR (::/0) does not (tools/netfloor).
		{"::/0", "::ffff:127.0.0.0/104", false},
		{"::/1", "::ffff:0:0/96", false},
		{"::ffff:0:0/95", "::ffff:10.0.0.0/104", false},
		{"::ffff:0:0/96", "::ffff:127.0.0.0/104", true},
		{"::/0", "fc00::/7", true},
	} {
		got := IntersectPermits(&Permits{NetHTTP: []string{tc.ceiling}}, &Permits{NetHTTP: []string{tc.own}})
		if kept := slices.Contains(got.NetHTTP, tc.own); kept != tc.kept {
			t.Errorf("%q ∩ %q = %q, want %q kept: %v", tc.ceiling, tc.own, got.NetHTTP, tc.own, tc.kept)
		}
	}
}

// An empty fs glob matches nothing at run time (tools/fsgate), so a
// ceiling's "" covers nothing either, not even the run directory itself
// (`.`), which cleans to the same empty path.
func TestIntersectPermitsFSEmptyCeilingGlob(t *testing.T) {
	for _, own := range []string{".", "./", "a/..", ""} {
		if got := IntersectPermits(&Permits{FSRead: []string{""}}, &Permits{FSRead: []string{own}}); len(got.FSRead) != 0 {
			t.Errorf(`"" ∩ %q = %q, want nothing`, own, got.FSRead)
		}
	}
}
