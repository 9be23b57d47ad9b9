package parquet

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// TestPartitionDirs: a result row's directory from partition_by, by hand:
// the day and hour of the window's start in the stage's zone, a group
// key's value (Hive-escaped, null as HiveNull); a select stage's own
// columns (SQL's PARTITIONED BY of a query without a group key).
func TestPartitionDirs(t *testing.T) {
	agg := changelog.Desc{Key: []changelog.Column{{Name: "country", Kind: row.KindString}}, Values: []changelog.Column{{Name: "n", Kind: row.KindInt}}, Timezone: "Europe/London"}
	p, err := newPartitioner([]string{"day", "country", "hour"}, agg)
	if err != nil {
		t.Fatal(err)
	}
	r := changelog.Row{WindowStart: 1_310_000_000_000, Key: []row.Value{row.Str("Côte d'Ivoire")}}
	if got, want := p.dir(&r), "window_day=2011-07-07/country=Côte d%27Ivoire/window_hour=2011-07-07T01"; got != want {
		t.Errorf("dir = %s, want %s", got, want)
	}
	r.Key[0] = row.Null
	if got := p.dir(&r); !strings.Contains(got, "country="+HiveNull) {
		t.Errorf("null key: %s", got)
	}
	sel := changelog.Desc{Stateless: true, Values: []changelog.Column{{Name: "auction", Kind: row.KindInt}, {Name: "dt", Kind: row.KindString}, {Name: "hm", Kind: row.KindString}}}
	q, err := newPartitioner([]string{"dt", "hm"}, sel)
	if err != nil {
		t.Fatal(err)
	}
	s := changelog.Row{Values: []row.Value{row.Int(7), row.Str("2015-07-15"), row.Str("00:01")}}
	if got, want := q.dir(&s), "dt=2015-07-15/hm=00%3A01"; got != want {
		t.Errorf("select dir = %s, want %s", got, want)
	}
	if _, err := newPartitioner([]string{"price"}, sel); err == nil || !strings.Contains(err.Error(), "a column of the select stage (auction, dt, hm)") {
		t.Errorf("unknown column: %v", err)
	}
	if _, err := newPartitioner([]string{"n"}, agg); err == nil || !strings.Contains(err.Error(), "want day, hour or a group-key column (country)") {
		t.Errorf("an aggregate column: %v", err)
	}
}
