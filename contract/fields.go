package contract

import (
	"errors"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// UnmarshalYAML implements yaml.NodeUnmarshaler: it decodes a mapping of
// field names to declarations, keeping their order. A declaration is a
// mapping with the keys type, required, metadata and description, or the
// type alone (`amount: decimal`); an empty value (`amount:`) declares the
// field without a type, which Validate reports. Errors carry the line and
// column.
func (fs *Fields) UnmarshalYAML(node ast.Node) error {
	entries, err := mapEntries(node, "fields")
	if err != nil {
		return err
	}
	out := make(Fields, 0, len(entries))
	for _, e := range entries {
		name, ok := scalarText(e.Key)
		if !ok {
			return nodeError(e.Key, "field names must be plain strings")
		}
		f := Field{Name: name}
		switch v := unwrap(e.Value).(type) {
		case *ast.NullNode:
		case *ast.MappingNode, *ast.MappingValueNode:
			if err := decodeField(&f, v); err != nil {
				return err
			}
		default:
			t, ok := scalarText(v)
			if !ok {
				return nodeError(e.Value, fmt.Sprintf("%s: want a type such as decimal, or a mapping {type: decimal, required: true}", name))
			}
			f.Type = t
		}
		out = append(out, f)
	}
	*fs = out
	return nil
}

// decodeField reads the keys of one field's mapping into f.
func decodeField(f *Field, node ast.Node) error {
	entries, err := mapEntries(node, f.Name)
	if err != nil {
		return err
	}
	for _, e := range entries {
		k, ok := scalarText(e.Key)
		if !ok {
			return nodeError(e.Key, fmt.Sprintf("%s: keys must be plain strings", f.Name))
		}
		switch k {
		case "type":
			if _, null := unwrap(e.Value).(*ast.NullNode); null {
				continue
			}
			t, ok := scalarText(e.Value)
			if !ok {
				return nodeError(e.Value, fmt.Sprintf("%s.type: want a type name such as int or decimal", f.Name))
			}
			f.Type = t
		case "required", "metadata":
			b, err := boolValue(e.Value, f.Name+"."+k)
			if err != nil {
				return err
			}
			if k == "required" {
				f.Required = b
			} else {
				f.Metadata = b
			}
		case "description":
			if _, null := unwrap(e.Value).(*ast.NullNode); null {
				continue
			}
			d, ok := scalarText(e.Value)
			if !ok {
				return nodeError(e.Value, fmt.Sprintf("%s.description: want text", f.Name))
			}
			f.Description = d
		default:
			return nodeError(e.Key, fmt.Sprintf("%s: unknown key %q (want type, required, metadata or description)", f.Name, k))
		}
	}
	return nil
}

// boolValue reads a YAML boolean; null is false.
func boolValue(node ast.Node, key string) (bool, error) {
	switch n := unwrap(node).(type) {
	case *ast.BoolNode:
		return n.Value, nil
	case *ast.NullNode:
		return false, nil
	}
	return false, nodeError(node, fmt.Sprintf("%s: want true or false", key))
}

// MarshalYAML implements yaml.InterfaceMarshaler: a mapping of names to
// declarations, in order.
func (fs Fields) MarshalYAML() (any, error) {
	ms := make(yaml.MapSlice, 0, len(fs))
	for _, f := range fs {
		d := yaml.MapSlice{{Key: "type", Value: f.Type}}
		if f.Required {
			d = append(d, yaml.MapItem{Key: "required", Value: true})
		}
		if f.Metadata {
			d = append(d, yaml.MapItem{Key: "metadata", Value: true})
		}
		if f.Description != "" {
			d = append(d, yaml.MapItem{Key: "description", Value: f.Description})
		}
		ms = append(ms, yaml.MapItem{Key: f.Name, Value: d})
	}
	return ms, nil
}

// Lookup returns the declaration of the field named name.
func (fs Fields) Lookup(name string) (Field, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Names returns the field names in declaration order.
func (fs Fields) Names() []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// unwrap skips anchors and tags around a value.
func unwrap(node ast.Node) ast.Node {
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

// nodeError is an error positioned at node, shown with its line by
// yaml.FormatError.
func nodeError(node ast.Node, msg string) error {
	if node == nil || node.GetToken() == nil {
		return errors.New(msg)
	}
	return &yaml.SyntaxError{Message: msg, Token: node.GetToken()}
}

// scalarText returns the text of a scalar node as written.
func scalarText(node ast.Node) (string, bool) {
	switch n := unwrap(node).(type) {
	case *ast.StringNode:
		return n.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	case *ast.LiteralNode:
		return n.Value.Value, true
	}
	return "", false
}

// mapEntries returns the key/value pairs of a mapping node, in order.
func mapEntries(node ast.Node, what string) ([]*ast.MappingValueNode, error) {
	switch n := unwrap(node).(type) {
	case *ast.MappingNode:
		return n.Values, nil
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{n}, nil
	case *ast.NullNode:
		return nil, nil
	}
	return nil, nodeError(node, what+": want a mapping of names to declarations")
}
