package file

import (
	"slices"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

func TestSource(t *testing.T) {
	no := false
	tests := []struct {
		name   string
		files  map[string]string
		spec   spec.Source // Path is relative to the files' directory
		fields []string
		et     string
		max    int
		want   []rec
		parts  []string // Partitions() at the end; default ["0"]
	}{
		{
			name: "jsonl: blank lines, CRLF, BOM, bad lines, no final newline",
			files: map[string]string{"a.jsonl": "\xEF\xBB\xBF{\"id\":\"e1\",\"amount\":10.50,\"ts\":\"2026-09-01T10:00:00+09:00\"}\n" +
				"\n" +
				" \t\r\n" +
				"{\"id\":\"e2\",\"amount\":\"x\",\"ts\":\"2026-09-01T10:01:00+09:00\"}\r\n" +
				"not json\n" +
				"{\"id\":\"e3\",\"ts\":\"2026-09-01T10:02:00Z\",\"extra\":[1]}"},
			spec:   spec.Source{Path: "a.jsonl"},
			fields: []string{"id:string", "amount:decimal", "ts:timestamp"},
			et:     "ts",
			max:    2,
			want: []rec{
				{`id="e1" amount=10.50 ts=2026-09-01T01:00:00Z`, `p=0/ at=none a.jsonl:1@3 raw="{\"id\":\"e1\",\"amount\":10.50,\"ts\":\"2026-09-01T10:00:00+09:00\"}"`},
				{`id="e2" amount=null ts=2026-09-01T01:01:00Z`, `p=0/ at=none a.jsonl:4@68 raw="{\"id\":\"e2\",\"amount\":\"x\",\"ts\":\"2026-09-01T10:01:00+09:00\"}" err=type field amount: want decimal, got string "x"`},
				{`id=null amount=null ts=null`, `p=0/ at=none a.jsonl:5@127 raw="not json" err=decode invalid JSON at byte 2: invalid character 'o' in literal null (expecting 'u')`},
				{`id="e3" amount=null ts=2026-09-01T10:02:00Z`, `p=0/ at=none a.jsonl:6@136 raw="{\"id\":\"e3\",\"ts\":\"2026-09-01T10:02:00Z\",\"extra\":[1]}"`},
			},
		},
		{
			name: "csv: quoted commas and newlines, per-file headers, bad records",
			files: map[string]string{
				"d/1.csv": "InvoiceNo,Description,Quantity,InvoiceDate\r\n" +
					"536365,\"WHITE, HEART\",6,2010-12-01 08:26:00\r\n" +
					"\r\n" +
					"536366,\"two\nlines \"\"quoted\"\"\",-2,2010-12-01 08:28:00\r\n" +
					"536367,short\r\n" +
					"536368,bare\"quote,1,2010-12-01 08:29:00\r\n" +
					"536369,,x,2010-12-01 08:30:00",
				"d/2.csv": "\xEF\xBB\xBFQuantity,InvoiceNo,InvoiceDate,Description,Extra\n" +
					"3,C536379,2011-06-01 09:00:00,,e\n",
				"d/.hidden.csv": "not,a,csv,for,us\n",
			},
			spec:   spec.Source{Path: "d", Format: "csv"},
			fields: []string{"InvoiceNo:string", "Quantity:int", "InvoiceDate:timestamp/london", "Description:string"},
			et:     "InvoiceDate",
			max:    100,
			want: []rec{
				{`InvoiceNo="536365" Quantity=6 InvoiceDate=2010-12-01T08:26:00Z Description="WHITE, HEART"`, `p=0/ at=none d/1.csv:2@44 raw="536365,\"WHITE, HEART\",6,2010-12-01 08:26:00"`},
				{`InvoiceNo="536366" Quantity=-2 InvoiceDate=2010-12-01T08:28:00Z Description="two\nlines \"quoted\""`, `p=0/ at=none d/1.csv:4@91 raw="536366,\"two\nlines \"\"quoted\"\"\",-2,2010-12-01 08:28:00"`},
				{`InvoiceNo=null Quantity=null InvoiceDate=null Description=null`, `p=0/ at=none d/1.csv:6@145 raw="536367,short" err=decode record has 2 fields, header has 4`},
				{`InvoiceNo=null Quantity=null InvoiceDate=null Description=null`, `p=0/ at=none d/1.csv:7@159 raw="536368,bare\"quote,1,2010-12-01 08:29:00" err=decode parse error on line 7, column 12: bare " in non-quoted-field`},
				{`InvoiceNo="536369" Quantity=null InvoiceDate=2010-12-01T08:30:00Z Description=null`, `p=0/ at=none d/1.csv:8@200 raw="536369,,x,2010-12-01 08:30:00" err=type field Quantity: want int, got "x" (not an integer)`},
				{`InvoiceNo="C536379" Quantity=3 InvoiceDate=2011-06-01T08:00:00Z Description=null`, `p=0/ at=none d/2.csv:2@52 raw="3,C536379,2011-06-01 09:00:00,,e"`},
			},
		},
		{
			name: "csv without header, other delimiter",
			files: map[string]string{
				"a.txt": "1;x\n2;\"y;z\"\n",
			},
			spec:   spec.Source{Path: "a.txt", Format: "csv", CSV: spec.CSVOptions{Delimiter: ";", Header: &no, Columns: []string{"n", "s"}}},
			fields: []string{"s:string", "n:int"},
			max:    1,
			want: []rec{
				{`s="x" n=1`, `p=0/ at=none a.txt:1@0 raw="1;x"`},
				{`s="y;z" n=2`, `p=0/ at=none a.txt:2@4 raw="2;\"y;z\""`},
			},
		},
		{
			name: "glob, sorted by path",
			files: map[string]string{
				"b.jsonl": `{"n":2}` + "\n",
				"a.jsonl": `{"n":1}` + "\n",
				"c.json":  `{"n":3}` + "\n",
			},
			spec:   spec.Source{Path: "*.jsonl"},
			fields: []string{"n:int"},
			max:    10,
			want: []rec{
				{`n=1`, `p=0/ at=none a.jsonl:1@0 raw="{\"n\":1}"`},
				{`n=2`, `p=0/ at=none b.jsonl:1@0 raw="{\"n\":2}"`},
			},
		},
		{
			name: "partition_field and arrival_time_field",
			files: map[string]string{"a.jsonl": `{"shop":"B","ts":"2026-09-01T10:00:00Z","at":"2026-09-01T10:00:05Z"}
{"shop":"A","ts":"2026-09-01T10:00:01Z","at":"2026-09-01T10:00:06Z"}
{"shop":"C","ts":"bad"}
{"shop":"D"}
{"ts":"2026-09-01T10:00:02Z","at":"2026-09-01T10:00:07Z"}
{"shop":"B","ts":"2026-09-01T10:00:03Z"}
{"shop":"A","ts":"x","at":"2026-09-01T10:00:09Z"}
{"shop":7,"ts":"2026-09-01T10:00:04Z","at":"2026-09-01T10:00:10Z"}
`},
			spec:   spec.Source{Path: "a.jsonl", PartitionField: "shop", ArrivalTimeField: "at"},
			fields: []string{"shop:string", "ts:timestamp", "at:timestamp"},
			et:     "ts",
			max:    3,
			parts:  []string{"B", "A", "", "7"},
			want: []rec{
				{`shop="B" ts=2026-09-01T10:00:00Z at=2026-09-01T10:00:05Z`, `p=0/B at=2026-09-01T10:00:05Z a.jsonl:1@0 raw="{\"shop\":\"B\",\"ts\":\"2026-09-01T10:00:00Z\",\"at\":\"2026-09-01T10:00:05Z\"}"`},
				{`shop="A" ts=2026-09-01T10:00:01Z at=2026-09-01T10:00:06Z`, `p=1/A at=2026-09-01T10:00:06Z a.jsonl:2@69 raw="{\"shop\":\"A\",\"ts\":\"2026-09-01T10:00:01Z\",\"at\":\"2026-09-01T10:00:06Z\"}"`},
				{`shop="C" ts=null at=null`, `p=1/A at=2026-09-01T10:00:06Z a.jsonl:3@138 raw="{\"shop\":\"C\",\"ts\":\"bad\"}" err=timestamp field ts: unparsable timestamp: "bad" is not RFC 3339`},
				{`shop="D" ts=null at=null`, `p=1/A at=2026-09-01T10:00:06Z a.jsonl:4@162 raw="{\"shop\":\"D\"}"`},
				{`shop=null ts=2026-09-01T10:00:02Z at=2026-09-01T10:00:07Z`, `p=2/ at=2026-09-01T10:00:07Z a.jsonl:5@175 raw="{\"ts\":\"2026-09-01T10:00:02Z\",\"at\":\"2026-09-01T10:00:07Z\"}"`},
				{`shop="B" ts=2026-09-01T10:00:03Z at=null`, `p=0/B at=2026-09-01T10:00:07Z a.jsonl:6@233 raw="{\"shop\":\"B\",\"ts\":\"2026-09-01T10:00:03Z\"}"`},
				{`shop="A" ts=null at=2026-09-01T10:00:09Z`, `p=1/A at=2026-09-01T10:00:09Z a.jsonl:7@274 raw="{\"shop\":\"A\",\"ts\":\"x\",\"at\":\"2026-09-01T10:00:09Z\"}" err=timestamp field ts: unparsable timestamp: "x" is not RFC 3339`},
				{`shop="7" ts=2026-09-01T10:00:04Z at=2026-09-01T10:00:10Z`, `p=3/7 at=2026-09-01T10:00:10Z a.jsonl:8@324 raw="{\"shop\":7,\"ts\":\"2026-09-01T10:00:04Z\",\"at\":\"2026-09-01T10:00:10Z\"}"`},
			},
		},
		{
			name: "ordinal per invoice, restarting per file",
			files: map[string]string{
				"1.csv": "inv,sku\nA,1\nA,2\nB,3\nA,4\n,5\n,6\nA,7,extra\nA,8\n",
				"2.csv": "inv,sku\nA,9\n",
			},
			spec:   spec.Source{Path: ".", Format: "csv", Ordinal: &spec.Ordinal{Field: "line", Per: "inv"}},
			fields: []string{"inv:string", "sku:int", "line:int"},
			max:    4,
			want: []rec{
				{`inv="A" sku=1 line=1`, `p=0/ at=none 1.csv:2@8 raw="A,1"`},
				{`inv="A" sku=2 line=2`, `p=0/ at=none 1.csv:3@12 raw="A,2"`},
				{`inv="B" sku=3 line=1`, `p=0/ at=none 1.csv:4@16 raw="B,3"`},
				{`inv="A" sku=4 line=3`, `p=0/ at=none 1.csv:5@20 raw="A,4"`},
				{`inv=null sku=5 line=1`, `p=0/ at=none 1.csv:6@24 raw=",5"`},
				{`inv=null sku=6 line=2`, `p=0/ at=none 1.csv:7@27 raw=",6"`},
				{`inv=null sku=null line=3`, `p=0/ at=none 1.csv:8@30 raw="A,7,extra" err=decode record has 3 fields, header has 2`},
				{`inv="A" sku=8 line=4`, `p=0/ at=none 1.csv:9@40 raw="A,8"`},
				{`inv="A" sku=9 line=1`, `p=0/ at=none 2.csv:2@8 raw="A,9"`},
			},
		},
		{
			name: "ordinal without per counts the file's records",
			files: map[string]string{
				"a.jsonl": "{\"k\":\"x\"}\n\n{\"k\":\"x\"}\n[]\n{\"k\":\"y\"}\n",
			},
			spec:   spec.Source{Path: "a.jsonl", Ordinal: &spec.Ordinal{Field: "n"}},
			fields: []string{"k:string", "n:int"},
			max:    10,
			want: []rec{
				{`k="x" n=1`, `p=0/ at=none a.jsonl:1@0 raw="{\"k\":\"x\"}"`},
				{`k="x" n=2`, `p=0/ at=none a.jsonl:3@11 raw="{\"k\":\"x\"}"`},
				{`k=null n=3`, `p=0/ at=none a.jsonl:4@21 raw="[]" err=decode want a JSON object, got array []`},
				{`k="y" n=4`, `p=0/ at=none a.jsonl:5@24 raw="{\"k\":\"y\"}"`},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			sp := tc.spec
			sp.Type = "file"
			sp.Path = dir + "/" + sp.Path
			s, err := New(Config{Spec: sp, Fields: testFields(t, tc.fields...), EventTimeField: tc.et})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			diff(t, drain(t, s, tc.max, dir), tc.want)
			parts := tc.parts
			if parts == nil {
				parts = []string{"0"}
			}
			if got := s.Partitions(); !slices.Equal(got, parts) {
				t.Errorf("Partitions() = %q, want %q", got, parts)
			}
		})
	}
}
