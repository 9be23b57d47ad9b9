package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Texts of log lines: what a log line shows is read by people, never a
// Go value's default rendering (map[…], "1 tasks").

// partitionList renders topic partitions as "orders/0, orders/3,
// payments/1": topics by name, partitions ascending; "none" for none.
func partitionList(tps map[string][]int32) string {
	var topics []string
	for t := range tps {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	var out []string
	for _, t := range topics {
		ps := slices.Clone(tps[t])
		slices.Sort(ps)
		for _, p := range ps {
			out = append(out, t+"/"+strconv.Itoa(int(p)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// count renders n things: "1 task", "3 tasks" (plural adds "s").
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
