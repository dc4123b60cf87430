package spec

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Parse reads one workflow file into an AST whose every node keeps its
// position. The findings are the YAML-level ones (PARSE-001 syntax and
// profile, PARSE-017 duplicate keys, PARSE-019 non-string keys and integers
// outside int64). On a syntax error the File has no Root and the syntax error
// is the only finding (LANGUAGE.md §9.2). Parse never panics.
func Parse(name string, src []byte) (f *File, findings []Finding) {
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	f = &File{Name: name, Src: src, lineStart: lineStarts(src)}
	p := &yamlParser{file: f, anchors: map[string]*Node{}}
	defer func() {
		if r := recover(); r != nil {
			f.Root = nil
			findings = []Finding{p.newFinding(CodeParseSyntax, Pos{Line: 1, Column: 1}, "",
				fmt.Sprintf("the YAML parser failed: %v", r), "Check the file's YAML syntax near the top of the file.")}
		}
	}()
	if !utf8.Valid(src) {
		off := firstInvalidUTF8(src)
		pos := f.posOfOffset(off)
		return f, []Finding{p.newFinding(CodeParseSyntax, pos, "", "the file is not valid UTF-8",
			"Save the file as UTF-8; the first invalid byte is here.")}
	}
	if off := tooDeep(src); off >= 0 {
		return f, []Finding{p.newFinding(CodeParseSyntax, f.posOfOffset(off), "",
			fmt.Sprintf("flow collections nest deeper than %d levels", maxFlowDepth),
			"Flatten the value: a workflow never needs such deep nesting.")}
	}
	astFile, err := parser.ParseBytes(src, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return f, []Finding{p.syntaxFinding(err)}
	}
	var docs []*ast.DocumentNode
	for _, d := range astFile.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if _, isDirective := d.Body.(*ast.DirectiveNode); isDirective {
			continue // %YAML 1.2 and friends: not a document of their own
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		f.Root = &Node{Kind: KindNull, Pos: Pos{Line: 1, Column: 1}}
		return f, nil
	}
	f.Root = p.convert(docs[0].Body, "")
	if len(docs) > 1 { // reported once, at the second document
		d := docs[1]
		pos := p.pos(d.Body.GetToken())
		if d.Start != nil {
			pos = p.pos(d.Start)
		}
		p.add(CodeParseSyntax, pos, "", "a second YAML document",
			"A workflow file holds exactly one YAML document: remove the `---` separator and what follows, or move it to its own file.")
	}
	return f, p.findings
}

type yamlParser struct {
	curPath  string // path of the scalar being retyped, for its findings
	file     *File
	anchors  map[string]*Node
	findings []Finding
}

func (p *yamlParser) newFinding(code string, pos Pos, path, msg, detail string) Finding {
	return newFinding(p.file.Name, code, pos, path, msg, detail)
}

func (p *yamlParser) add(code string, pos Pos, path, msg, detail string) {
	p.findings = append(p.findings, p.newFinding(code, pos, path, msg, detail))
}

func (p *yamlParser) syntaxFinding(err error) Finding {
	type tokenError interface {
		GetToken() *token.Token
		GetMessage() string
	}
	pos := Pos{Line: 1, Column: 1}
	msg := err.Error()
	if te, ok := err.(tokenError); ok {
		msg = te.GetMessage()
		if tok := te.GetToken(); tok != nil && tok.Position != nil {
			pos = p.pos(tok)
		}
	}
	detail := "Fix the YAML syntax at this position."
	if strings.Contains(msg, "tab character") {
		detail = "Replace the tab with spaces: nika's YAML parser accepts tabs only inside scalars."
	}
	if line := p.file.Line(pos.Line); strings.Contains(msg, "'\t'") || (strings.Contains(line, "\t") && strings.TrimLeft(line, " \t") != line && strings.ContainsRune(line[:len(line)-len(strings.TrimLeft(line, " \t"))], '\t')) {
		msg = "a tab character in indentation"
		detail = "YAML indents with spaces only: replace the tab with spaces."
	}
	return p.newFinding(CodeParseSyntax, pos, "", "YAML syntax error: "+oneLine(msg), detail)
}

// pos converts a goccy token position (rune columns) into a Pos with a byte
// offset computed from the source, which is authoritative.
func (p *yamlParser) pos(tok *token.Token) Pos {
	if tok == nil || tok.Position == nil {
		return Pos{Line: 1, Column: 1}
	}
	return p.file.posOfLineCol(tok.Position.Line, tok.Position.Column)
}

func (f *File) posOfLineCol(line, col int) Pos {
	if line < 1 {
		line = 1
	}
	if line > len(f.lineStart) {
		line = len(f.lineStart)
	}
	if col < 1 {
		col = 1
	}
	off := f.lineStart[line-1]
	for i := 1; i < col && off < len(f.Src) && f.Src[off] != '\n'; i++ {
		_, size := utf8.DecodeRune(f.Src[off:])
		off += size
	}
	return Pos{Line: line, Column: col, Offset: off}
}

func (f *File) posOfOffset(off int) Pos {
	if off > len(f.Src) {
		off = len(f.Src)
	}
	line := 1
	for line < len(f.lineStart) && f.lineStart[line] <= off {
		line++
	}
	col := 1 + utf8.RuneCount(f.Src[f.lineStart[line-1]:off])
	return Pos{Line: line, Column: col, Offset: off}
}

// align moves a scalar's position forward on its line to where its source
// text starts: goccy's columns can lag behind after a tab separator.
func (f *File) align(pos Pos, raw string) Pos {
	if raw == "" || pos.Offset >= len(f.Src) {
		return pos
	}
	first := raw
	if i := strings.IndexAny(first, "\r\n"); i >= 0 {
		first = first[:i]
	}
	if first == "" || bytes.HasPrefix(f.Src[pos.Offset:], []byte(first)) {
		return pos
	}
	line := f.Line(pos.Line)
	col0 := pos.Offset - f.lineStart[pos.Line-1]
	if col0 < 0 || col0 > len(line) {
		return pos
	}
	if j := strings.Index(line[col0:], first); j > 0 && j <= 8 {
		return f.Advance(pos, j)
	}
	return pos
}

// Advance returns the position n bytes after p on the same line.
func (f *File) Advance(p Pos, n int) Pos {
	if n <= 0 || p.Offset+n > len(f.Src) {
		return p
	}
	return Pos{Line: p.Line, Column: p.Column + utf8.RuneCount(f.Src[p.Offset:p.Offset+n]), Offset: p.Offset + n}
}

// lineStarts indexes line breaks: LF, CRLF and a lone CR, as YAML 1.2 §5.4.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, b := range src {
		switch {
		case b == '\n':
			starts = append(starts, i+1)
		case b == '\r' && (i+1 == len(src) || src[i+1] != '\n'):
			starts = append(starts, i+1)
		}
	}
	return starts
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}

var allowedTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!seq": true, "!!map": true}

func (p *yamlParser) convert(n ast.Node, path string) *Node {
	switch v := n.(type) {
	case nil:
		return &Node{Kind: KindNull}
	case *ast.DocumentNode:
		return p.convert(v.Body, path)
	case *ast.AnchorNode:
		target := p.convert(v.Value, path)
		name := ""
		if v.Name != nil {
			name = v.Name.GetToken().Value
		}
		target.Anchor = name
		if target.Pos.Line == 0 {
			target.Pos = p.pos(v.GetToken())
		}
		p.anchors[name] = target
		return target
	case *ast.AliasNode:
		name := ""
		if v.Value != nil {
			name = v.Value.GetToken().Value
		}
		return &Node{Kind: KindAlias, Alias: name, Target: p.anchors[name], Pos: p.pos(v.GetToken())}
	case *ast.TagNode:
		tag := v.Start.Value
		pos := p.pos(v.Start)
		if !allowedTags[tag] {
			p.add(CodeParseSyntax, pos, path, fmt.Sprintf("the YAML tag %q is not allowed", tag),
				"Remove the tag: nika accepts only the core tags !!str, !!int, !!float, !!bool, !!null, !!seq and !!map.")
			return p.convert(v.Value, path)
		}
		out := p.convert(v.Value, path)
		p.applyTag(out, tag, pos, path)
		out.Pos = pos
		return out
	case *ast.MappingNode:
		out := &Node{Kind: KindMap, Pos: p.pos(v.GetToken()), Style: StyleBlock}
		if v.IsFlowStyle {
			out.Style = StyleFlow
		}
		for _, mv := range v.Values {
			p.addPair(out, mv, path)
		}
		if len(v.Values) > 0 && !v.IsFlowStyle {
			out.Pos = p.keyPos(v.Values[0])
		}
		p.checkDuplicates(out, path)
		return out
	case *ast.MappingValueNode:
		out := &Node{Kind: KindMap, Style: StyleBlock}
		p.addPair(out, v, path)
		out.Pos = p.keyPos(v)
		return out
	case *ast.SequenceNode:
		out := &Node{Kind: KindSeq, Pos: p.pos(v.GetToken()), Style: StyleBlock}
		if v.IsFlowStyle {
			out.Style = StyleFlow
		}
		for i, item := range v.Values {
			out.Items = append(out.Items, p.convert(item, pathIndex(path, i)))
		}
		return out
	case *ast.LiteralNode:
		out := &Node{Kind: KindString, Pos: p.pos(v.GetToken()), Style: StyleLiteral}
		if strings.HasPrefix(v.Start.Value, ">") {
			out.Style = StyleFolded
		}
		if v.Value != nil {
			out.Str = v.Value.Value
		}
		out.End = Pos{Line: out.Pos.Line + 1}
		return out
	case *ast.MergeKeyNode:
		p.add(CodeParseSyntax, p.pos(v.GetToken()), path, "the YAML merge key `<<` is not allowed",
			"Write the keys out, or reuse a whole value with an alias (`*name`).")
		return &Node{Kind: KindNull, Pos: p.pos(v.GetToken())}
	case *ast.CommentGroupNode, *ast.CommentNode:
		return &Node{Kind: KindNull}
	}
	return p.scalar(n, path)
}

// applyTag types a scalar by its explicit core tag: `!!int "3"` is the
// integer 3. A value its tag cannot hold is NIKA-PARSE-001.
func (p *yamlParser) applyTag(n *Node, tag string, pos Pos, path string) {
	if !n.IsScalar() {
		if (tag == "!!seq" && n.Kind != KindSeq) || (tag == "!!map" && n.Kind != KindMap) || (tag != "!!seq" && tag != "!!map" && n.Kind != KindAlias) {
			p.add(CodeParseSyntax, pos, path, fmt.Sprintf("a %s cannot be tagged %s", n.Kind, tag), "Remove the tag, or give it a value of that type.")
		}
		return
	}
	text := n.Str
	if n.Kind != KindString {
		text = strings.TrimSpace(text)
	}
	probe := &Node{Pos: n.Pos}
	p.retype(probe, text)
	ok := true
	switch tag {
	case "!!str":
		n.Kind, n.Str = KindString, text
		return
	case "!!int":
		ok = probe.Kind == KindInt
	case "!!float":
		ok = probe.Kind == KindFloat || probe.Kind == KindInt
		if probe.Kind == KindInt {
			probe.Kind, probe.Float = KindFloat, float64(probe.Int)
		}
	case "!!bool":
		ok = probe.Kind == KindBool
	case "!!null":
		ok = probe.Kind == KindNull
	default:
		ok = false
	}
	if !ok {
		p.add(CodeParseSyntax, pos, path, fmt.Sprintf("%q is not a valid %s", text, tag), "Write a value of the tag's type, or remove the tag.")
		return
	}
	n.Kind, n.Int, n.Float, n.Bool, n.Str = probe.Kind, probe.Int, probe.Float, probe.Bool, text
}

func (p *yamlParser) keyPos(mv *ast.MappingValueNode) Pos {
	if mv.Key != nil {
		return p.convertKeyPos(mv.Key)
	}
	return p.pos(mv.GetToken())
}

func (p *yamlParser) convertKeyPos(k ast.MapKeyNode) Pos {
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		return p.pos(mk.GetToken())
	}
	if t, ok := k.(*ast.TagNode); ok {
		return p.pos(t.Start)
	}
	return p.pos(k.GetToken())
}

func (p *yamlParser) addPair(m *Node, mv *ast.MappingValueNode, path string) {
	var keyAST ast.Node = mv.Key
	if mk, ok := mv.Key.(*ast.MappingKeyNode); ok {
		keyAST = mk.Value
	}
	if _, isMerge := keyAST.(*ast.MergeKeyNode); isMerge {
		p.convert(keyAST, path)
		return
	}
	key := p.convert(keyAST, path)
	if key.Pos.Line == 0 {
		key.Pos = p.pos(mv.GetToken())
	}
	kd := key.Deref()
	if kd == nil || kd.Kind != KindString {
		// Reported here and left out of the mapping, so no later stage
		// reports the same key again.
		kind := "an alias to nothing"
		if kd != nil {
			kind = withArticle(kd.Kind.String())
		}
		p.add(CodeParseShape, key.Pos, path, fmt.Sprintf("a mapping key is %s, not a string", kind),
			"Quote the key so it is a string, e.g. \"1\": or \"true\":.")
		return
	}
	if key.Kind == KindAlias {
		key = &Node{Kind: KindString, Str: kd.Str, Pos: key.Pos, End: key.End}
	}
	val := p.convert(mv.Value, pathKey(path, key.Str))
	if val.Pos.Line == 0 {
		// An empty value (`key:`): point just after the colon.
		val.Pos = p.pos(mv.GetToken())
	}
	m.Pairs = append(m.Pairs, &Pair{Key: key, Value: val})
}

func (p *yamlParser) checkDuplicates(m *Node, path string) {
	if len(m.Pairs) < 2 {
		return
	}
	seen := make(map[string]*Pair, len(m.Pairs))
	for _, pr := range m.Pairs {
		if pr.Key.Kind != KindString {
			continue
		}
		if first, dup := seen[pr.Key.Str]; dup {
			p.add(CodeParseDuplicateKey, pr.Key.Pos, pathKey(path, pr.Key.Str), fmt.Sprintf("duplicate key %q", pr.Key.Str),
				fmt.Sprintf("The key %q is already set at %s: remove one of them or merge their contents.", pr.Key.Str, first.Key.Pos))
			continue
		}
		seen[pr.Key.Str] = pr
	}
}

func (p *yamlParser) scalar(n ast.Node, path string) *Node {
	tok := n.GetToken()
	raw := strings.TrimSpace(tok.Origin)
	out := &Node{Pos: p.file.align(p.pos(tok), raw)}
	out.End = Pos{Line: out.Pos.Line + strings.Count(raw, "\n")}
	switch tok.Type {
	case token.SingleQuoteType:
		out.Kind, out.Style, out.Str = KindString, StyleSingleQuoted, tok.Value
		return out
	case token.DoubleQuoteType:
		out.Kind, out.Style, out.Str = KindString, StyleDoubleQuoted, tok.Value
		return out
	}
	if sn, ok := n.(*ast.StringNode); ok && (strings.HasPrefix(raw, "'") || strings.HasPrefix(raw, "\"")) {
		out.Kind, out.Str = KindString, sn.Value
		out.Style = StyleDoubleQuoted
		if raw[0] == '\'' {
			out.Style = StyleSingleQuoted
		}
		return out
	}
	text := tok.Value
	if sn, ok := n.(*ast.StringNode); ok {
		text = sn.Value
	}
	if _, isNull := n.(*ast.NullNode); isNull && tok.Type != token.NullType {
		text = "" // an empty value
	}
	p.curPath = path
	p.retype(out, text)
	return out
}

var (
	reInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	reOct   = regexp.MustCompile(`^0o[0-7]+$`)
	reHex   = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	reFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
)

// retype applies the YAML 1.2 core schema to a plain scalar's text (D12).
func (p *yamlParser) retype(out *Node, text string) {
	out.Str = text
	switch text {
	case "", "~", "null", "Null", "NULL":
		out.Kind = KindNull
		return
	case "true", "True", "TRUE":
		out.Kind, out.Bool = KindBool, true
		return
	case "false", "False", "FALSE":
		out.Kind = KindBool
		return
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		out.Kind, out.Float = KindFloat, math.Inf(1)
		return
	case "-.inf", "-.Inf", "-.INF":
		out.Kind, out.Float = KindFloat, math.Inf(-1)
		return
	case ".nan", ".NaN", ".NAN":
		out.Kind, out.Float = KindFloat, math.NaN()
		return
	}
	var (
		i   int64
		err error
		isI = true
	)
	switch {
	case reInt.MatchString(text):
		i, err = strconv.ParseInt(text, 10, 64)
	case reOct.MatchString(text):
		i, err = strconv.ParseInt(text[2:], 8, 64)
	case reHex.MatchString(text):
		i, err = strconv.ParseInt(text[2:], 16, 64)
	default:
		isI = false
	}
	if isI {
		out.Kind = KindInt
		if err != nil {
			p.add(CodeParseShape, out.Pos, p.curPath, fmt.Sprintf("the integer %s does not fit in 64 bits", text),
				"Use an integer between -9223372036854775808 and 9223372036854775807, or quote it to make it a string.")
			out.Kind = KindString
			return
		}
		out.Int = i
		return
	}
	if reFloat.MatchString(text) {
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			out.Kind, out.Float = KindFloat, f
			return
		}
	}
	out.Kind = KindString
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// maxFlowDepth bounds `[`/`{` nesting before the YAML parser sees the file:
// the parser's cost grows much faster than the input on deep nesting.
const maxFlowDepth = 256

// tooDeep returns the offset where flow nesting first exceeds maxFlowDepth,
// or -1. Quoted scalars and comments are skipped; the count is approximate
// (a plain scalar may hold brackets) but only ever errs on files no
// workflow resembles.
func tooDeep(src []byte) int {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '[', '{':
			depth++
			if depth > maxFlowDepth {
				return i
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case '"':
			for i++; i < len(src) && src[i] != '"' && src[i] != '\n'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(src) && src[i] != '\'' && src[i] != '\n'; i++ {
			}
		case '#':
			if i == 0 || src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\n' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			}
		}
	}
	return -1
}
