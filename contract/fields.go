package contract

import (
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/tidemark/tidemark/spec"
)

// UnmarshalYAML implements yaml.NodeUnmarshaler: it decodes a mapping of
// field names to declarations, keeping their order. A declaration is a
// mapping with the keys type, required, metadata, cardinality and
// description, or the
// type alone (`amount: decimal`); an empty value (`amount:`) declares the
// field without a type, which Validate reports. Errors carry the line and
// column.
func (fs *Fields) UnmarshalYAML(node ast.Node) error {
	entries, err := spec.MapEntries(node, "fields"+": want a mapping of names to declarations")
	if err != nil {
		return err
	}
	out := make(Fields, 0, len(entries))
	for _, e := range entries {
		name, ok := spec.ScalarText(e.Key)
		if !ok {
			return spec.NodeError(e.Key, "field names must be plain strings")
		}
		f := Field{Name: name}
		switch v := spec.UnwrapNode(e.Value).(type) {
		case *ast.NullNode:
		case *ast.MappingNode, *ast.MappingValueNode:
			if err := decodeField(&f, v); err != nil {
				return err
			}
		default:
			t, ok := spec.ScalarText(v)
			if !ok {
				return spec.NodeError(e.Value, fmt.Sprintf("%s: want a type such as decimal, or a mapping {type: decimal, required: true}", name))
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
	entries, err := spec.MapEntries(node, f.Name+": want a mapping of names to declarations")
	if err != nil {
		return err
	}
	for _, e := range entries {
		k, ok := spec.ScalarText(e.Key)
		if !ok {
			return spec.NodeError(e.Key, fmt.Sprintf("%s: keys must be plain strings", f.Name))
		}
		switch k {
		case "type":
			if _, null := spec.UnwrapNode(e.Value).(*ast.NullNode); null {
				continue
			}
			t, ok := spec.ScalarText(e.Value)
			if !ok {
				return spec.NodeError(e.Value, fmt.Sprintf("%s.type: want a type name such as int or decimal", f.Name))
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
			if _, null := spec.UnwrapNode(e.Value).(*ast.NullNode); null {
				continue
			}
			d, ok := spec.ScalarText(e.Value)
			if !ok {
				return spec.NodeError(e.Value, fmt.Sprintf("%s.description: want text", f.Name))
			}
			f.Description = d
		case "cardinality":
			if _, null := spec.UnwrapNode(e.Value).(*ast.NullNode); null {
				continue
			}
			n, ok := spec.UnwrapNode(e.Value).(*ast.IntegerNode)
			var v int64
			if ok {
				switch x := n.Value.(type) {
				case int64:
					v = x
				case uint64:
					ok = x <= 1<<62
					v = int64(x)
				default:
					ok = false
				}
			}
			if !ok || v < 0 {
				return spec.NodeError(e.Value, fmt.Sprintf("%s.cardinality: want a whole number of distinct values, 0 or more", f.Name))
			}
			f.Cardinality = v
		default:
			return spec.NodeError(e.Key, fmt.Sprintf("%s: unknown key %q (want type, required, metadata, cardinality or description)", f.Name, k))
		}
	}
	return nil
}

// boolValue reads a YAML boolean; null is false.
func boolValue(node ast.Node, key string) (bool, error) {
	switch n := spec.UnwrapNode(node).(type) {
	case *ast.BoolNode:
		return n.Value, nil
	case *ast.NullNode:
		return false, nil
	}
	return false, spec.NodeError(node, fmt.Sprintf("%s: want true or false", key))
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
		if f.Cardinality != 0 {
			d = append(d, yaml.MapItem{Key: "cardinality", Value: f.Cardinality})
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
