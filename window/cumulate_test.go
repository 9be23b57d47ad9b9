package window

import (
	"reflect"
	"testing"
)

// TestCumulateAssign checks cumulate windows by hand: size 9, step 3:
// period [0, 9) holds [0, 3), [0, 6), [0, 9).
func TestCumulateAssign(t *testing.T) {
	c := &Cumulate{Size: 9, Step: 3}
	for _, tc := range []struct {
		ts   int64
		want []Window
	}{
		{0, []Window{{0, 3}, {0, 6}, {0, 9}}},
		{2, []Window{{0, 3}, {0, 6}, {0, 9}}},
		{3, []Window{{0, 6}, {0, 9}}},
		{8, []Window{{0, 9}}},
		{9, []Window{{9, 12}, {9, 15}, {9, 18}}},
		{-1, []Window{{-9, 0}}},
		{-7, []Window{{-9, -6}, {-9, -3}, {-9, 0}}},
	} {
		if got := c.Assign(tc.ts, nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Assign(%d) = %v, want %v", tc.ts, got, tc.want)
		}
	}
	for _, tc := range []struct{ ts, start, end int64 }{{0, 0, 3}, {5, 3, 6}, {8, 6, 9}, {-1, -3, 0}} {
		if got := c.SliceOf(tc.ts); got != (Window{tc.start, tc.end}) {
			t.Errorf("SliceOf(%d) = %v, want [%d, %d)", tc.ts, got, tc.start, tc.end)
		}
	}
	off := &Cumulate{Size: 10, Step: 5, Offset: 2}
	// Periods [-8, 2), [2, 12): 1 is past [-8, -3).
	if got, want := off.Assign(1, nil), []Window{{-8, 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("offset 2: Assign(1) = %v, want %v", got, want)
	}
	if got, want := off.Assign(2, nil), []Window{{2, 7}, {2, 12}}; !reflect.DeepEqual(got, want) {
		t.Errorf("offset 2: Assign(2) = %v, want %v", got, want)
	}
	if c.MaxWindows() != 3 || c.MaxSlices() != 3 {
		t.Errorf("MaxWindows %d MaxSlices %d, want 3 3", c.MaxWindows(), c.MaxSlices())
	}
}
