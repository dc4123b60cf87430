package spec

import "fmt"

// Pos is a position in a workflow file. Line and Column are 1-based, Column
// counts characters (runes), and Offset is the 0-based byte offset: the
// authoritative coordinate, from which line and column are derived.
type Pos struct {
	Line, Column, Offset int
}

// IsValid reports whether p was set; a zero Pos is never printed.
func (p Pos) IsValid() bool { return p.Line > 0 }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// Kind is the kind of a YAML node after YAML 1.2 core typing.
type Kind uint8

const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindMap
	KindSeq
	KindAlias
)

var kindNames = [...]string{"null", "boolean", "integer", "number", "string", "mapping", "list", "alias"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Style is how a scalar was written; positions inside expressions and some
// lints (folded-prompt) depend on it.
type Style uint8

const (
	StylePlain Style = iota
	StyleSingleQuoted
	StyleDoubleQuoted
	StyleLiteral // |
	StyleFolded  // >
	StyleFlow    // a flow collection: {…} or […]
	StyleBlock   // a block collection
)

// Node is one YAML node. Aliases are kept as nodes of KindAlias pointing at
// their anchored Target: they are never expanded while checking (D12).
type Node struct {
	Kind  Kind
	Style Style
	Pos   Pos
	// End is the position just after the last character of a scalar's source
	// text; it tells single-line scalars from multi-line ones.
	End Pos

	Str   string // decoded text of a string; the source text of other scalars
	Bool  bool
	Int   int64
	Float float64

	Pairs []*Pair // KindMap, in file order (duplicates kept; PARSE-017 reports them)
	Items []*Node // KindSeq

	Anchor string // set on the node that carries &name
	Alias  string // KindAlias: the alias name
	Target *Node  // KindAlias: the anchored node, nil when the anchor is unknown
}

// Pair is one key: value entry of a mapping.
type Pair struct {
	Key   *Node
	Value *Node
}

// Deref follows aliases to the anchored node. It returns n itself for other
// nodes and nil for a dangling alias.
func (n *Node) Deref() *Node {
	for i := 0; n != nil && n.Kind == KindAlias; i++ {
		if i > 64 { // anchors cannot nest aliases this deep; refuse loops
			return nil
		}
		n = n.Target
	}
	return n
}

// IsScalar reports whether n is a null, boolean, number or string.
func (n *Node) IsScalar() bool { return n != nil && n.Kind <= KindString }

// MultiLine reports whether a scalar's source spans several lines or is a
// block scalar; expression positions inside such scalars point at the scalar.
func (n *Node) MultiLine() bool {
	return n.Style == StyleLiteral || n.Style == StyleFolded || n.End.Line > n.Pos.Line
}

// Get returns the value of the first pair whose key is the string k.
func (n *Node) Get(k string) *Node {
	if p := n.Pair(k); p != nil {
		return p.Value
	}
	return nil
}

// Pair returns the first pair whose key is the string k.
func (n *Node) Pair(k string) *Pair {
	if n == nil || n.Kind != KindMap {
		return nil
	}
	for _, p := range n.Pairs {
		if p.Key.Kind == KindString && p.Key.Str == k {
			return p
		}
	}
	return nil
}

// File is a parsed workflow file.
type File struct {
	Name string
	Src  []byte
	Root *Node // nil when the file did not parse
	// lineStart[i] is the byte offset where line i+1 starts.
	lineStart []int
}

// Line returns the text of line l (1-based) without its newline.
func (f *File) Line(l int) string {
	if l < 1 || l > len(f.lineStart) {
		return ""
	}
	start := f.lineStart[l-1]
	end := len(f.Src)
	if l < len(f.lineStart) {
		end = f.lineStart[l] - 1 // the break: LF, CR, or the LF of CRLF
	}
	if end > start && end <= len(f.Src) && end-1 >= 0 && f.Src[end-1] == '\r' {
		end--
	}
	if end < start {
		return ""
	}
	return string(f.Src[start:end])
}
