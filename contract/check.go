package contract

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// CheckKind is the kind of one check of a Checker.
type CheckKind uint8

// The check kinds.
const (
	// CheckRequired fails when a required field is null or missing.
	CheckRequired CheckKind = iota + 1
	// CheckExpr fails when a rule's check expression is false, null, or
	// fails to evaluate.
	CheckExpr
	// CheckMaxFuture fails when the event time is more than the rule's
	// max_future after the arrival.
	CheckMaxFuture
	// CheckMaxAge fails when the event time is more than the rule's max_age
	// before the arrival.
	CheckMaxAge
)

var checkKindNames = [...]string{
	CheckRequired:  "required",
	CheckExpr:      "check",
	CheckMaxFuture: "max_future",
	CheckMaxAge:    "max_age",
}

// String returns the kind as reports write it: "required", "check",
// "max_future" or "max_age".
func (k CheckKind) String() string {
	if int(k) < len(checkKindNames) && checkKindNames[k] != "" {
		return checkKindNames[k]
	}
	return "check_kind(" + strconv.Itoa(int(k)) + ")"
}

// TimeRule reports whether the check compares the event time with the
// arrival (max_future, max_age).
func (k CheckKind) TimeRule() bool { return k == CheckMaxFuture || k == CheckMaxAge }

// CheckInfo describes one check of a Checker.
type CheckInfo struct {
	// Rule is the rule name quarantine records and reports use:
	// "<field>_required" for a required field, else the rule's name.
	Rule string
	// Kind of check.
	Kind CheckKind
	// Field is the field the check concerns: the required field, the one
	// field a check expression reads, or the event-time field for a time
	// rule; "" for an expression over several fields.
	Field string
	// Check is the check expression (CheckExpr).
	Check string
	// Limit is max_future or max_age (time rules).
	Limit spec.Duration
	// MaxViolationRate is the rule's max_violation_rate (0 for a required
	// check: a required field is never null).
	MaxViolationRate float64
	// Description is the rule's or the required field's description.
	Description string
}

// check is one compiled check.
type check struct {
	CheckInfo
	f     row.Field   // CheckRequired: the field
	e     *expr.Expr  // CheckExpr
	reads []row.Field // CheckExpr: the fields it reads, for reasons
	limit int64       // time rules: ms
}

// Checker holds a contract's checks compiled against a row schema. It is
// immutable and safe for concurrent use.
type Checker struct {
	checks    []check
	ingest    row.Field
	hasIngest bool
}

// RuleFields returns the names of the fields the contract's checks read,
// so that a planner decodes them: the required fields (in declaration
// order), then the fields of the check expressions (in rule order), then
// ingest_time when a time rule compares with it; without repeats. The
// event-time field is not listed (the planner always decodes it). It
// returns an error naming the rule when a check does not parse.
func RuleFields(c *Contract) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	addName := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, f := range c.Fields {
		if f.Required {
			addName(f.Name)
		}
	}
	var errs []error
	timeRules := false
	for _, r := range c.Rules {
		if r.Check != "" {
			p, err := expr.Parse(r.Check)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %s: check: %w", r.Name, err))
				continue
			}
			for _, n := range p.Identifiers() {
				addName(n)
			}
		}
		if r.MaxFuture != 0 || r.MaxAge != 0 {
			timeRules = true
		}
	}
	if timeRules {
		addName(c.IngestTime)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Compile builds the contract's checks against the row schema s: first
// one CheckRequired per required field (rule "<field>_required"), in field
// order; then one check per rule, in rule order. Check expressions compile
// with package expr against s and must be bool. ingestTime is the
// contract's ingest_time field in s (a timestamp), when hasIngest.
//
// Errors name the rule: a field the schema lacks ("rule amount_required:
// field "amount" is not in the schema", or expr's compile error for a
// check), a check that is not bool. They are joined, one per line.
func Compile(c *Contract, s *row.Schema, ingestTime row.Field, hasIngest bool) (*Checker, error) {
	ch := &Checker{ingest: ingestTime, hasIngest: hasIngest}
	var errs []error
	if hasIngest && ingestTime.Kind != row.KindTime {
		errs = append(errs, fmt.Errorf("ingest_time: field %q is %s, want timestamp", ingestTime.Name, ingestTime.Kind))
	}
	for _, f := range c.Fields {
		if !f.Required {
			continue
		}
		name := RequiredRuleName(f.Name)
		rf, ok := s.Lookup(f.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("rule %s: field %q is not in the schema", name, f.Name))
			continue
		}
		ch.checks = append(ch.checks, check{
			CheckInfo: CheckInfo{Rule: name, Kind: CheckRequired, Field: f.Name, Description: f.Description},
			f:         rf,
		})
	}
	for _, r := range c.Rules {
		info := CheckInfo{Rule: r.Name, MaxViolationRate: r.MaxViolationRate, Description: r.Description}
		switch {
		case r.Check != "":
			info.Kind, info.Check = CheckExpr, r.Check
			p, err := expr.Parse(r.Check)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %s: check: %w", r.Name, err))
				continue
			}
			unknown := false
			for _, n := range p.Identifiers() {
				// A field the contract does not declare is a misspelling,
				// unless the pipeline provides it typed (source.ordinal).
				f, inSchema := s.Lookup(n)
				if _, ok := c.Fields.Lookup(n); !ok && len(c.Fields) > 0 && n != c.IngestTime && !(inSchema && f.Kind != row.KindString) {
					errs = append(errs, fmt.Errorf("rule %s: check: %q is not a field of the contract (fields: %s)", r.Name, n, strings.Join(c.Fields.Names(), ", ")))
					unknown = true
				}
			}
			if unknown {
				continue
			}
			e, err := expr.Compile(p, s)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %s: check: %w", r.Name, err))
				continue
			}
			if e.Kind() != row.KindBool {
				errs = append(errs, fmt.Errorf("rule %s: check %q is %s, want a bool (a condition every record must meet)", r.Name, r.Check, e.Kind()))
				continue
			}
			var reads []row.Field
			for _, n := range p.Identifiers() {
				if f, ok := s.Lookup(n); ok {
					reads = append(reads, f)
				}
			}
			if len(reads) == 1 {
				info.Field = reads[0].Name
			}
			ch.checks = append(ch.checks, check{CheckInfo: info, e: e, reads: reads})
		case r.MaxFuture != 0:
			info.Kind, info.Limit, info.Field = CheckMaxFuture, r.MaxFuture, c.EventTime.Field
			ch.checks = append(ch.checks, check{CheckInfo: info, limit: r.MaxFuture.Ms()})
		case r.MaxAge != 0:
			info.Kind, info.Limit, info.Field = CheckMaxAge, r.MaxAge, c.EventTime.Field
			ch.checks = append(ch.checks, check{CheckInfo: info, limit: r.MaxAge.Ms()})
		default:
			errs = append(errs, fmt.Errorf("rule %s: give exactly one of check, max_future or max_age", r.Name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ch, nil
}

// Len returns the number of checks.
func (ch *Checker) Len() int { return len(ch.checks) }

// Checks describes the checks in the order Check runs them.
func (ch *Checker) Checks() []CheckInfo {
	out := make([]CheckInfo, len(ch.checks))
	for i := range ch.checks {
		out[i] = ch.checks[i].CheckInfo
	}
	return out
}

// Check runs the checks in order on r, a row shaped by the schema given to
// Compile, and returns the first that fails: its rule name, its field (""
// when it concerns several) and the reason, quoting the values involved.
// It returns ok=true when every check passes, and then allocates nothing.
//
// eventTime is the record's event time and arrival the processing time,
// both in ms since the epoch. When the contract names an ingest_time and
// the record's is not null, the time rules use it as the arrival instead
// (a producer's clock is judged against when the event was ingested,
// whatever the replay speed). A check expression that is null fails: null
// is not true. One that fails to evaluate (division by zero, overflow)
// fails with the evaluation error.
func (ch *Checker) Check(r *row.Row, eventTime, arrival int64) (rule, field, reason string, ok bool) {
	arrival = ch.arrival(r, arrival)
	for i := range ch.checks {
		c := &ch.checks[i]
		if field, reason, ok := c.run(r, eventTime, arrival); !ok {
			return c.Rule, field, reason, false
		}
	}
	return "", "", "", true
}

// CheckOne runs check i (an index into Checks) alone, as Check would.
// It returns ok=false for an index out of range.
func (ch *Checker) CheckOne(i int, r *row.Row, eventTime, arrival int64) (field, reason string, ok bool) {
	if i < 0 || i >= len(ch.checks) {
		return "", fmt.Sprintf("no check %d", i), false
	}
	return ch.checks[i].run(r, eventTime, ch.arrival(r, arrival))
}

// arrival is the record's ingest time when it has one, else processing.
func (ch *Checker) arrival(r *row.Row, processing int64) int64 {
	if ch.hasIngest && !r.IsNull(ch.ingest.Index) {
		return r.I[ch.ingest.Slot]
	}
	return processing
}

// run evaluates one check.
func (c *check) run(r *row.Row, eventTime, arrival int64) (field, reason string, ok bool) {
	switch c.Kind {
	case CheckRequired:
		if r.IsNull(c.f.Index) {
			return c.Field, "required field " + c.Field + " is null or missing", false
		}
	case CheckExpr:
		v, ok, err := c.e.EvalBool(r)
		switch {
		case err != nil:
			return c.Field, "check failed to evaluate: " + err.Error() + c.values(r), false
		case !ok:
			return c.Field, "check is null, which is not true: " + c.Check + c.values(r), false
		case !v:
			return c.Field, "check is false: " + c.Check + c.values(r), false
		}
	case CheckMaxFuture:
		if d, over := exceeds(eventTime, arrival, c.limit); over {
			return c.Field, fmt.Sprintf("event time %s is %s after its arrival %s; max_future is %s",
				row.FormatTime(eventTime, nil), formatMs(d), row.FormatTime(arrival, nil), c.Limit), false
		}
	case CheckMaxAge:
		if d, over := exceeds(arrival, eventTime, c.limit); over {
			return c.Field, fmt.Sprintf("event time %s is %s before its arrival %s; max_age is %s",
				row.FormatTime(eventTime, nil), formatMs(d), row.FormatTime(arrival, nil), c.Limit), false
		}
	}
	return "", "", true
}

// values renders the fields a check reads, for a failure reason:
// ` (Quantity=-3, InvoiceNo="536379")`.
func (c *check) values(r *row.Row) string {
	if len(c.reads) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" (")
	for i, f := range c.reads {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name)
		b.WriteByte('=')
		v := r.Get(f)
		switch v.Kind {
		case row.KindString:
			b.WriteString(strconv.Quote(v.S))
		default:
			b.WriteString(v.String())
		}
	}
	b.WriteByte(')')
	return b.String()
}

// exceeds reports whether a - b > limit (limit >= 0), and a - b, without
// overflowing for any a and b.
func exceeds(a, b, limit int64) (uint64, bool) {
	if a <= b {
		return 0, false
	}
	d := uint64(a) - uint64(b) // the true difference: it fits in uint64
	return d, d > uint64(limit)
}

// formatMs writes a positive number of milliseconds as a Go duration
// ("26h0m0s"), or in whole hours when it does not fit a time.Duration.
func formatMs(ms uint64) string {
	if ms <= math.MaxInt64/uint64(time.Millisecond) {
		return (time.Duration(ms) * time.Millisecond).String()
	}
	return strconv.FormatUint(ms/uint64(time.Hour/time.Millisecond), 10) + "h"
}
