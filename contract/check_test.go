package contract

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// checkContract has a required check per required field and a rule of
// every kind.
const checkContract = `product: orders
owner: order domain
schema_version: "1"
realtime: true
fields:
  event_id: {type: string, required: true}
  event_type: string
  amount: {type: decimal, required: true, description: signed}
  qty: int
  paid_at: timestamp
  produced_at: {type: timestamp, metadata: true}
event_id: event_id
event_time: {field: paid_at}
ingest_time: produced_at
rules:
  - {name: refund_sign, check: 'amount >= 0 or event_type == "REFUND"', max_violation_rate: 0.01}
  - {name: future, max_future: 24h, description: clock ahead}
  - {name: old, max_age: 720h}
  - {name: produced_after_paid, check: produced_at >= paid_at}
  - {name: per_unit, check: amount / qty < 1000}
`

// fixture is a schema for checkContract's fields and a row builder.
type fixture struct {
	s                          *row.Schema
	id, typ, amount, qty, paid row.Field
	at                         row.Field
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{s: row.NewSchema()}
	add := func(name string, k row.Kind) row.Field {
		fd, err := f.s.Add(name, k)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	f.id = add("event_id", row.KindString)
	f.typ = add("event_type", row.KindString)
	f.amount = add("amount", row.KindDecimal)
	f.qty = add("qty", row.KindInt)
	f.paid = add("paid_at", row.KindTime)
	f.at = add("produced_at", row.KindTime)
	return f
}

const (
	t0   = int64(1_788_224_400_000) // 2026-09-01T01:00:00Z
	hour = int64(time.Hour / time.Millisecond)
)

// good returns a row that passes every check, paid at t0 and produced a
// second later.
func (f *fixture) good(t *testing.T) *row.Row {
	r := f.s.NewRow()
	set := func(fd row.Field, v row.Value) {
		if err := r.Set(fd, v); err != nil {
			t.Fatal(err)
		}
	}
	set(f.id, row.Str("e100"))
	set(f.typ, row.Str("PAYMENT"))
	d, _ := row.ParseDecimal([]byte("25000"))
	set(f.amount, row.Dec(d))
	set(f.qty, row.Int(100))
	set(f.paid, row.Time(t0))
	set(f.at, row.Time(t0+1000))
	return r
}

func compileFixture(t *testing.T) (*fixture, *Checker) {
	t.Helper()
	c := mustParse(t, checkContract)
	f := newFixture(t)
	ch, err := Compile(c, f.s, f.at, true)
	if err != nil {
		t.Fatal(err)
	}
	return f, ch
}

func TestChecks(t *testing.T) {
	_, ch := compileFixture(t)
	want := []CheckInfo{
		{Rule: "event_id_required", Kind: CheckRequired, Field: "event_id"},
		{Rule: "amount_required", Kind: CheckRequired, Field: "amount", Description: "signed"},
		{Rule: "refund_sign", Kind: CheckExpr, Check: `amount >= 0 or event_type == "REFUND"`, MaxViolationRate: 0.01},
		{Rule: "future", Kind: CheckMaxFuture, Field: "paid_at", Limit: spec.Duration(24 * time.Hour), Description: "clock ahead"},
		{Rule: "old", Kind: CheckMaxAge, Field: "paid_at", Limit: spec.Duration(720 * time.Hour)},
		{Rule: "produced_after_paid", Kind: CheckExpr, Check: "produced_at >= paid_at"},
		{Rule: "per_unit", Kind: CheckExpr, Check: "amount / qty < 1000"},
	}
	if got := ch.Checks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if ch.Len() != len(want) {
		t.Fatalf("Len %d", ch.Len())
	}
	for k, s := range map[CheckKind]string{CheckRequired: "required", CheckExpr: "check", CheckMaxFuture: "max_future", CheckMaxAge: "max_age", 0: "check_kind(0)", 9: "check_kind(9)"} {
		if k.String() != s {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), s)
		}
	}
	if !CheckMaxAge.TimeRule() || !CheckMaxFuture.TimeRule() || CheckExpr.TimeRule() || CheckRequired.TimeRule() {
		t.Error("TimeRule")
	}
}

func TestCheck(t *testing.T) {
	f, ch := compileFixture(t)
	neg, _ := row.ParseDecimal([]byte("-5000"))
	for _, tc := range []struct {
		name           string
		edit           func(r *row.Row)
		arrival        int64 // processing time passed to Check
		rule, field, r string
	}{
		{name: "pass", edit: func(r *row.Row) {}},
		{name: "a refund may be negative", edit: func(r *row.Row) {
			r.Set(f.amount, row.Dec(neg))
			r.Set(f.typ, row.Str("REFUND"))
		}},
		{name: "required id null", edit: func(r *row.Row) { r.SetNull(f.id.Index) },
			rule: "event_id_required", field: "event_id", r: "required field event_id is null or missing"},
		{name: "required checks come first, in field order", edit: func(r *row.Row) {
			r.SetNull(f.amount.Index)
			r.SetNull(f.id.Index)
			r.Set(f.paid, row.Time(t0+100*hour))
		}, rule: "event_id_required", field: "event_id", r: "required field event_id is null or missing"},
		{name: "check false", edit: func(r *row.Row) { r.Set(f.amount, row.Dec(neg)) },
			rule: "refund_sign", r: `check is false: amount >= 0 or event_type == "REFUND" (amount=-5000, event_type="PAYMENT")`},
		{name: "check null is a failure", edit: func(r *row.Row) {
			r.Set(f.amount, row.Dec(neg))
			r.SetNull(f.typ.Index)
		}, rule: "refund_sign", r: `check is null, which is not true: amount >= 0 or event_type == "REFUND" (amount=-5000, event_type=null)`},
		{name: "null left operand decided by the right", edit: func(r *row.Row) {
			r.Set(f.amount, row.Dec(neg))
			r.Set(f.typ, row.Str("REFUND"))
			r.SetNull(f.qty.Index) // per_unit is then null
		}, rule: "per_unit", r: `check is null, which is not true: amount / qty < 1000 (amount=-5000, qty=null)`},
		{name: "check error", edit: func(r *row.Row) { r.Set(f.qty, row.Int(0)) },
			rule: "per_unit", r: `check failed to evaluate: division by zero in amount / qty < 1000 (amount=25000, qty=0)`},
		{name: "max_future: exactly 24h passes (a later rule fails)", edit: func(r *row.Row) {
			r.Set(f.paid, row.Time(t0+24*hour))
			r.Set(f.at, row.Time(t0))
		}, rule: "produced_after_paid", field: "", r: `check is false: produced_at >= paid_at (produced_at=2026-09-01T01:00:00Z, paid_at=2026-09-02T01:00:00Z)`},
		{name: "max_future: 1ms more fails", edit: func(r *row.Row) {
			r.Set(f.paid, row.Time(t0+24*hour+1))
			r.Set(f.at, row.Time(t0))
		}, rule: "future", field: "paid_at", r: "event time 2026-09-02T01:00:00.001Z is 24h0m0.001s after its arrival 2026-09-01T01:00:00Z; max_future is 24h0m0s"},
		{name: "max_age", edit: func(r *row.Row) { r.Set(f.at, row.Time(t0+721*hour)) },
			rule: "old", field: "paid_at", r: "event time 2026-09-01T01:00:00Z is 721h0m0s before its arrival 2026-10-01T02:00:00Z; max_age is 720h0m0s"},
		{name: "max_age: exactly 720h passes", edit: func(r *row.Row) { r.Set(f.at, row.Time(t0+720*hour)) }},
		{name: "without an ingest time the processing time is the arrival", edit: func(r *row.Row) { r.SetNull(f.at.Index) },
			arrival: t0 - 25*hour, rule: "future", field: "paid_at",
			r: "event time 2026-09-01T01:00:00Z is 25h0m0s after its arrival 2026-08-31T00:00:00Z; max_future is 24h0m0s"},
		{name: "the ingest time wins over the processing time", edit: func(r *row.Row) {}, arrival: t0 - 25*hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.good(t)
			tc.edit(r)
			ts := r.I[f.paid.Slot]
			arrival := tc.arrival
			if arrival == 0 {
				arrival = t0 + 2000
			}
			rule, field, reason, ok := ch.Check(r, ts, arrival)
			if ok != (tc.rule == "") || rule != tc.rule || field != tc.field || reason != tc.r {
				t.Fatalf("got  (%q, %q, %q, %v)\nwant (%q, %q, %q, %v)", rule, field, reason, ok, tc.rule, tc.field, tc.r, tc.rule == "")
			}
		})
	}
}

// TestCheckSingleField: a check over one field names it.
func TestCheckSingleField(t *testing.T) {
	c := mustParse(t, doc(`rules: [{name: positive, check: amount > 0}, {name: const, check: "1 < 2"}]`))
	s := row.NewSchema()
	amount, _ := s.Add("amount", row.KindDecimal)
	ch, err := Compile(c, s, row.Field{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := ch.Checks(); got[0].Field != "amount" || got[1].Field != "" {
		t.Fatalf("%+v", got)
	}
	r := s.NewRow()
	rule, field, reason, ok := ch.Check(r, 0, 0)
	if ok || rule != "positive" || field != "amount" || reason != "check is null, which is not true: amount > 0 (amount=null)" {
		t.Fatalf("(%q, %q, %q, %v)", rule, field, reason, ok)
	}
	d, _ := row.ParseDecimal([]byte("2.50"))
	r.Set(amount, row.Dec(d))
	if rule, _, _, ok := ch.Check(r, 0, 0); !ok {
		t.Fatalf("failed %s", rule)
	}
}

func TestCheckOne(t *testing.T) {
	f, ch := compileFixture(t)
	r := f.good(t)
	r.SetNull(f.id.Index)
	r.Set(f.qty, row.Int(0))
	// Check stops at the first failure; CheckOne runs each alone.
	var failed []string
	for i, info := range ch.Checks() {
		if _, _, ok := ch.CheckOne(i, r, t0, t0); !ok {
			failed = append(failed, info.Rule)
		}
	}
	if got := strings.Join(failed, ","); got != "event_id_required,per_unit" {
		t.Fatalf("failed: %s", got)
	}
	for _, i := range []int{-1, ch.Len()} {
		if _, reason, ok := ch.CheckOne(i, r, t0, t0); ok || reason == "" {
			t.Fatalf("CheckOne(%d) = %q, %v", i, reason, ok)
		}
	}
}

// TestCheckExtremeTimes: differences that overflow int64 neither panic nor
// pass.
func TestCheckExtremeTimes(t *testing.T) {
	f, ch := compileFixture(t)
	r := f.good(t)
	r.SetNull(f.at.Index)
	rule, _, reason, ok := ch.Check(r, math.MaxInt64, math.MinInt64)
	if ok || rule != "future" || !strings.Contains(reason, " is 5124095576030h after its arrival ") {
		t.Fatalf("(%q, %q, %v)", rule, reason, ok)
	}
	rule, _, reason, ok = ch.Check(r, math.MinInt64, math.MaxInt64)
	if ok || rule != "old" || !strings.Contains(reason, " is 5124095576030h before its arrival ") {
		t.Fatalf("(%q, %q, %v)", rule, reason, ok)
	}
}

func TestCompileErrors(t *testing.T) {
	c := mustParse(t, checkContract)
	s := row.NewSchema()
	s.Add("event_id", row.KindString)
	s.Add("event_type", row.KindInt)
	at, _ := s.Add("produced_at", row.KindString)
	_, err := Compile(c, s, at, true)
	want := "ingest_time: field \"produced_at\" is string, want timestamp\n" +
		"rule amount_required: field \"amount\" is not in the schema\n" +
		"rule refund_sign: check: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got\n%v\nwant prefix\n%s", err, want)
	}
	for _, frag := range []string{"rule refund_sign: check: ", "rule produced_after_paid: check: ", "rule per_unit: check: "} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("no %q in\n%v", frag, err)
		}
	}

	c = mustParse(t, doc(`rules: [{name: not_bool, check: amount + 1}]`))
	s = row.NewSchema()
	s.Add("amount", row.KindDecimal)
	if _, err := Compile(c, s, row.Field{}, false); err == nil || err.Error() != `rule not_bool: check "amount + 1" is decimal, want a bool (a condition every record must meet)` {
		t.Fatalf("got %v", err)
	}
	c = mustParse(t, doc(`rules: [{name: unknown, check: amout > 0}]`))
	_, err = Compile(c, s, row.Field{}, false)
	if err == nil || !strings.HasPrefix(err.Error(), "rule unknown: check: ") || !strings.Contains(err.Error(), "amout") {
		t.Fatalf("got %v", err)
	}
}

func TestRuleFields(t *testing.T) {
	c := mustParse(t, checkContract)
	got, err := RuleFields(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"event_id", "amount", "event_type", "produced_at", "paid_at", "qty"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// ingest_time is listed for time rules even when no check reads it.
	c = mustParse(t, doc("fields: {id: string, ts: timestamp, at: timestamp}", "ingest_time: at", "rules: [{name: f, max_future: 1h}]"))
	if got, err := RuleFields(c); err != nil || !reflect.DeepEqual(got, []string{"at"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	c = mustParse(t, doc())
	if got, err := RuleFields(c); err != nil || got != nil {
		t.Fatalf("got %q, %v", got, err)
	}
	c.Rules = []Rule{{Name: "broken", Check: "a +"}}
	if _, err := RuleFields(c); err == nil || !strings.HasPrefix(err.Error(), `rule broken: check: syntax error in "a +"`) {
		t.Fatalf("got %v", err)
	}
}

// TestCheckAllocs: the pass path allocates nothing.
func TestCheckAllocs(t *testing.T) {
	f, ch := compileFixture(t)
	r := f.good(t)
	if _, _, _, ok := ch.Check(r, t0, t0); !ok {
		t.Fatal("the good row fails")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, _, _, ok := ch.Check(r, t0, t0); !ok {
			panic("failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("Check allocates %v times per record", allocs)
	}
}

func BenchmarkCheck(b *testing.B) {
	c, err := Parse("c.yaml", []byte(checkContract))
	if err != nil {
		b.Fatal(err)
	}
	s := row.NewSchema()
	id, _ := s.Add("event_id", row.KindString)
	typ, _ := s.Add("event_type", row.KindString)
	amount, _ := s.Add("amount", row.KindDecimal)
	qty, _ := s.Add("qty", row.KindInt)
	paid, _ := s.Add("paid_at", row.KindTime)
	at, _ := s.Add("produced_at", row.KindTime)
	ch, err := Compile(c, s, at, true)
	if err != nil {
		b.Fatal(err)
	}
	r := s.NewRow()
	d, _ := row.ParseDecimal([]byte("25000"))
	r.Set(id, row.Str("e100"))
	r.Set(typ, row.Str("PAYMENT"))
	r.Set(amount, row.Dec(d))
	r.Set(qty, row.Int(3))
	r.Set(paid, row.Time(t0))
	r.Set(at, row.Time(t0+1000))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok := ch.Check(r, t0, t0); !ok {
			b.Fatal("failed")
		}
	}
}

// TestRuleWithMisspeltField: a rule naming a field the contract does not
// declare is refused when the contract compiles, naming the field.
func TestRuleWithMisspeltField(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`product: p
owner: o
schema_version: "1"
fields:
  id: {type: string}
  quantity: {type: int}
  ts: {type: timestamp}
event_id: id
event_time: {field: ts}
rules:
  - {name: quantity_sign, check: quantiy >= 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := row.NewSchema()
	for _, f := range []struct {
		n string
		k row.Kind
	}{{"id", row.KindString}, {"quantity", row.KindInt}, {"ts", row.KindTime}, {"quantiy", row.KindString}} {
		s.Add(f.n, f.k)
	}
	_, err = Compile(c, s, row.Field{}, false)
	if err == nil || !strings.Contains(err.Error(), `rule quantity_sign: check: "quantiy" is not a field of the contract (fields: id, quantity, ts)`) {
		t.Errorf("Compile: %v", err)
	}
}
