package results

import "testing"

func TestNames(t *testing.T) {
	if got := VersionTable("revenue_minute", "v2"); got != "revenue_minute__v2" {
		t.Errorf("VersionTable = %q", got)
	}
	if got := VersionTable("analytics.revenue_minute", "v2"); got != "analytics.revenue_minute__v2" {
		t.Errorf("VersionTable = %q", got)
	}
	for _, c := range []struct {
		name, table, version string
		ok                   bool
	}{
		{"revenue_minute__v2", "revenue_minute", "v2", true},
		{"analytics.revenue_minute__v1", "analytics.revenue_minute", "v1", true},
		{"sales_2026_09__v1_appended", "sales_2026_09", "v1_appended", true},
		{"rev___v1", "rev_", "v1", true},
		{"my__schema.revenue", "my__schema.revenue", "", false},
		{"revenue_minute", "revenue_minute", "", false},
		{"__v1", "__v1", "", false},
		{"revenue_minute__", "revenue_minute__", "", false},
	} {
		table, version, ok := SplitVersion(c.name)
		if table != c.table || version != c.version || ok != c.ok {
			t.Errorf("SplitVersion(%q) = %q, %q, %v", c.name, table, version, ok)
		}
	}
	if ServingView("revenue_minute__v1") != "revenue_minute" || ServingView("revenue_minute") != "revenue_minute" {
		t.Error("ServingView")
	}
	for _, v := range []string{"v1", "v2", "live", "2026_09", "v1_appended", "V3"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("CheckVersion(%q): %v", v, err)
		}
	}
	for _, v := range []string{"", "_v1", "v1__x", "v-1", "v.1", "v 1", "v\"1", "버전"} {
		if CheckVersion(v) == nil {
			t.Errorf("CheckVersion(%q): no error", v)
		}
	}
	if checkTableName("revenue_minute__v1") == nil || checkTableName("") == nil || checkTableName("revenue_minute") != nil {
		t.Error("checkTableName")
	}
	for _, c := range []string{"version", "Is_Final", "watermark_at", "updated_at", "replay_id", "lineage_spec_hash", "lineage"} {
		if !IsBookkeeping(c) {
			t.Errorf("IsBookkeeping(%q) = false", c)
		}
	}
	if IsBookkeeping("net_revenue") || IsBookkeeping("window_end") {
		t.Error("IsBookkeeping of a value column")
	}
}
