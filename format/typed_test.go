package format

import (
	"math"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// TestProjectionTargets: the derived field is no target, a renamed field
// is found by its writer path, a default is kept only for a field no
// writer field matched, and the errors name the entry.
func TestProjectionTargets(t *testing.T) {
	s := row.NewSchema()
	s.Add("id", row.KindInt)         // 0
	s.Add("amount", row.KindDecimal) // 1
	s.Add("label", row.KindString)   // 2: derived
	s.Add("region", row.KindString)  // 3
	p := Projection{Fields: Fields{Schema: s, Derived: []int{2}},
		Rename:   map[string]string{"amount": "payment.gross"},
		Defaults: map[string]row.Value{"region": row.Str("EU"), "amount": row.Int(0)}}
	targets, paths, err := p.Targets()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range targets {
		names = append(names, tg.F.Name)
		if (tg.Text == nil) != (tg.F.Kind == row.KindString) {
			t.Errorf("%s: text conversion %v", tg.F.Name, tg.Text != nil)
		}
	}
	if got := strings.Join(names, ","); got != "id,amount,region" {
		t.Fatalf("targets %s", got)
	}
	if len(paths) != 3 || paths["id"] != 0 || paths["payment.gross"] != 1 || paths["region"] != 2 {
		t.Fatalf("paths %v", paths)
	}
	// The writer has id and payment.gross, not region.
	ds, err := p.DefaultsFor(paths, func(i int32) bool { return i != 2 })
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].F.Name != "region" || ds[0].V.S != "EU" {
		t.Fatalf("defaults %+v", ds)
	}
	for _, c := range []struct {
		p    Projection
		want string
	}{
		{Projection{Fields: Fields{Schema: s}, Rename: map[string]string{"nope": "x"}}, `rename of "nope": not a pipeline field`},
		{Projection{Fields: Fields{Schema: s}, Defaults: map[string]row.Value{"nope": row.Int(1)}}, `default of "nope": not a pipeline field`},
		{Projection{Fields: Fields{Schema: s}, Defaults: map[string]row.Value{"id": row.Str("1")}}, `default of "id" is string, the field is int`},
	} {
		_, paths, err := c.p.Targets()
		if err == nil {
			_, err = c.p.DefaultsFor(paths, func(int32) bool { return false })
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// TestSetConversions: each shared conversion's value or outcome, by hand.
func TestSetConversions(t *testing.T) {
	s := row.NewSchema()
	fi, _ := s.Add("i", row.KindInt)
	fd, _ := s.Add("d", row.KindDecimal)
	fs, _ := s.Add("s", row.KindString)
	fb, _ := s.Add("b", row.KindBool)
	r := s.NewRow()
	var a source.Arena
	w := &Typed{R: r, A: &a}
	ti, td, ts, tb := &Target{F: fi}, &Target{F: fd}, &Target{F: fs}, &Target{F: fb}
	check := func(what string, f row.Field, want string) {
		t.Helper()
		if got := r.Get(f).String(); got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	s.Shape(r)
	if out := w.SetInt(td, ConvIntDecimal, -42, "long"); out != (Outcome{}) {
		t.Fatalf("int → decimal: %+v", out)
	}
	check("int → decimal", fd, "-42")
	w.SetInt(ts, ConvIntString, 9007199254740993, "long")
	check("int → string", fs, "9007199254740993")
	if out := w.SetInt(ti, ConvBad, 1, "long"); !out.Bad {
		t.Errorf("ConvBad: %+v", out)
	}
	w.SetFloat(td, ConvFloatDecimal, 0.1, 64)
	check("double → decimal", fd, "0.1")
	w.SetFloat(td, ConvFloatDecimal, float64(float32(0.1)), 32)
	check("float → decimal", fd, "0.1")
	if out := w.SetFloat(ti, ConvFloatInt, 2.5, 64); !out.Bad || out.Why != "2.5 is not a whole number in int64 range" {
		t.Errorf("2.5 → int: %+v", out)
	}
	if out := w.SetFloat(ti, ConvFloatInt, math.NaN(), 64); !out.Bad || out.Why != "NaN is not a number tidemark can hold" {
		t.Errorf("NaN → int: %+v", out)
	}
	w.SetFloat(ti, ConvFloatInt, -3, 64)
	check("-3.0 → int", fi, "-3")
	if w.SetBool(tb, ConvBool, true) {
		t.Fatal("bool → bool refused")
	}
	check("bool", fb, "true")
	w.SetBool(ts, ConvBoolString, false)
	check("bool → string", fs, "false")
	if out := w.SetString(ts, ConvString, []byte("a\x00b"), 17, "string"); out.Err == nil || out.Err.Rule != "encoding" || !strings.Contains(out.Err.Reason, "byte 18") {
		t.Errorf("NUL: %+v", out.Err)
	}
	w.SetString(ts, ConvString, []byte("café"), 0, "string")
	check("string", fs, "café")
}

// TestWants: a path is wanted when a target is it or lies under it, not
// when it only shares a prefix of its name.
func TestWants(t *testing.T) {
	paths := map[string]int32{"id": 0, "payment.gross": 1, "a.b.c": 2}
	for path, want := range map[string]bool{
		"id": true, "payment": true, "payment.gross": true, "a": true, "a.b": true, "a.b.c": true,
		"i": false, "pay": false, "payment.net": false, "a.b.c.d": false, "b": false, "": false,
	} {
		if got := Wants(paths, path); got != want {
			t.Errorf("Wants(%q) = %v, want %v", path, got, want)
		}
	}
	if Wants(nil, "id") {
		t.Error("Wants of no paths = true")
	}
}

// TestBegin: the defaults are stored into the row, the other fields stay
// null, and the number scratch starts empty on the caller's memory.
func TestBegin(t *testing.T) {
	s := row.NewSchema()
	id, _ := s.Add("id", row.KindInt)
	region, _ := s.Add("region", row.KindString)
	amount, _ := s.Add("amount", row.KindDecimal)
	r := s.NewRow()
	var a source.Arena
	scratch := append(make([]byte, 0, 64), "left over"...)
	w := Begin(r, &a, scratch, []Default{{F: region, V: row.Str("EU")}, {F: amount, V: row.Int(0)}})
	if w.R != r || w.A != &a || len(w.Num) != 0 || cap(w.Num) != 64 {
		t.Fatalf("Begin kept R %p A %p Num len %d cap %d", w.R, w.A, len(w.Num), cap(w.Num))
	}
	if v := r.Get(region); v.Kind != row.KindString || v.S != "EU" {
		t.Errorf("region = %+v, want EU", v)
	}
	if v := r.Get(amount); v.Kind != row.KindDecimal || v.String() != "0" {
		t.Errorf("amount = %+v (%s), want decimal 0", v, v.String())
	}
	if v := r.Get(id); v.Kind != row.KindNull {
		t.Errorf("id = %+v, want null", v)
	}
}

// TestConvFor: the whole table of writer class × field kind, by hand; a
// time field takes an integer only with an epoch parser.
func TestConvFor(t *testing.T) {
	s := row.NewSchema()
	field := map[row.Kind]row.Field{}
	for _, k := range []row.Kind{row.KindBool, row.KindInt, row.KindDecimal, row.KindString, row.KindTime} {
		f, _ := s.Add(k.String(), k)
		field[k] = f
	}
	epochMS, err := eventtime.New(spec.EventTime{Field: "time", Format: "epoch_ms"})
	if err != nil {
		t.Fatal(err)
	}
	rfc := &Target{F: field[row.KindTime], Text: NewTextField(field[row.KindTime], nil)}
	epoch := &Target{F: field[row.KindTime], Text: NewTextField(field[row.KindTime], epochMS)}
	target := func(k row.Kind) *Target {
		if k == row.KindTime {
			return rfc
		}
		return &Target{F: field[k], Text: NewTextField(field[k], nil)}
	}
	//                      bool        int             decimal           string             time (RFC 3339)
	want := map[Writer][5]Conv{
		WriterInt:     {ConvBad, ConvInt, ConvIntDecimal, ConvIntString, ConvBad},
		WriterBool:    {ConvBool, ConvBad, ConvBad, ConvBoolString, ConvBad},
		WriterFloat:   {ConvBad, ConvFloatInt, ConvFloatDecimal, ConvFloatString, ConvBad},
		WriterString:  {ConvStringText, ConvStringText, ConvStringText, ConvString, ConvStringText},
		WriterBytes:   {ConvBad, ConvBad, ConvBad, ConvString, ConvBad},
		WriterDecimal: {ConvBad, ConvBad, ConvDecimal, ConvDecimalString, ConvBad},
		WriterEnum:    {ConvBad, ConvBad, ConvBad, ConvEnumString, ConvBad},
	}
	kinds := []row.Kind{row.KindBool, row.KindInt, row.KindDecimal, row.KindString, row.KindTime}
	for w, convs := range want {
		for i, k := range kinds {
			if got := ConvFor(w, target(k)); got != convs[i] {
				t.Errorf("ConvFor(writer %d, %s) = %d, want %d", w, k, got, convs[i])
			}
		}
	}
	if got := ConvFor(WriterInt, epoch); got != ConvIntText {
		t.Errorf("ConvFor(int, epoch_ms time) = %d, want ConvIntText", got)
	}
	if got := ConvFor(WriterFloat, epoch); got != ConvBad {
		t.Errorf("ConvFor(float, epoch_ms time) = %d, want ConvBad", got)
	}
	if got := ConvFor(Writer(0), target(row.KindString)); got != ConvBad {
		t.Errorf("ConvFor(no class) = %d, want ConvBad", got)
	}
}
