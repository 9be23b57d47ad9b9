package group

import (
	"slices"
	"strconv"
	"strings"
)

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
