package spec

import (
	"fmt"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
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

// UnmarshalYAML implements yaml.InterfaceUnmarshaler.
func (d *Duration) UnmarshalYAML(unmarshal func(any) error) error {
	var s any
	if err := unmarshal(&s); err != nil {
		return err
	}
	str, ok := s.(string)
	if !ok {
		if s == nil {
			*d = 0
			return nil
		}
		return fmt.Errorf("duration must be a Go duration string such as \"90s\" or \"3m\", got %v", s)
	}
	v, err := time.ParseDuration(strings.TrimSpace(str))
	if err != nil {
		return fmt.Errorf("duration %q: want a Go duration string such as \"90s\", \"3m\" or \"24h\"", str)
	}
	*d = Duration(v)
	return nil
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

// UnmarshalYAML implements yaml.InterfaceUnmarshaler, keeping key order.
func (n *NamedExprs) UnmarshalYAML(unmarshal func(any) error) error {
	var ms yaml.MapSlice
	if err := unmarshal(&ms); err != nil {
		return err
	}
	out := make(NamedExprs, 0, len(ms))
	for _, it := range ms {
		k, ok := it.Key.(string)
		if !ok {
			return fmt.Errorf("name %v must be a string", it.Key)
		}
		var v string
		switch x := it.Value.(type) {
		case string:
			v = x
		case nil:
			return fmt.Errorf("%s: expression is empty", k)
		default:
			v = fmt.Sprint(x)
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

// UnmarshalYAML implements yaml.InterfaceUnmarshaler, keeping key order.
func (f *FieldTypes) UnmarshalYAML(unmarshal func(any) error) error {
	var ms yaml.MapSlice
	if err := unmarshal(&ms); err != nil {
		return err
	}
	out := make(FieldTypes, 0, len(ms))
	for _, it := range ms {
		k, ok := it.Key.(string)
		if !ok {
			return fmt.Errorf("field name %v must be a string", it.Key)
		}
		v, ok := it.Value.(string)
		if !ok {
			return fmt.Errorf("%s: type must be a string such as int or decimal, got %v", k, it.Value)
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
