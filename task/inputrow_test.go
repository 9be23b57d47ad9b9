package task

import (
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
)

// TestInputRow: a stage's input row made from an upstream row holds the
// window, the key, the values (an int value converted into a decimal
// field, a null value null), the version and is_final, whatever the
// reused row held before; the weight is −1 for update_before and delete.
func TestInputRow(t *testing.T) {
	sc := row.NewSchema()
	for _, f := range []struct {
		name string
		kind row.Kind
	}{
		{"window_start", row.KindTime}, {"window_end", row.KindTime},
		{"auction", row.KindInt},
		{"total", row.KindDecimal}, {"name", row.KindString}, {"n", row.KindInt},
		{"version", row.KindInt}, {"is_final", row.KindBool},
	} {
		if _, err := sc.Add(f.name, f.kind); err != nil {
			t.Fatal(err)
		}
	}
	st := &plan.Stage{Schema: sc}
	r := sc.NewRow()
	first := changelog.Row{Op: changelog.Insert, WindowStart: 10, WindowEnd: 20,
		Key: []row.Value{row.Int(3)}, Values: []row.Value{row.Dec(row.DecimalFromInt(2)), row.Str("a"), row.Int(9)},
		Version: 1, IsFinal: false}
	if w := inputRow(st, r, &first); w != 1 {
		t.Errorf("insert: weight %d, want 1", w)
	}
	if v := r.Get(sc.Fields[5]); !v.Equal(row.Int(9)) {
		t.Errorf("n = %v, want 9", v)
	}
	cr := changelog.Row{Op: changelog.UpdateBefore, WindowStart: 1000, WindowEnd: 3000,
		Key: []row.Value{row.Int(7)}, Values: []row.Value{row.Int(5), row.Str("x"), row.Null},
		Version: 4, IsFinal: true}
	if w := inputRow(st, r, &cr); w != -1 {
		t.Errorf("update_before: weight %d, want -1", w)
	}
	want := []row.Value{row.Time(1000), row.Time(3000), row.Int(7), row.Dec(row.DecimalFromInt(5)),
		row.Str("x"), row.Null, row.Int(4), row.Bool(true)}
	for i, f := range sc.Fields {
		if got := r.Get(f); got.Kind != want[i].Kind || !got.Equal(want[i]) {
			t.Errorf("%s = %v (%s), want %v (%s)", f.Name, got, got.Kind, want[i], want[i].Kind)
		}
	}
	if n := r.NullCount(); n != 1 {
		t.Errorf("%d null fields, want 1", n)
	}
	cr.Op, cr.IsFinal = changelog.Delete, false
	if w := inputRow(st, r, &cr); w != -1 || !r.Get(sc.Fields[7]).Equal(row.Bool(false)) {
		t.Errorf("delete: weight %d, is_final %v; want -1, false", w, r.Get(sc.Fields[7]))
	}
}
