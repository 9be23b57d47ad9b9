package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// quarantineShare is quarantine.max_fraction's running count, on the
// router's goroutine: the records quarantined before the stages, by rule,
// and the first of them, from the start of the input (a restore carries
// the checkpoint's counts).
type quarantineShare struct {
	max   float64
	count int64
	rules map[string]int64
	first string
}

// initQuarantineShare sets up the check of quarantine.max_fraction, with
// the counts a restore brought back (c).
func (rt *runtime) initQuarantineShare(c *task.Counters) {
	f := rt.plan.Spec.Quarantine.MaxFraction
	if f == nil {
		rt.qshare = nil
		return
	}
	q := &quarantineShare{max: *f, rules: map[string]int64{}}
	if c != nil {
		q.add(c)
	}
	rt.qshare = q
}

// add counts a round's (or a checkpoint's) pipeline-level quarantines.
func (q *quarantineShare) add(c *task.Counters) {
	q.count += c.Quarantined
	for k, n := range c.ByRule {
		if _, rule, stage := task.SplitRuleKey(k); !stage {
			q.rules[rule] += n
		}
	}
	if q.first == "" && len(c.First) > 0 {
		q.first = c.First[0].Text
	}
}

// checkQuarantineShare fails the run when the records quarantined before
// the stages exceed quarantine.max_fraction of the records read: after a
// round once spec.MaxFractionMinRecords were read, and at the end of the
// input (last). The round's outputs are not written.
func (rt *runtime) checkQuarantineShare(ro *routerOut) error {
	q := rt.qshare
	if q == nil {
		return nil
	}
	q.add(&ro.cnt)
	read := rt.events
	if read == 0 || read < spec.MaxFractionMinRecords && !ro.flags.end || float64(q.count) <= q.max*float64(read) {
		return nil
	}
	var rules []string
	for r, n := range q.rules {
		rules = append(rules, fmt.Sprintf("rule %s %d", r, n))
	}
	slices.Sort(rules)
	msg := fmt.Sprintf("quarantine.max_fraction %g: %d of %d records read were quarantined (%.1f %%", q.max, q.count, read, 100*float64(q.count)/float64(read))
	if len(rules) > 0 {
		msg += "; " + strings.Join(rules, ", ")
	}
	if q.first != "" {
		msg += "; first: " + q.first
	}
	return fmt.Errorf("%s): the run stops before writing the batch that crossed it", msg)
}
