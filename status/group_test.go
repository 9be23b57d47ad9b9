package status

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// TestGroupInstance: an instance of a group run shows the tasks it holds,
// in the JSON document and on the page.
func TestGroupInstance(t *testing.T) {
	pg := New(&spec.Pipeline{Name: "revenue"}, nil)
	wm := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	pg.Update(&engine.Live{Pipeline: "revenue", At: time.Unix(100, 0), Watermark: wm, Group: &engine.LiveGroup{
		Group: "g", Instance: "a", Topic: "revenue-repartition", Partitions: 4, Commits: 7, Aborts: 1, Rebalances: 2, Restores: 3,
		Sources: []engine.LiveSourceTask{{Partition: "orders/1", Watermark: wm, Records: 40, Lag: 5}},
		Keyed: []engine.LiveKeyedTask{{Partition: 2, Lag: -1, Nodes: []engine.LiveNode{
			{Name: "dedup", Watermark: wm}, {Name: "per_store", Watermark: changelog.WatermarkNone}}}},
	}})
	d := pg.Doc()
	g := d.Group
	if g == nil || g.Instance != "a" || len(g.Sources) != 1 || *g.Sources[0].Lag != 5 || g.Sources[0].Watermark != "2026-09-01T10:00:00Z" ||
		len(g.Keyed) != 1 || g.Keyed[0].Lag != nil || strings.Join(g.Keyed[0].Nodes, "; ") != "dedup: 2026-09-01T10:00:00Z; per_store: none" {
		t.Fatalf("group %+v", g)
	}
	rec := httptest.NewRecorder()
	pg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	body := rec.Body.String()
	for _, want := range []string{"Instance a of group g", "1 input partitions and 1 of the 4 partitions of revenue-repartition; 7 transactions committed, 1 aborted",
		`<tr class="group-source" data-name="orders/1"><td>orders/1</td>`, `<tr class="group-keyed" data-partition="2"><td>2</td><td>dedup: 2026-09-01T10:00:00Z<br>per_store: none<br>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
