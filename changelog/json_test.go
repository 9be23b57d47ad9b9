package changelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // zones in tests do not depend on the machine

	"github.com/tidemark/tidemark/row"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func ms(t testing.TB, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

func dec(t testing.TB, s string) row.Value {
	t.Helper()
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return row.Dec(d)
}

var revenueDesc = Desc{
	Stage:    "revenue",
	Key:      []Column{{Name: "store", Kind: row.KindString}, {Name: "open", Kind: row.KindBool}},
	Values:   []Column{{Name: "revenue", Kind: row.KindDecimal}, {Name: "orders", Kind: row.KindInt}, {Name: "last_at", Kind: row.KindTime}},
	Timezone: "Asia/Seoul",
}

func revenueRow(t testing.TB) Row {
	return Row{
		Op:          UpdateAfter,
		WindowStart: ms(t, "2026-09-01T01:00:00Z"),
		WindowEnd:   ms(t, "2026-09-01T01:01:00Z"),
		Key:         []row.Value{row.Str("s-1"), row.Bool(true)},
		Values:      []row.Value{dec(t, "20.00"), row.Int(3), row.Time(ms(t, "2026-09-01T01:00:59.250Z"))},
		Version:     2,
		IsFinal:     false,
		WatermarkAt: ms(t, "2026-09-01T01:01:30Z"),
		UpdatedAt:   ms(t, "2026-09-01T01:01:31.007Z"),
	}
}

func TestAppendRowJSON(t *testing.T) {
	seoul := mustLoc(t, "Asia/Seoul")
	r := revenueRow(t)
	got := string(AppendRowJSON(nil, &r, &revenueDesc, seoul))
	want := `{"op":"update_after","window_start":"2026-09-01T10:00:00+09:00","window_end":"2026-09-01T10:01:00+09:00",` +
		`"store":"s-1","open":true,"revenue":20.00,"orders":3,"last_at":"2026-09-01T10:00:59.250+09:00",` +
		`"version":2,"is_final":false,"watermark_at":"2026-09-01T10:01:30+09:00","updated_at":"2026-09-01T10:01:31.007+09:00"}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatal("not valid JSON")
	}

	// Nulls, watermark infinity and none, UTC, appending to a non-empty dst.
	r.Op, r.IsFinal, r.WatermarkAt = Insert, true, WatermarkInfinity
	r.Key = []row.Value{row.Null, row.Null}
	r.Values = []row.Value{row.Null, row.Null, row.Null}
	got = string(AppendRowJSON([]byte("x"), &r, &revenueDesc, nil))
	want = `x{"op":"insert","window_start":"2026-09-01T01:00:00Z","window_end":"2026-09-01T01:01:00Z",` +
		`"store":null,"open":null,"revenue":null,"orders":null,"last_at":null,` +
		`"version":2,"is_final":true,"watermark_at":"infinity","updated_at":"2026-09-01T01:01:31.007Z"}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	r.WatermarkAt = WatermarkNone
	if got := string(AppendRowJSON(nil, &r, &revenueDesc, nil)); !strings.Contains(got, `"watermark_at":null,`) {
		t.Fatalf("WatermarkNone: %s", got)
	}
}

func TestAppendRowJSONDecimals(t *testing.T) {
	d := Desc{Values: []Column{{Name: "x", Kind: row.KindDecimal}}}
	for _, tc := range []struct{ in, want string }{
		{"20.00", "20.00"},
		{"-5000", "-5000"},
		{"0.908", "0.908"},
		{"-0.05", "-0.05"},
		{"2e1", "20"},
		{"1.25e3", "1250"},
		{"2E-2", "0.02"},
		{"0.0000000000000000001", "0.0000000000000000001"},
		{"12345678901234567890123456789.123456789", "12345678901234567890123456789.123456789"},
		{"0.00", "0"}, // udecimal keeps no scale for zero
	} {
		r := Row{Values: []row.Value{dec(t, tc.in)}}
		got := string(AppendRowJSON(nil, &r, &d, nil))
		if !strings.Contains(got, `"x":`+tc.want+`,`) {
			t.Errorf("%s: got %s, want x = %s", tc.in, got, tc.want)
		}
	}
}

func TestAppendRowJSONZeroAllocs(t *testing.T) {
	r := revenueRow(t)
	// A decimal with a 128-bit coefficient, and a string that needs escaping.
	r.Values[0] = dec(t, "12345678901234567890123.45")
	r.Key[0] = row.Str("caf\u00e9 \"1\"\n")
	loc := mustLoc(t, "Asia/Seoul")
	buf := make([]byte, 0, 1024)
	n := testing.AllocsPerRun(1000, func() {
		buf = AppendRowJSON(buf[:0], &r, &revenueDesc, loc)
	})
	if n != 0 {
		t.Fatalf("AppendRowJSON allocates %.1f times per row, want 0", n)
	}
	l := LateRecord{Stage: "s", Event: []byte(`{"a":1}`), Reason: "late", Position: Position{Source: "in.jsonl", Line: 3}}
	q := QuarantineRecord{Stage: "s", Raw: []byte("x\xff"), Reason: "bad", Rule: "decode", Position: Position{Source: "t", Partition: "0", Offset: 9}}
	n = testing.AllocsPerRun(1000, func() {
		buf = AppendLateJSON(buf[:0], &l, loc)
		buf = AppendQuarantineJSON(buf[:0], &q, loc)
	})
	if n != 0 {
		t.Fatalf("AppendLateJSON + AppendQuarantineJSON allocate %.1f times, want 0", n)
	}
}

func TestAppendLateJSON(t *testing.T) {
	seoul := mustLoc(t, "Asia/Seoul")
	l := LateRecord{
		Stage:            "revenue",
		Event:            []byte("{\"id\": \"e1\",\n \"amount\": 20.00}"),
		EventTime:        ms(t, "2026-09-01T01:00:10Z"),
		ObservedAt:       ms(t, "2026-09-01T01:10:00Z"),
		CurrentWatermark: ms(t, "2026-09-01T01:05:00Z"),
		LatenessMs:       290000,
		Reason:           "window closed",
		Position:         Position{Source: "data/orders.jsonl", Line: 42, Offset: 4096},
	}
	got := string(AppendLateJSON(nil, &l, seoul))
	want := `{"stage":"revenue","event":{"id": "e1",  "amount": 20.00},"event_time":"2026-09-01T10:00:10+09:00",` +
		`"observed_at":"2026-09-01T10:10:00+09:00","current_watermark":"2026-09-01T10:05:00+09:00","lateness_ms":290000,` +
		`"reason":"window closed","source":"data/orders.jsonl:42"}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	// An event that is not JSON is kept as a string; none is null.
	l.Event = []byte("a,b,\"c\"")
	l.CurrentWatermark = WatermarkNone
	l.Position = Position{Source: "orders", Partition: "3", Offset: 17}
	got = string(AppendLateJSON(nil, &l, nil))
	for _, part := range []string{`"event":"a,b,\"c\""`, `"current_watermark":null`, `"source":"orders[3]@17"`} {
		if !strings.Contains(got, part) {
			t.Errorf("%s lacks %s", got, part)
		}
	}
	l.Event = nil
	if got := string(AppendLateJSON(nil, &l, nil)); !strings.Contains(got, `"event":null,`) || !json.Valid([]byte(got)) {
		t.Errorf("nil event: %s", got)
	}
}

func TestAppendQuarantineJSON(t *testing.T) {
	q := QuarantineRecord{
		Stage:    "revenue",
		Raw:      []byte("{\"amount\": \"x\xff\"}"),
		Reason:   "field amount: \"x\xff\" is not a decimal",
		Field:    "amount",
		Rule:     "type",
		Position: Position{Source: "data/orders.jsonl", Line: 7, Offset: 310},
	}
	got := string(AppendQuarantineJSON(nil, &q, nil))
	// Not valid UTF-8: raw_base64 keeps the original bytes (base64 of
	// {"amount": "x<0xff>"}, computed outside Go).
	want := `{"stage":"revenue","raw":"{\"amount\": \"x\ufffd\"}","raw_base64":"eyJhbW91bnQiOiAieP8ifQ==","reason":"field amount: \"x\ufffd\" is not a decimal",` +
		`"field":"amount","rule":"type","source":{"file":"data/orders.jsonl","partition":null,"line":7,"offset":310}}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	q.Field = ""
	q.Position = Position{Source: "orders", Partition: "2", Offset: 99}
	got = string(AppendQuarantineJSON(nil, &q, nil))
	q.Raw = []byte(`{"amount": "x"}`) // valid UTF-8: no raw_base64
	if s := string(AppendQuarantineJSON(nil, &q, nil)); strings.Contains(s, "raw_base64") {
		t.Fatalf("valid UTF-8 with raw_base64: %s", s)
	}
	if !strings.Contains(got, `"field":null,`) ||
		!strings.HasSuffix(got, `"source":{"topic":"orders","partition":"2","line":null,"offset":99}}`) {
		t.Fatalf("log position: %s", got)
	}
	// A file split into partitions by a field keeps "file".
	q.Position = Position{Source: "in.csv", Partition: "eu", Line: 5, Offset: 80}
	got = string(AppendQuarantineJSON(nil, &q, nil))
	if !strings.HasSuffix(got, `"source":{"file":"in.csv","partition":"eu","line":5,"offset":80}}`) || !json.Valid([]byte(got)) {
		t.Fatalf("partitioned file position: %s", got)
	}
}

func TestAppendStringControlAndSeparators(t *testing.T) {
	got := string(appendString(nil, "a\"\\\n\r\t\x00\x1f\x7f\u2028\u2029é\xc3"))
	want := `"a\"\\\n\r\t\u0000\u001f` + "\x7f" + `\u2028\u2029é\ufffd"`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestDecodeRowJSON(t *testing.T) {
	seoul := mustLoc(t, "Asia/Seoul")
	r := revenueRow(t)
	line := AppendRowJSON(nil, &r, &revenueDesc, seoul)
	got, err := DecodeRowJSON(line, &revenueDesc)
	if err != nil {
		t.Fatal(err)
	}
	if msg := rowDiff(&r, &got); msg != "" {
		t.Fatal(msg)
	}
	if d := got.Values[0].D; d.Prec() != 2 {
		t.Fatalf("revenue scale %d, want 2", d.Prec())
	}
	// Keys in another order are accepted.
	reordered := `{"updated_at":"2026-09-01T01:01:31.007Z","is_final":false,"version":2,"watermark_at":"infinity",` +
		`"last_at":null,"orders":3,"revenue":20.00,"open":true,"store":"s-1",` +
		`"window_end":"2026-09-01T10:01:00+09:00","window_start":"2026-09-01T10:00:00+09:00","op":"+U"}`
	got, err = DecodeRowJSON([]byte(reordered), &revenueDesc)
	if err != nil {
		t.Fatal(err)
	}
	r.WatermarkAt = WatermarkInfinity
	r.Values[2] = row.Null
	if msg := rowDiff(&r, &got); msg != "" {
		t.Fatal(msg)
	}
}

func TestDecodeRowJSONErrors(t *testing.T) {
	r := revenueRow(t)
	good := string(AppendRowJSON(nil, &r, &revenueDesc, nil))
	for _, tc := range []struct{ name, line, want string }{
		{"not JSON", `{"op":`, "cannot parse"},
		{"not an object", `[1]`, "not an object"},
		{"missing key", strings.Replace(good, `"orders":3,`, "", 1), `missing key "orders"`},
		{"unknown key", strings.Replace(good, `"orders":3,`, `"orders":3,"extra":1,`, 1), `unknown key "extra"`},
		{"duplicate key", strings.Replace(good, `"orders":3,`, `"orders":3,"orders":4,`, 1), `"orders" appears twice`},
		{"decimal as string", strings.Replace(good, `20.00`, `"20.00"`, 1), `"revenue"`},
		{"bad decimal", strings.Replace(good, `20.00`, `NaN`, 1), `"revenue"`},
		{"int with fraction", strings.Replace(good, `"orders":3`, `"orders":3.5`, 1), `"orders"`},
		{"time without offset", strings.Replace(good, `"2026-09-01T01:00:00Z"`, `"2026-09-01T01:00:00"`, 1), `"window_start"`},
		{"bad op", strings.Replace(good, `update_after`, `upsert`, 1), `"op"`},
		{"bool as string", strings.Replace(good, `"open":true`, `"open":"true"`, 1), `"open"`},
		{"negative version", strings.Replace(good, `"version":2`, `"version":-2`, 1), `"version"`},
	} {
		_, err := DecodeRowJSON([]byte(tc.line), &revenueDesc)
		if err == nil || !errors.Is(err, ErrRowJSON) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one wrapping ErrRowJSON containing %s", tc.name, err, tc.want)
		}
	}
}

// rowDiff describes how b differs from a ("" when equal). Decimals must be
// equal in value and in scale.
func rowDiff(a, b *Row) string {
	var buf bytes.Buffer
	if a.Op != b.Op || a.WindowStart != b.WindowStart || a.WindowEnd != b.WindowEnd || a.Version != b.Version ||
		a.IsFinal != b.IsFinal || a.WatermarkAt != b.WatermarkAt || a.UpdatedAt != b.UpdatedAt {
		buf.WriteString("fixed fields differ; ")
	}
	cmp := func(what string, x, y []row.Value) {
		if len(x) != len(y) {
			buf.WriteString(what + " lengths differ; ")
			return
		}
		for i := range x {
			if !x[i].Equal(y[i]) || (x[i].Kind == row.KindDecimal && x[i].D.Prec() != y[i].D.Prec()) {
				buf.WriteString(what + "[" + x[i].String() + " vs " + y[i].String() + "]; ")
			}
		}
	}
	cmp("key", a.Key, b.Key)
	cmp("values", a.Values, b.Values)
	if buf.Len() == 0 {
		return ""
	}
	return fmt.Sprintf("%s\n%+v\n%+v", buf.String(), *a, *b)
}
