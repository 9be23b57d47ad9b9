package format

import (
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// FuzzSmallDecimal: the fast path returns exactly row.ParseDecimal's value
// (coefficient, sign and scale) wherever it applies.
func FuzzSmallDecimal(f *testing.F) {
	for _, s := range []string{"141.09", "-5000", "0", "-0", "0.00", "49000", "12.345", "123456789012345678", "1234567890123456789", "1.", ".5", "-", "+1", "1e3", "00012.50", "-0.000000000000000001", "9.9999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := smallDecimal([]byte(s))
		if !ok {
			return
		}
		want, err := row.ParseDecimal([]byte(s))
		if err != nil || d != want || d.PrecUint() != want.PrecUint() {
			t.Fatalf("%q: fast %v (scale %d), row.ParseDecimal %v (scale %d), %v", s, d, d.PrecUint(), want, want.PrecUint(), err)
		}
	})
}

func TestSmallDecimalApplies(t *testing.T) {
	for _, s := range []string{"141.09", "-5000", "49000", "12.345", "123456789012345678"} {
		if _, ok := smallDecimal([]byte(s)); !ok {
			t.Errorf("%q: the fast path does not apply", s)
		}
	}
}

// TestDecodeKeyOrdersDoNotAllocate: lines whose members come in changing
// orders (re-serialized redeliveries between ordinary lines) decode
// without allocating: the key hints reuse their bytes.
func TestDecodeKeyOrdersDoNotAllocate(t *testing.T) {
	f := testFields(t, articleSpecs...)
	d := NewJSON(f)
	r := f.Schema.NewRow()
	var a source.Arena
	shuffled := []byte(`{"paid_at": "2026-06-23T23:59:33+09:00", "store_id": "store-0327", "amount": 141.09, "event_id": "evt-20260624-0000001", "produced_at": "2026-06-23T23:59:35+09:00", "currency": "USD", "order_id": "ord-0000001", "event_version": 1, "event_type": "ORDER_PAID"}`)
	i := 0
	decode := func() {
		line := articleLine
		if i%2 == 1 {
			line = shuffled
		}
		i++
		a.Reset()
		f.Schema.Shape(r)
		if e := d.Decode(line, r, &a); e != nil {
			t.Fatal(e)
		}
	}
	for range 4 {
		decode()
	}
	if n := testing.AllocsPerRun(100, decode); n != 0 {
		t.Errorf("%v allocations per line, want 0", n)
	}
}
