package file

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/spec"
)

func TestNewErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a.csv":        "InvoiceNo,Quantity\n1,2\n",
		"b.csv":        "InvoiceNo,Qty\n1,2\n",
		"empty/.keep":  "",
		"x.jsonl":      "{}\n",
		"noext":        "{}\n",
		"broken.csv":   "\"InvoiceNo,Quantity\n",
		"blankhdr.csv": "",
	})
	fields := []string{"InvoiceNo:string", "Quantity:int", "ts:timestamp", "line:int"}
	csvFields := []string{"InvoiceNo:string", "Quantity:int"}
	tests := []struct {
		name    string
		spec    spec.Source
		et      string
		want    string // substring of the error
		noFiles bool   // a *NoFilesError
		notExit bool   // wraps fs.ErrNotExist
		csv     bool   // decode only the CSV files' columns
	}{
		{name: "missing file", spec: spec.Source{Path: "nope.jsonl"}, want: `no files match "DIR/nope.jsonl": does not exist`, noFiles: true, notExit: true},
		{name: "glob matches nothing", spec: spec.Source{Path: "*.parquet", Format: "jsonl"}, want: `no files match "DIR/*.parquet": no file matches the pattern`, noFiles: true, notExit: true},
		{name: "empty directory", spec: spec.Source{Path: "empty", Format: "jsonl"}, want: `no files match "DIR/empty": directory has no files`, noFiles: true},
		{name: "bad glob", spec: spec.Source{Path: "[", Format: "jsonl"}, want: `syntax error in pattern`},
		{name: "unknown format", spec: spec.Source{Path: "noext"}, want: `source.format: "" is not jsonl, csv or avro`},
		{name: "missing column", spec: spec.Source{Path: "[ab].csv"}, want: `DIR/b.csv: no column "Quantity" in CSV header ["InvoiceNo" "Qty"]`, csv: true},
		{name: "broken header", spec: spec.Source{Path: "broken.csv"}, want: `DIR/broken.csv: header: the quoted field opened at line 1, column 1 does not close before the end of the file`, csv: true},
		{name: "missing column without header", spec: spec.Source{Path: "a.csv", CSV: spec.CSVOptions{Header: new(bool), Columns: []string{"InvoiceNo"}}}, want: `source.csv.columns: no column "Quantity"`, csv: true},
		{name: "no columns without header", spec: spec.Source{Path: "a.csv", CSV: spec.CSVOptions{Header: new(bool)}}, want: `source.csv.columns: required`, csv: true},
		{name: "bad delimiter", spec: spec.Source{Path: "a.csv", CSV: spec.CSVOptions{Delimiter: ";;"}}, want: `source.csv.delimiter: ";;" is not one usable character`, csv: true},
		{name: "partition field not in schema", spec: spec.Source{Path: "x.jsonl", PartitionField: "shop"}, want: `source.partition_field: field "shop" is not in the source schema`},
		{name: "arrival field not a time", spec: spec.Source{Path: "x.jsonl", ArrivalTimeField: "Quantity"}, want: `source.arrival_time_field: field "Quantity" is int, want timestamp`},
		{name: "ordinal field not an int", spec: spec.Source{Path: "x.jsonl", Ordinal: &spec.Ordinal{Field: "InvoiceNo"}}, want: `source.ordinal.field: field "InvoiceNo" is string, want int`},
		{name: "ordinal per unknown", spec: spec.Source{Path: "x.jsonl", Ordinal: &spec.Ordinal{Field: "line", Per: "inv"}}, want: `source.ordinal.per: field "inv" is not in the source schema`},
		{name: "event time not a time", spec: spec.Source{Path: "x.jsonl"}, et: "Quantity", want: `event_time.field: field "Quantity" is int, want timestamp`},
		{name: "replay without event time", spec: spec.Source{Path: "x.jsonl", Replay: &spec.Replay{}}, want: `source.replay: needs the event-time field`},
		{name: "replay with partition field", spec: spec.Source{Path: "x.jsonl", PartitionField: "InvoiceNo", Replay: &spec.Replay{}}, et: "ts", want: `use replay.partition_by instead of partition_field`},
		{name: "replay max delay", spec: spec.Source{Path: "x.jsonl", Replay: &spec.Replay{Delay: spec.Duration(2e9), MaxDelay: spec.Duration(1e9)}}, et: "ts", want: `source.replay.max_delay: 1s is less than delay 2s`},
		{name: "replay partitions", spec: spec.Source{Path: "x.jsonl", Replay: &spec.Replay{Partitions: 5000}}, et: "ts", want: `source.replay.partitions: must be between 1 and 4096`},
		{name: "replay partition_by unknown", spec: spec.Source{Path: "x.jsonl", Replay: &spec.Replay{PartitionBy: "shop"}}, et: "ts", want: `source.replay.partition_by: field "shop" is not in the source schema`},
		{name: "other source type", spec: spec.Source{Type: "kafka", Path: "x.jsonl"}, want: `source.type: "kafka" is not a file source`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.spec
			sp.Path = filepath.Join(dir, sp.Path)
			if tc.name == "bad glob" {
				sp.Path = dir + "/["
			}
			fl := fields
			if tc.csv {
				fl = csvFields
			}
			_, err := New(Config{Spec: sp, Fields: testFields(t, fl...), EventTimeField: tc.et})
			if err == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			msg := strings.ReplaceAll(err.Error(), dir, "DIR")
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", msg, tc.want)
			}
			var nf *NoFilesError
			if errors.As(err, &nf) != tc.noFiles {
				t.Errorf("NoFilesError: %v, want %v", errors.As(err, &nf), tc.noFiles)
			}
			if errors.Is(err, fs.ErrNotExist) != tc.notExit {
				t.Errorf("fs.ErrNotExist: %v, want %v", errors.Is(err, fs.ErrNotExist), tc.notExit)
			}
			if tc.name == "missing column" {
				var mc *format.MissingColumnsError
				if !errors.As(err, &mc) {
					t.Errorf("want a *format.MissingColumnsError")
				}
			}
		})
	}
}

func TestOrdinalFieldOutsideTheSchemaIsNotComputed(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": "{\"k\":1}\n"})
	s, err := New(Config{Spec: spec.Source{Path: dir + "/a.jsonl", Ordinal: &spec.Ordinal{Field: "n", Per: "k"}}, Fields: testFields(t, "k:int")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	diff(t, drain(t, s, 10, dir), []rec{{`k=1`, `p=0/ at=none a.jsonl:1@0 raw="{\"k\":1}"`}})
}

func TestEmptyCSVFileHasNoRecords(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.csv": "", "b.csv": "n\n", "c.csv": "n\n7\n"})
	s, err := New(Config{Spec: spec.Source{Path: dir, Format: "csv"}, Fields: testFields(t, "n:int")})
	if err == nil {
		defer s.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	diff(t, drain(t, s, 10, dir), []rec{{`n=7`, `p=0/ at=none c.csv:2@2 raw="7"`}})
}
