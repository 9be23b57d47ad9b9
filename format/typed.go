package format

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// The typed-row conversion layer of the binary decoders (format/avro,
// format/protobuf): a writer's typed value — an integer, a bool, a
// floating-point number, a string — stored into a pipeline field of
// another or the same kind, by a Conv each decoder's compiler chooses
// once per field (ConvFor: one table for both, by the writer's class);
// Begin starts a record (the defaults of fields the writer lacks) and
// Wants tells a compiler which writer fields are read. The decoders read their own encodings and keep what is
// theirs alone (Avro's timestamp logical types and enum text, Protobuf's
// uint64 beyond int64, Timestamp and Confluent decimals); what a value of
// one type becomes in a field of one kind is decided here, once for both.

// Conv is how a decoded value reaches its target field.
type Conv uint8

// The conversions. Those marked Avro or Protobuf are handled by that
// decoder alone; the Set functions take the others.
const (
	ConvSkip          Conv = iota // no target: read and drop
	ConvBad                       // the writer's type cannot give the field's kind: a type error per record
	ConvInt                       // an integer → int
	ConvIntDecimal                // an integer → decimal
	ConvIntString                 // an integer → string (decimal text)
	ConvIntText                   // an integer → timestamp with an epoch parser (the number's text)
	ConvBool                      // a boolean → bool
	ConvBoolString                // a boolean → string ("true", "false")
	ConvFloatDecimal              // float, double → decimal (the shortest text that reads back)
	ConvFloatInt                  // float, double → int (whole values in int64 range)
	ConvFloatString               // float, double → string (the shortest text)
	ConvString                    // string, bytes → string
	ConvStringText                // string → int, decimal, bool, timestamp (the text rules of TextField)
	ConvDecimal                   // a decimal type → decimal
	ConvDecimalString             // a decimal type → string (plain text)
	ConvEnumString                // an enum → string (its symbol or name)
	ConvEnumText                  // Avro: an enum → bool, int, decimal, timestamp (the symbol's text)
	ConvTsMillis                  // Avro: long timestamp-millis → timestamp
	ConvTsMicros                  // Avro: long timestamp-micros → timestamp (floor to ms)
	ConvTsNanos                   // Avro: long timestamp-nanos → timestamp (floor to ms)
	ConvDate                      // Avro: int date → timestamp (midnight UTC)
	ConvTimestamp                 // Protobuf: google.protobuf.Timestamp → timestamp
)

// Writer is the class of a value a binary decoder reads, as ConvFor
// sees it: the encoding's own types map onto these (Avro's int and long,
// Protobuf's ten integer kinds → WriterInt).
type Writer uint8

// The writer classes.
const (
	WriterInt     Writer = iota + 1 // a whole number of any width
	WriterBool                      // a boolean
	WriterFloat                     // a float or double
	WriterString                    // a string
	WriterBytes                     // bytes that are not a decimal
	WriterDecimal                   // a decimal type (Avro's logical decimal, Confluent's Decimal message)
	WriterEnum                      // an enum value
)

// ConvFor is how a writer value of class w reaches t's field: the one
// table both decoders use (an integer into int, decimal, string, or a
// timestamp with an epoch parser; a boolean into bool or string; a float
// into decimal, int or string; a string into string or, by the text
// rules, any other kind; bytes into string; a decimal into decimal or
// string; an enum into string), ConvBad for any other pair. What one
// encoding alone has (Avro's logical timestamps and enum text, Protobuf's
// Timestamp message) the decoder decides before it asks.
func ConvFor(w Writer, t *Target) Conv {
	k := t.F.Kind
	switch w {
	case WriterInt:
		switch k {
		case row.KindInt:
			return ConvInt
		case row.KindDecimal:
			return ConvIntDecimal
		case row.KindString:
			return ConvIntString
		case row.KindTime:
			if ep, _ := t.Text.Epoch(); ep {
				return ConvIntText
			}
		}
	case WriterBool:
		switch k {
		case row.KindBool:
			return ConvBool
		case row.KindString:
			return ConvBoolString
		}
	case WriterFloat:
		switch k {
		case row.KindDecimal:
			return ConvFloatDecimal
		case row.KindInt:
			return ConvFloatInt
		case row.KindString:
			return ConvFloatString
		}
	case WriterString:
		if k == row.KindString {
			return ConvString
		}
		return ConvStringText
	case WriterBytes:
		if k == row.KindString {
			return ConvString
		}
	case WriterDecimal:
		switch k {
		case row.KindDecimal:
			return ConvDecimal
		case row.KindString:
			return ConvDecimalString
		}
	case WriterEnum:
		if k == row.KindString {
			return ConvEnumString
		}
	}
	return ConvBad
}

// Target is a pipeline field a binary decoder fills.
type Target struct {
	F row.Field
	// Text converts text into fields of kinds other than string
	// (ConvStringText, ConvIntText, ConvEnumText); nil for string fields.
	Text *TextField
}

// Typed is the row a binary decoder fills: the row, the arena its
// strings are copied into (valid until the arena is reset), and scratch
// for number text (the decoder's Program's: one record at a time).
type Typed struct {
	R   *row.Row
	A   *source.Arena
	Num []byte
}

// Begin returns the Typed of one record: it stores the defaults (of the
// fields the writer lacks, Projection.DefaultsFor) into r, which the
// caller has shaped and nulled, and keeps r, the arena a and num[:0], the
// decoder's scratch for number text.
func Begin(r *row.Row, a *source.Arena, num []byte, defaults []Default) Typed {
	for i := range defaults {
		_ = r.Set(defaults[i].F, defaults[i].V) // DefaultsFor checked each value's kind
	}
	return Typed{R: r, A: a, Num: num[:0]}
}

// Wants reports whether some writer path of paths (as Projection.Targets
// made it) is path or lies under it (path "a" for a target "a.b"): a
// decoder's compiler reads what a writer field holds only when it does.
func Wants(paths map[string]int32, path string) bool {
	if _, ok := paths[path]; ok {
		return true
	}
	for p := range paths {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// The outcome of a Set function: ok, or a type error (the decoder names
// the writer's type in it, with Why when not empty), or the error of the
// field's text conversion (Err).
type Outcome struct {
	Bad bool
	Why string
	Err *source.DecodeError
}

// SetBool stores v into t's field of w.R by cv (ConvBool, ConvBoolString).
func (w *Typed) SetBool(t *Target, cv Conv, v bool) (bad bool) {
	r := w.R
	switch cv {
	case ConvBool:
		r.I[t.F.Slot] = 0
		if v {
			r.I[t.F.Slot] = 1
		}
	case ConvBoolString:
		r.S[t.F.Slot] = strconv.FormatBool(v) // constants: no allocation
	default:
		return true
	}
	r.SetValid(t.F.Index)
	return false
}

// SetInt stores v into t's field of w.R by cv (ConvInt, ConvIntDecimal,
// ConvIntString, ConvIntText); what names the writer's type for the text
// conversion's errors ("Avro long").
func (w *Typed) SetInt(t *Target, cv Conv, v int64, what string) Outcome {
	r, a, num := w.R, w.A, w.Num
	switch cv {
	case ConvInt:
		r.I[t.F.Slot] = v
	case ConvIntDecimal:
		r.D[t.F.Slot] = row.DecimalFromInt(v)
	case ConvIntString:
		r.S[t.F.Slot] = a.String(strconv.AppendInt(num, v, 10))
	case ConvIntText:
		return Outcome{Err: t.Text.Set(strconv.AppendInt(num, v, 10), what, r)}
	default:
		return Outcome{Bad: true}
	}
	r.SetValid(t.F.Index)
	return Outcome{}
}

// SetFloat stores v, of size bits (32 or 64), into t's field of r by cv
// (ConvFloatDecimal, ConvFloatInt, ConvFloatString) of w.R: NaN and the
// infinities are type errors, as are a fraction or a value beyond int64
// for an int field.
func (w *Typed) SetFloat(t *Target, cv Conv, v float64, size int) Outcome {
	r, a, num := w.R, w.A, w.Num
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Outcome{Bad: true, Why: strconv.FormatFloat(v, 'g', -1, 64) + " is not a number tidemark can hold"}
	}
	txt := strconv.AppendFloat(num, v, 'g', -1, size)
	switch cv {
	case ConvFloatDecimal:
		dv, err := row.ParseDecimal(txt)
		if err != nil {
			return Outcome{Bad: true, Why: string(txt) + ": " + err.Error()}
		}
		r.D[t.F.Slot] = dv
	case ConvFloatInt:
		if v != math.Trunc(v) || v < -9.223372036854775e18 || v >= 9.223372036854775e18 {
			return Outcome{Bad: true, Why: string(txt) + " is not a whole number in int64 range"}
		}
		r.I[t.F.Slot] = int64(v)
	case ConvFloatString:
		r.S[t.F.Slot] = a.String(txt)
	default:
		return Outcome{Bad: true}
	}
	r.SetValid(t.F.Index)
	return Outcome{}
}

// SetString stores the string b into t's field of w.R by cv (ConvString:
// copied into w.A after the encoding rule, Text, with offset the byte
// offset of b in the record for its error; ConvStringText: through the
// field's text conversion, what naming the writer's type).
func (w *Typed) SetString(t *Target, cv Conv, b []byte, offset int, what string) Outcome {
	r, a := w.R, w.A
	switch cv {
	case ConvString:
		if !Text(b) {
			return Outcome{Err: TextError(t.F.Name, b, offset)}
		}
		r.S[t.F.Slot] = a.String(b)
		r.SetValid(t.F.Index)
		return Outcome{}
	case ConvStringText:
		return Outcome{Err: t.Text.Set(b, what, r)}
	}
	return Outcome{Bad: true}
}

// Targets returns the pipeline fields a binary decoder fills — every
// field of p.Fields.Schema but the derived ones, in schema order — and,
// by the writer's path each reads (its own name, or the one Rename gives
// it), its index in targets. Fields of kinds other than string get their
// text conversion. It fails on a Rename entry that names no pipeline
// field (the caller prefixes its format's name).
func (p Projection) Targets() (targets []Target, paths map[string]int32, err error) {
	for name := range p.Rename {
		if _, ok := p.Fields.Schema.Lookup(name); !ok {
			return nil, nil, fmt.Errorf("rename of %q: not a pipeline field", name)
		}
	}
	derived := map[int]bool{}
	for _, i := range p.Fields.Derived {
		derived[i] = true
	}
	paths = map[string]int32{}
	for _, f := range p.Fields.Schema.Fields {
		if derived[f.Index] {
			continue
		}
		t := Target{F: f}
		if f.Kind != row.KindString {
			t.Text = NewTextField(f, p.Fields.Time[f.Index])
		}
		paths[p.Path(f.Name)] = int32(len(targets))
		targets = append(targets, t)
	}
	return targets, paths, nil
}

// Path returns the writer's path the pipeline field name reads: its
// Rename, or the name itself.
func (p Projection) Path(name string) string {
	if r, ok := p.Rename[name]; ok && r != "" {
		return r
	}
	return name
}

// Default is a constant a decoder stores into a pipeline field before it
// decodes a record (Projection.Defaults of a field the writer lacks).
type Default struct {
	F row.Field
	V row.Value
}

// DefaultsFor returns the constants of p.Defaults for the fields the
// writer's schema lacks, by field name: those whose path (paths, as
// Targets made it) no writer field matched (found). It fails on a
// default that names no pipeline field, or whose kind is not the
// field's (an int default of a decimal field is taken; a null is).
func (p Projection) DefaultsFor(paths map[string]int32, found func(target int32) bool) ([]Default, error) {
	names := make([]string, 0, len(p.Defaults))
	for name := range p.Defaults {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []Default
	for _, name := range names {
		v := p.Defaults[name]
		f, ok := p.Fields.Schema.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("default of %q: not a pipeline field", name)
		}
		if v.Kind != row.KindNull && v.Kind != f.Kind && !(v.Kind == row.KindInt && f.Kind == row.KindDecimal) {
			return nil, fmt.Errorf("default of %q is %s, the field is %s", name, v.Kind, f.Kind)
		}
		if i, ok := paths[p.Path(name)]; ok && found(i) {
			continue // the writer has the field: its value wins
		}
		out = append(out, Default{F: f, V: v})
	}
	return out, nil
}
