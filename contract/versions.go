package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/row"
)

// parseDefault reads a schema version's default for field f from its
// text, by the field's type.
func parseDefault(f Field, text string) (row.Value, error) {
	k, err := row.ParseKind(f.Type)
	if err != nil {
		return row.Null, err
	}
	switch k {
	case row.KindString:
		return row.Str(text), nil
	case row.KindInt:
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return row.Null, fmt.Errorf("%q is not an int", text)
		}
		return row.Int(v), nil
	case row.KindDecimal:
		d, err := row.ParseDecimal([]byte(text))
		if err != nil {
			return row.Null, fmt.Errorf("%q: %v", text, err)
		}
		return row.Dec(d), nil
	case row.KindBool:
		switch strings.ToLower(text) {
		case "true":
			return row.Bool(true), nil
		case "false":
			return row.Bool(false), nil
		}
		return row.Null, fmt.Errorf("%q is not true or false", text)
	case row.KindTime:
		ms, err := eventtime.ParseRFC3339(text)
		if err != nil {
			return row.Null, fmt.Errorf("%q: %v", text, err)
		}
		return row.Time(ms), nil
	}
	return row.Null, fmt.Errorf("type %s has no default", f.Type)
}

// Mapping is how records of one schema version reach the pipeline's
// fields: Rename (pipeline field → writer field) and typed Defaults.
type Mapping struct {
	Rename   map[string]string
	Defaults map[string]row.Value
}

// Mappings returns each accepted version's mapping, by version; nil when
// the contract lists no schema versions. Call it on a contract that
// passed Validate.
func (c *Contract) Mappings() map[int]Mapping {
	if c.SchemaVersions == nil {
		return nil
	}
	out := map[int]Mapping{}
	for _, v := range c.SchemaVersions.Versions {
		m := Mapping{Rename: v.Fields, Defaults: map[string]row.Value{}}
		for name, text := range v.Defaults {
			f, _ := c.Field(name)
			if d, err := parseDefault(f, text); err == nil {
				m.Defaults[name] = d
			}
		}
		out[v.Version] = m
	}
	return out
}

// Deprecated returns the versions whose deprecated_after date is before
// now (UTC dates), ascending.
func (c *Contract) Deprecated(now time.Time) []int {
	if c.SchemaVersions == nil {
		return nil
	}
	var out []int
	today := now.UTC().Format(time.DateOnly)
	for _, v := range c.SchemaVersions.Versions {
		if v.DeprecatedAfter != "" && v.DeprecatedAfter < today {
			out = append(out, v.Version)
		}
	}
	return out
}

// Compatibility returns the compatibility mode the contract promises
// (upper case; BACKWARD when unset), or "" without schema versions.
func (c *Contract) Compatibility() string {
	if c.SchemaVersions == nil {
		return ""
	}
	if c.SchemaVersions.Compatibility == "" {
		return "BACKWARD"
	}
	return strings.ToUpper(c.SchemaVersions.Compatibility)
}
