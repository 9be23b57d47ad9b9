package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/row"
)

// The formats of Encoding.Format.
const (
	// FormatJSON writes keys and values as JSON (the package
	// documentation's "Records"). The default.
	FormatJSON = "json"
	// FormatAvro writes them as Avro in the Confluent wire format.
	FormatAvro = "avro"
	// FormatProtobuf writes them as Protobuf in the Confluent wire format.
	FormatProtobuf = "protobuf"
)

// DefaultDecimalScale is Encoding.DecimalScale's default: 6 digits after
// the point.
const DefaultDecimalScale = 6

// Encoding says how a sink writes record keys and values (the package
// documentation's "Avro and Protobuf").
type Encoding struct {
	// Format is FormatJSON (or ""), FormatAvro or FormatProtobuf.
	// Default json.
	Format string
	// Registry receives the schemas of avro and protobuf, registered
	// under "<topic>-key" and "<topic>-value" (TopicNameStrategy).
	// Required with those formats; unused with json.
	Registry *confluent.Registry
	// DecimalScale is the scale (digits after the point) of every decimal
	// column: Avro's decimal(38, DecimalScale), and the scale of
	// Protobuf's confluent.type.Decimal. A value with more digits after
	// the point (other than trailing zeros) is an error naming the row
	// and column, never a rounding. Nil is DefaultDecimalScale; 0 to 19.
	DecimalScale *int
}

// format returns the effective format.
func (e Encoding) format() string {
	if e.Format == "" {
		return FormatJSON
	}
	return e.Format
}

// scale returns the effective decimal scale, or an error.
func (e Encoding) scale() (uint8, error) {
	if e.DecimalScale == nil {
		return DefaultDecimalScale, nil
	}
	s := *e.DecimalScale
	if s < 0 || s > 19 {
		return 0, fmt.Errorf("decimal_scale: %d: want 0 to 19", s)
	}
	return uint8(s), nil
}

// check validates e for a sink writing to topic.
func (e Encoding) check(topic string) error {
	switch e.format() {
	case FormatJSON:
		return nil
	case FormatAvro, FormatProtobuf:
		if e.Registry == nil {
			return fmt.Errorf("format %s: a schema registry is required (schema_registry)", e.Format)
		}
		if topic == "" {
			return errors.New("topic: required (it names the registry subjects)")
		}
		_, err := e.scale()
		return err
	}
	return fmt.Errorf("format %q: want json, avro or protobuf", e.Format)
}

// keySubject and valueSubject are TopicNameStrategy's subjects.
func keySubject(topic string) string   { return topic + "-key" }
func valueSubject(topic string) string { return topic + "-value" }

// checkName refuses a column name that Avro and Protobuf cannot carry.
func checkName(col string) error {
	if !avro.ValidName(col) {
		return fmt.Errorf("column %q is not a valid Avro or Protobuf field name (a letter or '_', then letters, digits or '_'): rename it in the pipeline (key fields through fields:, aggregates by their name)", col)
	}
	return nil
}

// namespace returns "tidemark.<stage>" with the stage name made a valid
// Avro and Protobuf name (other characters become '_').
func namespace(stage string) string {
	if stage == "" {
		return "tidemark"
	}
	b := []byte(stage)
	for i, c := range b {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	if b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	return "tidemark." + string(b)
}

// checkScales refuses a decimal scale other than the one the subject's
// latest Avro version gives a decimal column of the same name. The
// registry's Avro rules ignore logical types, so it would accept the
// change; but the bytes of a decimal are its unscaled value, and a
// reader holding the other version would read every value off by a
// power of ten.
func checkScales(ctx context.Context, reg *confluent.Registry, subject string, l *layout, scale uint8) error {
	latest, err := reg.Latest(ctx, subject)
	if errors.Is(err, confluent.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if latest.Type != sr.TypeAvro && latest.Type != 0 {
		return nil // the registry checks a change of format
	}
	var rec struct {
		Fields []struct {
			Name string          `json:"name"`
			Type json.RawMessage `json:"type"`
		} `json:"fields"`
	}
	if json.Unmarshal([]byte(latest.Schema.Schema), &rec) != nil {
		return nil // not a record: the registry's check decides
	}
	for _, c := range l.cols {
		if c.kind != row.KindDecimal {
			continue
		}
		for _, f := range rec.Fields {
			if f.Name != c.name {
				continue
			}
			if old, ok := decimalScale(f.Type); ok && old != int(scale) {
				return fmt.Errorf("subject %s: decimal_scale %d, but version %d of the subject writes column %s at scale %d: a reader of either version would read the other's values off by a power of ten (the registry's Avro rules ignore logical types, so it would accept this); keep decimal_scale %d or write to another topic", subject, scale, latest.Version, c.name, old, old)
			}
		}
	}
	return nil
}

// decimalScale returns the scale of an Avro decimal type (also in a
// union), if t is one.
func decimalScale(t json.RawMessage) (int, bool) {
	var branches []json.RawMessage
	if json.Unmarshal(t, &branches) != nil {
		branches = []json.RawMessage{t}
	}
	for _, b := range branches {
		var d struct {
			LogicalType string `json:"logicalType"`
			Scale       int    `json:"scale"`
		}
		if json.Unmarshal(b, &d) == nil && d.LogicalType == "decimal" {
			return d.Scale, true
		}
	}
	return 0, false
}
