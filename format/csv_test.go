package format

import (
	"errors"
	"testing"

	"github.com/tidemark/tidemark/source"
)

func TestCSVDecode(t *testing.T) {
	f := testFields(t, "s:string", "i:int", "d:decimal", "b:bool", "t:timestamp/london", "e:timestamp/epoch_s", "n:int/derived")
	header := []string{"e", "t", "b", "d", "i", "s", "extra", "s"}
	tests := []struct {
		name   string
		record []string
		want   string
		err    string
	}{
		{
			name:   "all kinds",
			record: []string{"1700000000.25", "2011-06-01 08:26:00", "true", "2.55", "-6", "WHITE, HEART", "ignored", "second s"},
			want:   `s="WHITE, HEART" i=-6 d=2.55 b=true t=2011-06-01T07:26:00Z e=2023-11-14T22:13:20.250Z n=null`,
		},
		{
			name:   "empty text is null for every kind",
			record: []string{"", "", "", "", "", "", "", ""},
			want:   `s=null i=null d=null b=null t=null e=null n=null`,
		},
		{
			name:   "int with zero fraction, bool any case",
			record: []string{"", "", "False", "1E2", "17850.0", "", "", ""},
			want:   `s=null i=17850 d=100 b=false t=null e=null n=null`,
		},
		{
			name:   "not trimmed",
			record: []string{"", "", "", "", " 5", "x", "", ""},
			want:   `s="x" i=null d=null b=null t=null e=null n=null`,
			err:    `i type: want int, got " 5" (not an integer)`,
		},
		{
			name:   "bad decimal",
			record: []string{"", "", "", "£3", "", "", "", ""},
			want:   `s=null i=null d=null b=null t=null e=null n=null`,
			err:    `d type: want decimal, got "£3"`,
		},
		{
			name:   "bad bool",
			record: []string{"", "", "yes", "", "", "", "", ""},
			want:   `s=null i=null d=null b=null t=null e=null n=null`,
			err:    `b type: want bool, got "yes"`,
		},
		{
			name:   "local time skipped by DST",
			record: []string{"", "2011-03-27 01:30:00", "", "", "", "", "", ""},
			want:   `s=null i=null d=null b=null t=null e=null n=null`,
			err:    `t timestamp: local time does not exist in zone: "2011-03-27 01:30:00" in Europe/London`,
		},
		{
			name:   "repeated local hour resolves to the first",
			record: []string{"", "2011-10-30 01:30:00", "", "", "", "", "", ""},
			want:   `s=null i=null d=null b=null t=2011-10-30T00:30:00Z e=null n=null`,
		},
		{
			name:   "first error wins, rest decoded",
			record: []string{"x", "", "", "1.5", "1.5", "", "", ""},
			want:   `s=null i=null d=1.5 b=null t=null e=null n=null`,
			err:    `i type: want int, got "1.5" (has a fraction)`,
		},
		{
			// Five empty fields and their commas: s starts at byte 5.
			name:   "a NUL character in a string",
			record: []string{"", "", "", "", "", "ab\x00c", "", "k"},
			want:   `s=null i=null d=null b=null t=null e=null n=null`,
			err:    `s encoding: NUL character at byte 7 (PostgreSQL text cannot store it)`,
		},
		{
			// s starts at byte 9 (",,true,,,"): \xc3 is byte 12.
			name:   "invalid UTF-8 in a string, the other fields still decoded",
			record: []string{"", "", "true", "", "", "caf\xc3", "", "k"},
			want:   `s=null i=null d=null b=true t=null e=null n=null`,
			err:    `s encoding: invalid UTF-8 at byte 12`,
		},
		{
			name:   "valid UTF-8 and control characters other than NUL are text",
			record: []string{"", "", "", "", "", "café\t\x01😀", "", "k"},
			want:   `s="café\t\x01😀" i=null d=null b=null t=null e=null n=null`,
		},
		{
			name:   "too few fields",
			record: []string{"1", "2"},
			want:   `s=null i=null d=null b=null t=null e=null n=null`,
			err:    `decode: record has 2 fields, header has 8`,
		},
		{
			name:   "too many fields",
			record: []string{"", "", "", "", "", "", "", "", ""},
			want:   `s=null i=null d=null b=null t=null e=null n=null`,
			err:    `decode: record has 9 fields, header has 8`,
		},
	}
	d, err := NewCSV(f, header)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.Schema.NewRow()
			got := errText(d.Decode(csvRecord(tc.record...), r, new(source.Arena)))
			if got != tc.err {
				t.Errorf("error\n got: %s\nwant: %s", got, tc.err)
			}
			if g := render(f.Schema, r); g != tc.want {
				t.Errorf("row\n got: %s\nwant: %s", g, tc.want)
			}
		})
	}
}

func TestNewCSVMissingColumns(t *testing.T) {
	f := testFields(t, "InvoiceNo:string", "Quantity:int", "line_no:int/derived", "Country:string")
	_, err := NewCSV(f, []string{"InvoiceNo", "quantity", "Price"})
	var mc *MissingColumnsError
	if !errors.As(err, &mc) {
		t.Fatalf("err = %v, want *MissingColumnsError", err)
	}
	want := `no column "Quantity" (did you mean quantity?), "Country" in CSV header ["InvoiceNo" "quantity" "Price"]`
	if err.Error() != want {
		t.Fatalf("err = %s\nwant  %s", err, want)
	}
	if _, err := NewCSV(f, []string{"Country", "Quantity", "InvoiceNo"}); err != nil {
		t.Fatalf("derived field needs no column: %v", err)
	}
}

func TestCSVZeroAllocs(t *testing.T) {
	f := testFields(t, "InvoiceNo:string", "Quantity:int", "UnitPrice:decimal", "Country:string")
	header := []string{"InvoiceNo", "StockCode", "Description", "Quantity", "InvoiceDate", "UnitPrice", "CustomerID", "Country"}
	rec := []string{"536365", "85123A", "WHITE HANGING HEART T-LIGHT HOLDER", "6", "2010-12-01 08:26:00", "2.55", "17850.0", "United Kingdom"}
	d, err := NewCSV(f, header)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Schema.NewRow()
	cr := csvRecord(rec...)
	var a source.Arena
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		if n%512 == 0 {
			a.Reset() // as a batch is reset before each Next
		}
		n++
		f.Schema.Shape(r)
		if e := d.Decode(cr, r, &a); e != nil {
			t.Fatal(e)
		}
	})
	if allocs != 0 {
		t.Fatalf("Decode allocates %.2f times per record, want 0", allocs)
	}
}
