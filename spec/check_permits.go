package spec

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// permits checks the shape of the permits block (§2.4).
func (c *checker) permits(n *Node) {
	v := deref(n)
	if v.Kind != KindMap {
		c.errorf(CodeParseShape, n, "permits", "Write `permits` as a mapping with fs, net, exec and tools.", "`permits` must be a mapping, not %s", kindName(n))
		return
	}
	c.noPlaceholders(n, "permits", "`permits`")
	c.checkKeys(v, "permits", "`permits`", []string{"fs", "net", "exec", "tools"}, CodeParseUnknownField)
	p := &Permits{}
	ok := true
	strList := func(n *Node, path, what string) []string {
		d := deref(n)
		if d.Kind == KindNull {
			return []string{}
		}
		if d.Kind != KindSeq {
			c.errorf(CodeParseShape, n, path, fmt.Sprintf("Write %s as a list of strings.", what), "%s must be a list, not %s", what, kindName(n))
			ok = false
			return nil
		}
		out := []string{}
		for i, it := range d.Items {
			if deref(it).Kind != KindString {
				c.errorf(CodeParseShape, it, pathIndex(path, i), "Write each entry as a string.", "%s entries must be strings", what)
				ok = false
				continue
			}
			out = append(out, deref(it).Str)
		}
		return out
	}
	if fs := v.Get("fs"); fs != nil {
		d := deref(fs)
		if d.Kind != KindMap {
			c.errorf(CodeParseShape, fs, "permits.fs", "Write `fs: { read: [globs], write: [globs] }`.", "`permits.fs` must be a mapping")
			ok = false
		} else {
			c.checkKeys(d, "permits.fs", "`permits.fs`", []string{"read", "write"}, CodeParseUnknownField)
			if r := d.Get("read"); r != nil {
				p.FSRead = strList(r, "permits.fs.read", "`fs.read`")
			}
			if w := d.Get("write"); w != nil {
				p.FSWrite = strList(w, "permits.fs.write", "`fs.write`")
			}
		}
	}
	if nt := v.Get("net"); nt != nil {
		d := deref(nt)
		if d.Kind != KindMap {
			c.errorf(CodeParseShape, nt, "permits.net", "Write `net: { http: [hosts] }`.", "`permits.net` must be a mapping")
			ok = false
		} else {
			c.checkKeys(d, "permits.net", "`permits.net`", []string{"http"}, CodeParseUnknownField)
			if h := d.Get("http"); h != nil {
				p.NetHTTP = strList(h, "permits.net.http", "`net.http`")
			}
		}
	}
	if ex := v.Get("exec"); ex != nil {
		d := deref(ex)
		switch d.Kind {
		case KindBool:
			p.Exec = d.Bool
		case KindSeq:
			p.ExecList = strList(ex, "permits.exec", "`permits.exec`")
		default:
			c.errorf(CodeParseShape, ex, "permits.exec", "Write `exec: true`, `exec: false` or a list of programs such as `[\"git\"]`.", "`permits.exec` must be a boolean or a list")
			ok = false
		}
	}
	if tl := v.Get("tools"); tl != nil {
		d := deref(tl)
		if d.Kind != KindSeq {
			c.errorf(CodeParseShape, tl, "permits.tools", "Write `tools` as a list of tool globs, e.g. `[\"nika:*\"]`.", "`permits.tools` must be a list")
			ok = false
		} else {
			p.ToolsSet = true
			p.Tools = []string{}
			for i, it := range d.Items {
				ip := pathIndex("permits.tools", i)
				if deref(it).Kind != KindString {
					c.errorf(CodeParseShape, it, ip, "Write a tool glob as a string.", "a tool glob must be a string")
					ok = false
					continue
				}
				if c.toolGlob(it, ip) {
					p.Tools = append(p.Tools, deref(it).Str)
				} else {
					ok = false
				}
			}
		}
	}
	if ok {
		c.a.Permits = p
	}
}

// permitsAndBlocklist checks literal subjects against permits (SEC-004) and
// literal shell commands against the blocklist (SEC-001).
func (c *checker) permitsAndBlocklist() {
	if c.opts.Ceiling != nil {
		c.a.Permits = IntersectPermits(c.opts.Ceiling, c.a.Permits)
		from := len(c.findings)
		defer func() { // say where the narrower permits come from
			for i := from; i < len(c.findings); i++ {
				if c.findings[i].Code == CodeSecPermits {
					c.findings[i].Detail += " This workflow runs under the server's permits ceiling (nika serve --permits), intersected with its own `permits`."
				}
			}
		}()
	}
	for _, t := range c.tasks {
		if t.bad {
			continue
		}
		for _, p := range t.node.Pairs {
			if contains(verbs, p.Key.Str) {
				c.fit(p.Key.Str, deref(p.Value), pathKey(t.path, p.Key.Str))
			}
		}
		if of := deref(t.node.Get("on_finally")); of.Kind == KindSeq {
			for i, it := range of.Items {
				m := deref(it)
				for _, p := range m.Pairs {
					if contains(verbs, p.Key.Str) {
						c.fit(p.Key.Str, deref(p.Value), pathKey(pathIndex(t.path+".on_finally", i), p.Key.Str))
					}
				}
			}
		}
	}
}

func isLiteral(n *Node) bool {
	d := deref(n)
	return d.Kind == KindString && !strings.Contains(d.Str, "${{")
}

func (c *checker) fit(verb string, body *Node, path string) {
	if body.Kind != KindMap {
		return
	}
	pm := c.a.Permits
	switch verb {
	case "exec":
		cmd := body.Get("command")
		if cmd == nil || c.bad[cmd] {
			return
		}
		d := deref(cmd)
		if d.Kind == KindString && isLiteral(cmd) {
			if why := Blocked(d.Str); why != "" {
				c.errorf(CodeSecBlocklist, cmd, path+".command", "Remove this command: nika refuses destructive shell commands (LANGUAGE.md §5.2). If you really need it, run it outside nika.",
					"the command matches the exec blocklist: %s", why)
				return
			}
		}
		if pm == nil {
			return
		}
		switch {
		case pm.ExecList == nil && !pm.Exec:
			c.errorf(CodeSecPermits, cmd, path+".command", "Allow processes with `permits.exec: true` or a list of programs, or remove this task.", "`permits.exec` denies running processes")
		case pm.ExecList != nil && d.Kind == KindString:
			c.errorf(CodeSecPermits, cmd, path+".command", "Use the argv form (`command: [\"prog\", \"arg\"]`): a `permits.exec` list allows argv commands only.", "a string command needs `permits.exec: true`")
		case pm.ExecList != nil && d.Kind == KindSeq && len(d.Items) > 0 && isLiteral(d.Items[0]):
			prog := deref(d.Items[0]).Str
			if !contains(pm.ExecList, prog) {
				c.errorf(CodeSecPermits, d.Items[0], path+".command[0]", fmt.Sprintf("Add %q to `permits.exec`, or run an allowed program (%s).", prog, strings.Join(pm.ExecList, ", ")),
					"program %q is not in `permits.exec`", prog)
			}
		}
	case "invoke":
		tn := body.Get("tool")
		if tn == nil || c.bad[tn] || pm == nil {
			return
		}
		name := deref(tn).Str
		if !ToolAllowed(pm.Tools, name) {
			c.errorf(CodeSecPermits, tn, path+".tool", fmt.Sprintf("Add %q (or a glob that admits it) to `permits.tools`.", name), "`permits.tools` does not admit %q", name)
			return
		}
		c.fitArgs(name, deref(body.Get("args")), path+".args")
	case "agent":
		tl := body.Get("tools")
		if tl == nil || c.bad[tl] || pm == nil {
			return
		}
		for i, it := range deref(tl).Items {
			g := deref(it).Str
			if strings.HasPrefix(g, "!") || strings.Contains(g, "*") {
				continue
			}
			if !ToolAllowed(pm.Tools, g) {
				c.errorf(CodeSecPermits, it, pathIndex(path+".tools", i), fmt.Sprintf("Add %q to `permits.tools`, or remove it from the agent's `tools`.", g), "`permits.tools` does not admit %q", g)
			}
		}
	case "infer":
		if pm == nil {
			return
		}
		vis := deref(body.Get("vision"))
		for i, it := range vis.Items {
			m := deref(it)
			ip := pathIndex(path+".vision", i)
			if p := m.Get("path"); p != nil && isLiteral(p) && !fsAllowed(pm.FSRead, deref(p).Str) {
				c.errorf(CodeSecPermits, p, ip+".path", "Add a glob that covers this file to `permits.fs.read`.", "%q is outside `permits.fs.read`", deref(p).Str)
			}
			if u := m.Get("url"); u != nil && isLiteral(u) {
				c.fitURL(pm, u, ip+".url")
			}
		}
	}
}

// fitArgs checks the literal subjects of effectful builtins.
func (c *checker) fitArgs(tool string, args *Node, path string) {
	if args.Kind != KindMap {
		return
	}
	pm := c.a.Permits
	checkPath := func(arg string, globs []string, gate string) {
		p := args.Get(arg)
		if p == nil || !isLiteral(p) {
			return
		}
		if !fsAllowed(globs, deref(p).Str) {
			c.errorf(CodeSecPermits, p, pathKey(path, arg), fmt.Sprintf("Add a glob that covers %q to `permits.%s`.", deref(p).Str, gate), "%q is outside `permits.%s`", deref(p).Str, gate)
		}
	}
	switch tool {
	case "nika:read":
		checkPath("path", pm.FSRead, "fs.read")
	case "nika:grep":
		if p := args.Get("path"); p != nil && isLiteral(p) && !grepRootAllowed(pm.FSRead, deref(p).Str) {
			c.errorf(CodeSecPermits, p, pathKey(path, "path"), fmt.Sprintf("Add a glob that covers %q (or files below it) to `permits.fs.read`.", deref(p).Str),
				"%q is outside `permits.fs.read`", deref(p).Str)
		}
	case "nika:glob":
		if pt := args.Get("pattern"); pt != nil && isLiteral(pt) && !globRootAllowed(pm.FSRead, deref(pt).Str) {
			c.errorf(CodeSecPermits, pt, pathKey(path, "pattern"), "Start the pattern inside a directory that `permits.fs.read` covers, or add a glob for it.",
				"the root of pattern %q is outside `permits.fs.read`", deref(pt).Str)
		}
	case "nika:write":
		checkPath("path", pm.FSWrite, "fs.write")
	case "nika:edit":
		checkPath("path", pm.FSRead, "fs.read")
		checkPath("path", pm.FSWrite, "fs.write")
	case "nika:fetch":
		if u := args.Get("url"); u != nil && isLiteral(u) {
			c.fitURL(pm, u, pathKey(path, "url"))
		}
	case "nika:notify":
		if u := args.Get("target"); u != nil && isLiteral(u) {
			c.fitURL(pm, u, pathKey(path, "target"))
		}
	}
}

func (c *checker) fitURL(pm *Permits, n *Node, path string) {
	u, err := url.Parse(deref(n).Str)
	if err != nil || u.Host == "" {
		return
	}
	if !hostAllowed(pm.NetHTTP, u) {
		c.errorf(CodeSecPermits, n, path, fmt.Sprintf("Add %q to `permits.net.http`.", u.Hostname()), "host %q is outside `permits.net.http`", u.Hostname())
	}
}

// hostAllowed matches a URL against net.http entries: host (any port),
// host:port, *.domain (subdomains only), IP literal, CIDR.
func hostAllowed(entries []string, u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	ip := net.ParseIP(host)
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if _, cidr, err := net.ParseCIDR(e); err == nil {
			if ip != nil && cidr.Contains(ip) {
				return true
			}
			continue
		}
		eh, ep := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			eh, ep = h, p
		}
		if ep != "" && ep != port {
			continue
		}
		if strings.HasPrefix(eh, "*.") {
			if strings.HasSuffix(host, eh[1:]) && host != eh[2:] {
				return true
			}
			continue
		}
		if eh == host {
			return true
		}
		if eip := net.ParseIP(eh); eip != nil && ip != nil && eip.Equal(ip) {
			return true
		}
	}
	return false
}

// fsAllowed reports whether a literal path can be inside the fs globs.
// Relative globs are anchored at the run directory, which the checker does
// not know: an absolute (or `~`) path is refused only when no run directory
// could make it match, i.e. when no tail of its segments matches a relative
// glob; a relative path against absolute or `~` globs is left to the
// runtime check.
func fsAllowed(globs []string, p string) bool {
	home := strings.HasPrefix(p, "~")
	abs := strings.HasPrefix(p, "/")
	p = path.Clean(p)
	for _, g := range globs {
		gHome, gAbs := strings.HasPrefix(g, "~"), strings.HasPrefix(g, "/")
		re := fsGlob(path.Clean(g))
		switch {
		case gHome && home, gAbs && abs, !gHome && !gAbs && !home && !abs:
			if re.MatchString(p) {
				return true
			}
		case !gHome && !gAbs: // relative glob, absolute or ~ path
			segs := strings.Split(strings.TrimPrefix(strings.TrimPrefix(p, "~"), "/"), "/")
			for k := range segs {
				if re.MatchString(strings.Join(segs[k:], "/")) {
					return true
				}
			}
		default: // absolute or ~ glob: only the runtime knows
			if !home && !abs || home != gHome {
				return true
			}
		}
	}
	return false
}

// globRootAllowed reports whether the literal root of a nika:glob pattern
// (its segments before the first wildcard) can reach a path inside the fs
// globs (LANGUAGE.md §7.3: "a pattern root outside it is SEC-004").
func globRootAllowed(globs []string, pattern string) bool {
	root := literalSegments(pattern)
	if len(root) == 0 || (len(root) == 1 && root[0] == ".") {
		return true
	}
	abs := strings.HasPrefix(pattern, "/") || strings.HasPrefix(pattern, "~")
	for _, g := range globs {
		gAbs := strings.HasPrefix(g, "/") || strings.HasPrefix(g, "~")
		if gAbs != abs {
			return true // the run directory decides: left to the runtime check
		}
		prefix := literalSegments(g)
		n := min(len(prefix), len(root))
		same := true
		for i := 0; i < n; i++ {
			if prefix[i] != root[i] {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// grepRootAllowed reports whether nika:grep may search a literal path: a path the globs cover,
// or, as at run time, a relative directory some relative glob reaches below (`.` under
// `src/**` searches the files of src). An absolute or `~` path must be covered itself: the
// checker does not know the run directory the relative globs hang from.
func grepRootAllowed(globs []string, p string) bool {
	if fsAllowed(globs, p) {
		return true
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return false
	}
	var rel []string
	for _, g := range globs {
		if !strings.HasPrefix(g, "/") && !strings.HasPrefix(g, "~") {
			rel = append(rel, g)
		}
	}
	return len(rel) > 0 && globRootAllowed(rel, p)
}

// literalSegments are a glob's leading path segments without wildcards.
func literalSegments(g string) []string {
	var out []string
	for _, seg := range strings.Split(path.Clean(g), "/") {
		if strings.ContainsAny(seg, "*?[{") {
			break
		}
		if seg != "" {
			out = append(out, seg)
		}
	}
	return out
}

func fsGlob(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		ch := g[i]
		switch {
		case ch == '*' && i+1 < len(g) && g[i+1] == '*':
			i++
			if i+1 == len(g) && i >= 2 && g[i-2] == '/' {
				// `dir/**` covers dir itself too: back out the slash.
				str := b.String()
				b.Reset()
				b.WriteString(strings.TrimSuffix(str, "/") + "(/.*)?")
				continue
			}
			if i+1 < len(g) && g[i+1] == '/' {
				i++
				b.WriteString("(.*/)?")
			} else {
				b.WriteString(".*")
			}
		case ch == '*':
			b.WriteString("[^/]*")
		case ch == '?':
			b.WriteString("[^/]")
		case ch == '[':
			j := strings.IndexByte(g[i:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`^$`)
	}
	return re
}
