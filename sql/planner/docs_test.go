package planner

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// TestDocsListEveryOption: docs/sql.md names, in backquotes, every
// connector, every WITH option a connector reads, every Flink key SET
// reads and every 'tidemark.<key>' root SET takes — so that a key the
// planner learns cannot be left out of the mapping tables.
func TestDocsListEveryOption(t *testing.T) {
	b, err := os.ReadFile("../../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var want []string
	want = append(want, connectorNames()...)
	for _, m := range []map[string][]string{SourceOptions, SinkOptions} {
		for _, opts := range m {
			want = append(want, opts...)
		}
	}
	for k := range FlinkSettings {
		want = append(want, k)
	}
	for _, m := range []map[string]bool{pipelineSettingRoots, stageSettingKeys} {
		for r := range m {
			want = append(want, "tidemark."+r)
		}
	}
	sort.Strings(want)
	for _, w := range want {
		if !strings.Contains(doc, "`"+w+"`") && !strings.Contains(doc, "`"+w+".") {
			t.Errorf("docs/sql.md does not name `%s`", w)
		}
	}
}
