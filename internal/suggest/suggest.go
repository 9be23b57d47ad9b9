// Package suggest finds the names close to one that is not known, for the
// "did you mean" of every message that refuses a name: a field a pipeline
// uses that its source does not declare, an unknown key in a pipeline or
// contract file, an unknown value of a key with a fixed set of values, an
// unknown field in an expression.
package suggest

import (
	"sort"
	"strings"
)

// Max is the most names Close returns.
const Max = 3

// Close returns up to Max of candidates that are close to name, best first
// (ties in the candidates' order): equal ignoring case, within a small
// edit distance (Levenshtein over bytes, ignoring case: at most a third of
// the shorter name's length, at least 1), or, for names of 3 bytes or
// more, one a prefix of the other. name itself is never returned, nor is
// a candidate listed twice.
func Close(name string, candidates []string) []string {
	type cand struct {
		name string
		dist int
	}
	lname := strings.ToLower(name)
	var cs []cand
	seen := map[string]bool{name: true}
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := editDistance(lname, lc)
		limit := max(1, min(len(lname), len(lc))/3)
		switch {
		case d <= limit:
		case len(lname) >= 3 && len(lc) >= 3 && (strings.HasPrefix(lc, lname) || strings.HasPrefix(lname, lc)):
			d = limit + 1
		default:
			continue
		}
		cs = append(cs, cand{c, d})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].dist < cs[j].dist })
	var out []string
	for i := 0; i < len(cs) && i < Max; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// Phrase renders names as "did you mean a?", "did you mean a or b?" or
// "did you mean a, b or c?"; "" for none.
func Phrase(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "did you mean " + List(names, "or") + "?"
}

// Hint returns " (did you mean …?)" for the candidates close to name, or
// "" when none is: the suffix of an error message that refuses name.
func Hint(name string, candidates []string) string {
	p := Phrase(Close(name, candidates))
	if p == "" {
		return ""
	}
	return " (" + p + ")"
}

// List joins names as "a", "a or b", "a, b or c" (with conj "or"; "and"
// likewise).
func List(names []string, conj string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// editDistance is the Levenshtein distance between a and b in bytes
// (inputs are capped at 64 bytes; longer names are never "close").
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
