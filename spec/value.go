package spec

import "errors"

// Materialization limits (D12): an alias-heavy document could otherwise
// expand exponentially ("billion laughs").
const (
	maxValueNodes = 10000
	maxValueBytes = 1 << 20
)

// errValueTooLarge is returned by Value when expanding aliases would exceed
// the limits; the checker reports it as NIKA-PARSE-001.
var errValueTooLarge = errors.New("the value expands to more than 10,000 nodes or 1 MiB (alias expansion)")

// Value converts a node into the nika value model (nil, bool, int, float64,
// string, []any, map[string]any), expanding aliases under the D12 limits.
// Duplicate keys keep their first value.
func (n *Node) Value() (any, error) {
	b := valueBudget{nodes: maxValueNodes, bytes: maxValueBytes}
	return b.value(n, 0)
}

type valueBudget struct{ nodes, bytes int }

func (b *valueBudget) value(n *Node, depth int) (any, error) {
	n = n.Deref()
	b.nodes--
	if b.nodes < 0 || b.bytes < 0 || depth > 1000 {
		return nil, errValueTooLarge
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
			return nil, errValueTooLarge
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
