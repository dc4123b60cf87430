package spec

import "errors"

// Materialization limits (D12): an alias-heavy document could otherwise
// expand exponentially ("billion laughs"). They bound every literal value,
// aliased or not; the nesting bound keeps a self-referencing anchor finite.
const (
	maxValueNodes = 10000
	maxValueBytes = 1 << 20
	maxValueDepth = 1000
)

// Which materialization limit a value passed.
const (
	limitNodes = "nodes"
	limitBytes = "bytes"
	limitDepth = "depth"
)

// valueTooLargeError is returned by Value when a value passes a D12 limit;
// the checker reports it as NIKA-PARSE-001 (valueTooLarge). It says which
// limit, and whether expanding aliases is what passed it: Aliases is true
// only when the value as written is within the limits.
type valueTooLargeError struct {
	Limit   string // limitNodes, limitBytes or limitDepth
	Aliases bool
}

func (e *valueTooLargeError) Error() string {
	what := map[string]string{
		limitNodes: "more than 10,000 nodes",
		limitBytes: "more than 1 MiB of strings, keys and numbers",
		limitDepth: "more than 1,000 levels of nesting",
	}[e.Limit]
	subject := "the value has "
	if e.Aliases {
		subject = "with its aliases expanded, the value has "
	}
	return subject + what + "; a literal value may have at most 10,000 nodes and 1 MiB, nested at most 1,000 deep"
}

// detail is the finding's advice.
func (e *valueTooLargeError) detail() string {
	if e.Aliases {
		return "Reuse smaller anchors, or fewer aliases of them: every alias counts its anchor's whole value again."
	}
	return "Make the value smaller, or keep the data in a file the workflow reads at run time (nika:read)."
}

// tooLarge describes n, whose expansion passed limit.
func tooLarge(n *Node, limit string) *valueTooLargeError {
	raw := rawBudget{nodes: maxValueNodes, bytes: maxValueBytes}
	return &valueTooLargeError{Limit: limit, Aliases: raw.within(n, 0)}
}

// rawBudget measures a value as written: an alias is one node, never its
// anchor's value.
type rawBudget struct{ nodes, bytes int }

// within reports whether n as written stays within the limits.
func (b *rawBudget) within(n *Node, depth int) bool {
	b.nodes--
	if n == nil {
		return b.nodes >= 0
	}
	switch n.Kind {
	case KindInt, KindFloat:
		b.bytes -= 8
	case KindString:
		b.bytes -= len(n.Str)
	}
	if b.nodes < 0 || b.bytes < 0 || depth > maxValueDepth {
		return false
	}
	for _, it := range n.Items {
		if !b.within(it, depth+1) {
			return false
		}
	}
	for _, p := range n.Pairs {
		if p.Key != nil && p.Key.Kind == KindString {
			b.bytes -= len(p.Key.Str)
		}
		if !b.within(p.Value, depth+1) {
			return false
		}
	}
	return true
}

// valueTooLarge reports err, from Value, as NIKA-PARSE-001 at n.
func (c *checker) valueTooLarge(n *Node, path string, err error) {
	detail := "Make the value smaller."
	var tl *valueTooLargeError
	if errors.As(err, &tl) {
		detail = tl.detail()
	}
	c.errorf(CodeParseSyntax, n, path, detail, "%v", err)
}

// Value converts a node into the nika value model (nil, bool, int, float64,
// string, []any, map[string]any), expanding aliases under the D12 limits.
// Duplicate keys keep their first value.
func (n *Node) Value() (any, error) {
	v, err := n.ValueWithin(ValueLimits{Nodes: maxValueNodes, Bytes: maxValueBytes, Depth: maxValueDepth})
	var le *ValueLimitError
	if errors.As(err, &le) {
		return nil, tooLarge(n, le.Limit)
	}
	return v, err
}

// ValueLimits bound one materialization (Node.ValueWithin). They are counted with aliases
// expanded: every node counts one, a number 8 bytes, a string and a mapping key their length.
type ValueLimits struct {
	Nodes, Bytes, Depth int
	// NoDanglingAliases makes an alias to an unknown anchor ErrUnknownAnchor; otherwise it
	// reads as null (the checker reports such aliases on its own).
	NoDanglingAliases bool
}

// ErrUnknownAnchor is ValueWithin's error for an alias to an unknown anchor, under
// ValueLimits.NoDanglingAliases.
var ErrUnknownAnchor = errors.New("an alias refers to an unknown anchor")

// ValueLimitError is ValueWithin's error for a value that passes one of its limits.
type ValueLimitError struct {
	Limit string // "nodes", "bytes" or "depth"
}

func (e *ValueLimitError) Error() string {
	return "the value passes its " + e.Limit + " limit"
}

// ValueWithin converts a node into the nika value model as Value does, under other limits:
// workflow files use Value's D12 limits, the YAML data of nika:convert and nika:validate larger
// ones. Passing a limit is a *ValueLimitError.
func (n *Node) ValueWithin(lim ValueLimits) (any, error) {
	b := valueBudget{nodes: lim.Nodes, bytes: lim.Bytes, lim: lim}
	return b.value(n, 0)
}

// valueBudget is what is left of the limits during one materialization.
type valueBudget struct {
	nodes, bytes int
	lim          ValueLimits
}

func (b *valueBudget) value(n *Node, depth int) (any, error) {
	if n != nil && n.Kind == KindAlias {
		if n = n.Deref(); n == nil && b.lim.NoDanglingAliases {
			return nil, ErrUnknownAnchor
		}
	}
	b.nodes--
	switch {
	case b.nodes < 0:
		return nil, &ValueLimitError{Limit: limitNodes}
	case b.bytes < 0:
		return nil, &ValueLimitError{Limit: limitBytes}
	case depth > b.lim.Depth:
		return nil, &ValueLimitError{Limit: limitDepth}
	}
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case KindNull:
		return nil, nil
	case KindBool:
		return n.Bool, nil
	case KindInt:
		b.bytes -= 8
		return int(n.Int), nil
	case KindFloat:
		b.bytes -= 8
		return n.Float, nil
	case KindString:
		b.bytes -= len(n.Str)
		if b.bytes < 0 {
			return nil, &ValueLimitError{Limit: limitBytes}
		}
		return n.Str, nil
	case KindSeq:
		out := make([]any, 0, len(n.Items))
		for _, it := range n.Items {
			v, err := b.value(it, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case KindMap:
		// Parse leaves keys that are not strings out of the mapping, and reports duplicate
		// keys (PARSE-017); what is left of them here is skipped.
		out := make(map[string]any, len(n.Pairs))
		for _, p := range n.Pairs {
			if p.Key.Kind != KindString {
				continue
			}
			if _, dup := out[p.Key.Str]; dup {
				continue
			}
			b.bytes -= len(p.Key.Str)
			v, err := b.value(p.Value, depth+1)
			if err != nil {
				return nil, err
			}
			out[p.Key.Str] = v
		}
		return out, nil
	}
	return nil, nil
}
