package suggest

import (
	"reflect"
	"testing"
)

func TestClose(t *testing.T) {
	fields := []string{"store_id", "currency", "amount", "paid_at", "event_id"}
	for _, tc := range []struct {
		name  string
		cands []string
		want  []string
	}{
		{"stor_id", fields, []string{"store_id"}},                                        // one deletion
		{"STORE_ID", fields, []string{"store_id"}},                                       // case only
		{"curency", fields, []string{"currency"}},                                        // one deletion
		{"amout", fields, []string{"amount"}},                                            // 5 bytes: limit 1
		{"amnt", fields, nil},                                                            // 2 edits over a limit of 1
		{"paid", fields, []string{"paid_at"}},                                            // a prefix
		{"zzz", fields, nil},                                                             // nothing close
		{"pa", []string{"paid_at", "p"}, []string{"p"}},                                  // too short for a prefix, p is one edit
		{"windoe", []string{"name", "window", "windows"}, []string{"window", "windows"}}, // distance 1, then 2 ≤ 6/3
		{"early", []string{"mode", "early_every"}, []string{"early_every"}},
		{"a", []string{"a", "b", "ab", "b"}, []string{"b", "ab"}},            // name itself and repeats left out
		{"ab", []string{"ax", "ay", "az", "aw"}, []string{"ax", "ay", "az"}}, // at most Max, candidates' order
	} {
		if got := Close(tc.name, tc.cands); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Close(%q, %q) = %q, want %q", tc.name, tc.cands, got, tc.want)
		}
	}
}

func TestHint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []string
		want  string
	}{
		{"stor_id", []string{"store_id", "currency"}, " (did you mean store_id?)"},
		{"ab", []string{"ax", "ay"}, " (did you mean ax or ay?)"},
		{"ab", []string{"ax", "ay", "az"}, " (did you mean ax, ay or az?)"},
		{"zzzz", []string{"ax"}, ""},
	} {
		if got := Hint(tc.name, tc.cands); got != tc.want {
			t.Errorf("Hint(%q, %q) = %q, want %q", tc.name, tc.cands, got, tc.want)
		}
	}
	if got := List([]string{"a", "b", "c"}, "and"); got != "a, b and c" {
		t.Errorf("List = %q", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"stor_id", "store_id", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	long := string(make([]byte, 65))
	if editDistance(long, long) != 0 || editDistance(long, long+"x") < 1<<20 {
		t.Error("names over 64 bytes are equal or never close")
	}
}
