package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// Duration is a time.Duration written in YAML as a Go duration string
// ("90s", "2m", "24h"). A bare number is rejected so that units are never
// guessed.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Ms returns the duration in milliseconds.
func (d Duration) Ms() int64 { return time.Duration(d).Milliseconds() }

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML implements yaml.NodeUnmarshaler: errors carry the line and
// column of the value.
func (d *Duration) UnmarshalYAML(node ast.Node) error {
	node = UnwrapNode(node)
	switch n := node.(type) {
	case *ast.NullNode:
		*d = 0
		return nil
	case *ast.StringNode:
		v, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			return NodeError(node, fmt.Sprintf("duration %q: want a Go duration string such as \"90s\", \"3m\" or \"24h\"", n.Value))
		}
		*d = Duration(v)
		return nil
	}
	var got string
	switch node.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		got = node.GetToken().Value + " (a bare number has no unit)"
	case *ast.SequenceNode:
		got = "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		got = "a mapping"
	case *ast.AliasNode:
		got = "an alias the decoder could not resolve"
	default:
		if t := node.GetToken(); t != nil {
			got = t.Value
		} else {
			got = fmt.Sprintf("a %s", node.Type())
		}
	}
	return NodeError(node, fmt.Sprintf("duration must be a Go duration string such as \"90s\" or \"3m\", got %s", got))
}

// Bytes is a size in bytes written in YAML with a unit: "64MiB", "2GiB"
// (KiB, MiB, GiB, TiB: powers of 1024; kB, MB, GB, TB: powers of 1000; B).
// A bare number is rejected so that units are never guessed.
type Bytes int64

// byteUnits are Bytes' units, longest first.
var byteUnits = []struct {
	unit string
	mult int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}

// ParseBytes parses a size with its unit (Bytes' syntax).
func ParseBytes(s string) (Bytes, error) {
	t := strings.TrimSpace(s)
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(t, u.unit)
		if !ok {
			continue
		}
		num = strings.TrimSpace(num)
		n, err := strconv.ParseFloat(num, 64)
		if err != nil || num == "" || n < 0 || n*float64(u.mult) > 1<<62 {
			break
		}
		return Bytes(n * float64(u.mult)), nil
	}
	return 0, fmt.Errorf("size %q: want a number and a unit, such as \"512MiB\" or \"2GiB\"", s)
}

// String formats the size in the largest power-of-1024 unit that divides
// it ("1GiB", "1536MiB", "100B").
func (b Bytes) String() string {
	for _, u := range []struct {
		unit string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.mult == 0 {
			return strconv.FormatInt(int64(b)/u.mult, 10) + u.unit
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// UnmarshalYAML implements yaml.NodeUnmarshaler: errors carry the line and
// column of the value.
func (b *Bytes) UnmarshalYAML(node ast.Node) error {
	node = UnwrapNode(node)
	switch n := node.(type) {
	case *ast.NullNode:
		*b = 0
		return nil
	case *ast.StringNode:
		v, err := ParseBytes(n.Value)
		if err != nil {
			return NodeError(node, err.Error())
		}
		*b = v
		return nil
	}
	got := "a " + node.Type().String()
	if t := node.GetToken(); t != nil {
		got = t.Value
	}
	if _, ok := node.(*ast.IntegerNode); ok {
		got += " (a bare number has no unit)"
	}
	return NodeError(node, fmt.Sprintf("size must be a number with a unit such as \"512MiB\" or \"2GiB\", got %s", got))
}

// MarshalYAML writes the size as its String.
func (b Bytes) MarshalYAML() (any, error) { return b.String(), nil }

// MarshalJSON writes the size as its String, so a checkpoint's spec reads
// as the YAML did.
func (b Bytes) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(b.String())), nil }

// UnmarshalJSON reads MarshalJSON's string.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	s, err := strconv.Unquote(string(data))
	if err != nil {
		return fmt.Errorf("size: %w", err)
	}
	v, err := ParseBytes(s)
	*b = v
	return err
}

// UnwrapNode returns the node under YAML anchors and tags.
func UnwrapNode(node ast.Node) ast.Node {
	for {
		switch n := node.(type) {
		case *ast.AnchorNode:
			if n.Value == nil {
				return node
			}
			node = n.Value
		case *ast.TagNode:
			if n.Value == nil {
				return node
			}
			node = n.Value
		default:
			return node
		}
	}
}

// NodeError returns an error positioned at node, shown with its line by
// yaml.FormatError (a plain error for a node without a token).
func NodeError(node ast.Node, msg string) error {
	if node == nil || node.GetToken() == nil {
		return errors.New(msg)
	}
	return &yaml.SyntaxError{Message: msg, Token: node.GetToken()}
}

// ScalarText returns the text of a scalar node as written: a number keeps
// its literal ("2.50", not 2.5).
func ScalarText(node ast.Node) (string, bool) {
	switch n := UnwrapNode(node).(type) {
	case *ast.StringNode:
		return n.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	case *ast.LiteralNode:
		return n.Value.Value, true
	}
	return "", false
}

// MapEntries returns the key/value pairs of a mapping node, in order (none
// for null), or NodeError(node, errMsg) for any other node.
func MapEntries(node ast.Node, errMsg string) ([]*ast.MappingValueNode, error) {
	switch n := UnwrapNode(node).(type) {
	case *ast.MappingNode:
		return n.Values, nil
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{n}, nil
	case *ast.NullNode:
		return nil, nil
	}
	return nil, NodeError(node, errMsg)
}

// MarshalYAML implements yaml.InterfaceMarshaler.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// NamedExpr is one entry of an ordered name → expression map, such as a
// derived field or an aggregate.
type NamedExpr struct {
	Name string
	Expr string
}

// NamedExprs is an ordered map from names to expressions; YAML order is kept
// because a derived field may use the fields before it. A value that YAML
// reads as a number or bool is turned back into text with fmt.Sprint, so
// an unquoted decimal loses its written scale (2.50 becomes "2.5"): quote
// such expressions.
type NamedExprs []NamedExpr

// UnmarshalYAML implements yaml.NodeUnmarshaler, keeping key order and the
// written text of unquoted numbers; errors carry the line and column.
func (n *NamedExprs) UnmarshalYAML(node ast.Node) error {
	entries, err := MapEntries(node, "a map of expressions must be a mapping of names to values")
	if err != nil {
		return err
	}
	out := make(NamedExprs, 0, len(entries))
	for _, e := range entries {
		k, ok := ScalarText(e.Key)
		if !ok {
			return NodeError(e.Key, "names must be plain strings")
		}
		v, ok := ScalarText(e.Value)
		if !ok || strings.TrimSpace(v) == "" {
			msg := fmt.Sprintf("%s: the expression is empty", k)
			if strings.ContainsAny(k, "()") {
				msg += " (in a flow mapping {a: f(x, y)} a comma ends the entry: quote expressions that hold commas)"
			}
			return NodeError(e.Key, msg)
		}
		out = append(out, NamedExpr{Name: k, Expr: v})
	}
	*n = out
	return nil
}

// MarshalYAML implements yaml.InterfaceMarshaler.
func (n NamedExprs) MarshalYAML() (any, error) {
	ms := make(yaml.MapSlice, 0, len(n))
	for _, e := range n {
		ms = append(ms, yaml.MapItem{Key: e.Name, Value: e.Expr})
	}
	return ms, nil
}

// FieldType is one declared source field and its type name.
type FieldType struct {
	Name string
	Type string // bool, int, decimal, string, timestamp
}

// FieldTypes is an ordered map from field names to type names.
type FieldTypes []FieldType

// UnmarshalYAML implements yaml.NodeUnmarshaler, keeping key order; errors
// carry the line and column.
func (f *FieldTypes) UnmarshalYAML(node ast.Node) error {
	entries, err := MapEntries(node, "a schema must be a mapping of names to values")
	if err != nil {
		return err
	}
	out := make(FieldTypes, 0, len(entries))
	for _, e := range entries {
		k, ok := ScalarText(e.Key)
		if !ok {
			return NodeError(e.Key, "field names must be plain strings")
		}
		v, ok := ScalarText(e.Value)
		if !ok {
			return NodeError(e.Value, fmt.Sprintf("%s: type must be a string such as int or decimal", k))
		}
		out = append(out, FieldType{Name: k, Type: v})
	}
	*f = out
	return nil
}

// MarshalYAML implements yaml.InterfaceMarshaler.
func (f FieldTypes) MarshalYAML() (any, error) {
	ms := make(yaml.MapSlice, 0, len(f))
	for _, e := range f {
		ms = append(ms, yaml.MapItem{Key: e.Name, Value: e.Type})
	}
	return ms, nil
}

// Lookup returns the declared type of name.
func (f FieldTypes) Lookup(name string) (string, bool) {
	for _, e := range f {
		if e.Name == name {
			return e.Type, true
		}
	}
	return "", false
}

// HostPorts is a list of "host:port" addresses (Kafka brokers). Besides a
// YAML list of strings it accepts one comma-separated string
// ("a:9092,b:9092") and the unquoted flow form [localhost:9092], which
// YAML reads as a one-entry mapping {localhost: 9092}.
type HostPorts []string

// UnmarshalYAML implements yaml.NodeUnmarshaler; errors carry the line and
// column of the value.
func (h *HostPorts) UnmarshalYAML(node ast.Node) error {
	node = UnwrapNode(node)
	var out HostPorts
	var add func(n ast.Node) error
	add = func(n ast.Node) error {
		n = UnwrapNode(n)
		switch v := n.(type) {
		case *ast.NullNode:
			return nil
		case *ast.SequenceNode:
			for _, x := range v.Values {
				if err := add(x); err != nil {
					return err
				}
			}
			return nil
		case *ast.MappingNode, *ast.MappingValueNode:
			entries, err := MapEntries(n, "a broker must be host:port")
			if err != nil {
				return err
			}
			for _, e := range entries {
				k, ok1 := ScalarText(e.Key)
				p, ok2 := ScalarText(e.Value)
				if !ok1 || !ok2 {
					return NodeError(n, "a broker must be host:port")
				}
				out = append(out, k+":"+p)
			}
			return nil
		}
		s, ok := ScalarText(n)
		if !ok {
			return NodeError(n, "a broker must be host:port")
		}
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		return nil
	}
	if err := add(node); err != nil {
		return err
	}
	*h = out
	return nil
}

// Ratio is a share between 0 and 1, written as a number (0.001) or a
// percentage ("0.1%").
type Ratio float64

// UnmarshalYAML implements yaml.NodeUnmarshaler; errors carry the line and
// column of the value.
func (r *Ratio) UnmarshalYAML(node ast.Node) error {
	node = UnwrapNode(node)
	s, ok := ScalarText(node)
	if !ok {
		return NodeError(node, "a ratio must be a number (0.001) or a percentage (\"0.1%\")")
	}
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil {
		return NodeError(node, fmt.Sprintf("ratio %q: want a number (0.001) or a percentage (\"0.1%%\")", s))
	}
	if pct {
		// Shift the decimal point in text: 99.9/100 in floating point is
		// 0.9990000000000001.
		if v2, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%"))+"e-2", 64); err == nil {
			v = v2
		} else {
			v /= 100
		}
	}
	*r = Ratio(v)
	return nil
}
