package file

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

// TestOrdinalEventTime: an ordinal into a timestamp field that is the
// event time gives record n the time n ms after the epoch (the version
// times of a lookup table's lines, which carry no time of their own), on
// a headerless CSV file; an ordinal into a string field is refused.
func TestOrdinalEventTime(t *testing.T) {
	dir := writeFiles(t, map[string]string{"side.txt": "0,v0\n1,v1\n0,v2\n"})
	sp := spec.Source{Type: "file", Path: dir + "/side.txt", Format: "csv", CSV: spec.CSVOptions{Header: new(bool), Columns: []string{"k", "v"}},
		Ordinal: &spec.Ordinal{Field: "__line"}}
	s, err := New(Config{Spec: sp, Fields: testFields(t, "k:int", "v:string", "__line:timestamp"), EventTimeField: "__line"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	diff(t, drain(t, s, 10, dir), []rec{
		{`k=0 v="v0" __line=1970-01-01T00:00:00.001Z`, `p=0/ at=none side.txt:1@0 raw="0,v0"`},
		{`k=1 v="v1" __line=1970-01-01T00:00:00.002Z`, `p=0/ at=none side.txt:2@5 raw="1,v1"`},
		{`k=0 v="v2" __line=1970-01-01T00:00:00.003Z`, `p=0/ at=none side.txt:3@10 raw="0,v2"`},
	})
	_, err = New(Config{Spec: sp, Fields: testFields(t, "k:int", "v:string", "__line:string")})
	if err == nil || !strings.Contains(err.Error(), `source.ordinal.field: field "__line" is string, want int (or a timestamp, as event_time.field)`) {
		t.Errorf("an ordinal into a string field: %v", err)
	}
}
