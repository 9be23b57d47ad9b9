package examples

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/spec"
)

// loadNormalized loads a pipeline file and applies its defaults (the
// contract is applied by Compile; both forms name the same one).
func loadNormalized(t *testing.T, path string) *spec.Pipeline {
	t.Helper()
	p, err := tidemark.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	return p
}

// TestOnlineRetailSQLIsThePipeline: pipeline.sql compiles to the spec
// pipeline.yaml decodes into, key for key (so to the same plan, the same
// checkpoints and the same plan fingerprint).
func TestOnlineRetailSQLIsThePipeline(t *testing.T) {
	t.Setenv("TIDEMARK_DATA", "/data")
	y := loadNormalized(t, "online-retail/pipeline.yaml")
	s := loadNormalized(t, "online-retail/pipeline.sql")
	a, _ := json.MarshalIndent(y, "", " ")
	b, _ := json.MarshalIndent(s, "", " ")
	if string(a) != string(b) {
		t.Fatalf("the SQL form's spec differs from the YAML form's:\nYAML\n%s\nSQL\n%s", a, b)
	}
}

// TestOnlineRetailSQLMatchesBatch runs the SQL form on the real data: its
// table equals the YAML form's run row for row (which
// TestOnlineRetailMatchesBatch checks against a batch recomputation), with
// the same counters.
func TestOnlineRetailSQLMatchesBatch(t *testing.T) {
	data := datatest.Dir(t)
	outY, sumY := runExample(t, data, nil)
	outS, sumS := runExampleFile(t, data, "online-retail/pipeline.sql")
	if sumY.EventsRead != sumS.EventsRead || sumY.Quarantined != sumS.Quarantined || sumY.Duplicates != sumS.Duplicates || sumY.Conflicts != sumS.Conflicts {
		t.Fatalf("summaries differ: YAML %+v, SQL %+v", sumY, sumS)
	}
	if sumY.Stages[0].Counters != sumS.Stages[0].Counters {
		t.Fatalf("stage counters differ: YAML %+v, SQL %+v", sumY.Stages[0].Counters, sumS.Stages[0].Counters)
	}
	got, wantRows := finalRows(t, filepath.Join(outS, "tidemark.db")), finalRows(t, filepath.Join(outY, "tidemark.db"))
	if len(wantRows) < 1000 {
		t.Fatalf("the YAML form's table has %d rows", len(wantRows))
	}
	compareGroups(t, got, wantRows)
}

// TestOrdersCDCSQLIsThePipeline: examples/orders-cdc/pipeline.sql, with
// Flink CDC's postgres-cdc options, compiles to the spec pipeline.yaml
// decodes into, key for key.
func TestOrdersCDCSQLIsThePipeline(t *testing.T) {
	t.Setenv("PGURL", "")
	y := loadNormalized(t, "orders-cdc/pipeline.yaml")
	s := loadNormalized(t, "orders-cdc/pipeline.sql")
	a, _ := json.MarshalIndent(y, "", " ")
	b, _ := json.MarshalIndent(s, "", " ")
	if string(a) != string(b) {
		t.Fatalf("the SQL form's spec differs from the YAML form's:\nYAML\n%s\nSQL\n%s", a, b)
	}
}

// TestOnlineRetailIcebergSQLIsThePipeline: online-retail/iceberg.sql,
// with Flink's Iceberg connector options, compiles to the spec
// iceberg.yaml decodes into, key for key.
func TestOnlineRetailIcebergSQLIsThePipeline(t *testing.T) {
	t.Setenv("TIDEMARK_DATA", "/data")
	y := loadNormalized(t, "online-retail/iceberg.yaml")
	s := loadNormalized(t, "online-retail/iceberg.sql")
	a, _ := json.MarshalIndent(y, "", " ")
	b, _ := json.MarshalIndent(s, "", " ")
	if string(a) != string(b) {
		t.Fatalf("the SQL form's spec differs from the YAML form's:\nYAML\n%s\nSQL\n%s", a, b)
	}
}
