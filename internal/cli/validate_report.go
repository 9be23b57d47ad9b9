package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// maxExamples is how many examples a report gives of each problem.
const maxExamples = 3

// addExample appends an example unless there are maxExamples already.
func addExample(ex []example, pos, reason string) []example {
	if len(ex) >= maxExamples {
		return ex
	}
	return append(ex, example{Source: pos, Reason: reason})
}

// Report is the result of validate; --format json prints it as is (the
// field order is the JSON key order; docs/contracts.md documents it).
type Report struct {
	Contract contractInfo `json:"contract"`
	Data     []string     `json:"data"`
	Records  recordCounts `json:"records"`
	// SchemaVersions counts the records of each schema version (Avro and
	// Protobuf data read against the registry); null for other data.
	SchemaVersions *versionsReport   `json:"schema_versions"`
	Fields         []fieldReport     `json:"fields"`
	EventIDs       idReport          `json:"event_ids"`
	Arrival        *arrivalReport    `json:"arrival_within_24h"`
	Rules          []ruleReport      `json:"rules"`
	Thresholds     []thresholdReport `json:"thresholds"`
	Failures       []string          `json:"failures"`
	Pass           bool              `json:"pass"`
}

// contractInfo names the contract in a Report.
type contractInfo struct {
	Product       string `json:"product"`
	SchemaVersion string `json:"schema_version"`
	Owner         string `json:"owner"`
}

// recordCounts are the records read, not decoded and checked.
type recordCounts struct {
	Read               int64     `json:"read"`
	NotDecoded         int64     `json:"not_decoded"`
	Checked            int64     `json:"checked"`
	NotDecodedExamples []example `json:"not_decoded_examples"`
}

// example is one record that shows a problem: its file:line and why.
type example struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// fieldReport is the null rate of one contract field.
type fieldReport struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Required bool    `json:"required"`
	Nulls    int64   `json:"nulls"`
	NullRate float64 `json:"null_rate"`
}

// idReport measures the event ids: duplicates and conflicts.
type idReport struct {
	EventID          string            `json:"event_id"`
	WithoutID        int64             `json:"without_id"`
	Duplicates       int64             `json:"duplicates"`
	DuplicateRate    float64           `json:"duplicate_rate"`
	ConflictIDs      int64             `json:"conflict_ids"`
	ConflictRecords  int64             `json:"conflict_records"`
	ConflictExamples []conflictExample `json:"conflict_examples"`
}

// conflictExample is an id delivered with two payloads, and where.
type conflictExample struct {
	ID     string `json:"id"`
	First  string `json:"first"`
	Second string `json:"second"`
}

// arrivalReport is the share of records that arrived within 24h.
type arrivalReport struct {
	Checked int64   `json:"checked"`
	Within  int64   `json:"within"`
	Ratio   float64 `json:"ratio"`
}

// ruleReport is one check's violations against its max_violation_rate.
type ruleReport struct {
	Name             string    `json:"name"`
	Kind             string    `json:"kind"`
	Field            string    `json:"field"`
	Status           string    `json:"status"` // pass, fail, not_checked
	Note             string    `json:"note"`
	Checked          int64     `json:"checked"`
	Violations       int64     `json:"violations"`
	Rate             float64   `json:"rate"`
	MaxViolationRate float64   `json:"max_violation_rate"`
	Examples         []example `json:"examples"`
}

// thresholdReport is one quality threshold, pass or fail.
type thresholdReport struct {
	Name   string  `json:"name"`
	Limit  float64 `json:"limit"`
	Value  float64 `json:"value"`
	Status string  `json:"status"` // pass, fail
}

// rate is n/of, 0 when of is 0.
func rate(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// nonNil makes a nil slice empty, so that JSON shows [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// report builds the report of everything read.
func (v *validator) report(paths []string) *Report {
	c := v.c
	rep := &Report{
		Contract: contractInfo{Product: c.Product, SchemaVersion: c.SchemaVersion, Owner: c.Owner},
		Data:     paths,
		Records: recordCounts{Read: v.records, NotDecoded: v.notDecoded, Checked: v.decoded,
			NotDecodedExamples: nonNil(v.notDecodedEx)},
		SchemaVersions: v.versionsReport(),
		Fields:         []fieldReport{},
		Rules:          []ruleReport{},
		Thresholds:     []thresholdReport{},
		Failures:       []string{},
	}
	fail := func(format string, args ...any) { rep.Failures = append(rep.Failures, fmt.Sprintf(format, args...)) }
	if v.notDecoded > 0 {
		fail("not decoded: %d records failed to decode or have no event time (the contract admits none)", v.notDecoded)
	}
	for i, f := range c.Fields {
		rep.Fields = append(rep.Fields, fieldReport{Name: f.Name, Type: f.Type, Required: f.Required,
			Nulls: v.nulls[i], NullRate: rate(v.nulls[i], v.decoded)})
	}
	rep.EventIDs = idReport{
		EventID: c.EventID, WithoutID: v.withoutID,
		Duplicates: v.duplicates, DuplicateRate: rate(v.duplicates, v.decoded),
		ConflictIDs: v.conflictIDs, ConflictRecords: v.conflictRecords,
		ConflictExamples: nonNil(v.conflictEx),
	}
	if v.hasIngest {
		rep.Arrival = &arrivalReport{Checked: v.arrivalChecked, Within: v.arrivalWithin, Ratio: rate(v.arrivalWithin, v.arrivalChecked)}
	}
	for i, info := range v.checks {
		rr := ruleReport{Name: info.Rule, Kind: info.Kind.String(), Field: info.Field,
			Checked: v.ruleChecked[i], Violations: v.ruleViolations[i],
			Rate: rate(v.ruleViolations[i], v.ruleChecked[i]), MaxViolationRate: info.MaxViolationRate,
			Examples: nonNil(v.ruleExamples[i])}
		switch {
		case info.Kind.TimeRule() && !v.hasIngest:
			rr.Status, rr.Note = "not_checked", "no ingest_time"
		case info.Kind.TimeRule() && rr.Checked == 0:
			rr.Status, rr.Note = "not_checked", "no record has an ingest_time"
		case rr.Rate <= rr.MaxViolationRate:
			rr.Status = "pass"
		default:
			rr.Status = "fail"
			fail("rule %s: violation rate %s (%d of %d) is above max_violation_rate %s", rr.Name, pct(rr.Rate), rr.Violations, rr.Checked, pct(rr.MaxViolationRate))
		}
		rep.Rules = append(rep.Rules, rr)
	}
	threshold := func(name string, limit, value float64, ok bool) {
		t := thresholdReport{Name: name, Limit: limit, Value: value, Status: "pass"}
		if !ok {
			t.Status = "fail"
			fail("%s: %s, want %s", name, num(value), bound(name, limit))
		}
		rep.Thresholds = append(rep.Thresholds, t)
	}
	q := &c.Quality
	// max_null_rate in field order (Validate made every key a field).
	names := make([]string, 0, len(q.MaxNullRate))
	for n := range q.MaxNullRate {
		names = append(names, n)
	}
	order := map[string]int{}
	for i, f := range c.Fields {
		order[f.Name] = i
	}
	sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
	for _, n := range names {
		limit := q.MaxNullRate[n]
		var value float64
		for _, fr := range rep.Fields {
			if fr.Name == n {
				value = fr.NullRate
			}
		}
		threshold("max_null_rate."+n, limit, value, value <= limit)
	}
	if q.MaxDuplicateIDRate != nil {
		threshold("max_duplicate_id_rate", *q.MaxDuplicateIDRate, rep.EventIDs.DuplicateRate, rep.EventIDs.DuplicateRate <= *q.MaxDuplicateIDRate)
	}
	if q.MaxConflicts != nil {
		threshold("max_conflicts", float64(*q.MaxConflicts), float64(v.conflictIDs), v.conflictIDs <= *q.MaxConflicts)
	}
	if q.MinArrivalWithin24h != nil {
		var ratio float64
		ok := false
		if rep.Arrival != nil && rep.Arrival.Checked > 0 {
			ratio, ok = rep.Arrival.Ratio, rep.Arrival.Ratio >= *q.MinArrivalWithin24h
		}
		threshold("min_arrival_within_24h", *q.MinArrivalWithin24h, ratio, ok)
	}
	rep.Pass = len(rep.Failures) == 0
	return rep
}

// num writes a number as briefly as it reads back exactly.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// bound says which side of its limit a threshold wants: "at most 0.01";
// min_ thresholds want "at least".
func bound(name string, limit float64) string {
	if strings.HasPrefix(name, "min_") {
		return "at least " + num(limit)
	}
	return "at most " + num(limit)
}

// pct writes a share as a percentage with four decimals: "0.2466%".
func pct(r float64) string { return strconv.FormatFloat(r*100, 'f', 4, 64) + "%" }

// writeText writes the report for people.
func (rep *Report) writeText(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("contract %s (schema_version %s, owner %s)\n", rep.Contract.Product, rep.Contract.SchemaVersion, rep.Contract.Owner)
	p("data %s\n", strings.Join(rep.Data, " "))
	p("\nrecords\n")
	p("  read         %d\n", rep.Records.Read)
	p("  not decoded  %d\n", rep.Records.NotDecoded)
	for _, e := range rep.Records.NotDecodedExamples {
		p("    %s: %s\n", e.Source, e.Reason)
	}
	p("  checked      %d\n", rep.Records.Checked)
	rep.writeVersions(p)

	p("\nfields (null or missing)\n")
	nameW, typeW := 0, 0
	for _, f := range rep.Fields {
		nameW, typeW = max(nameW, len(f.Name)), max(typeW, len(f.Type))
	}
	for _, f := range rep.Fields {
		req := "        "
		if f.Required {
			req = "required"
		}
		p("  %-*s  %-*s  %s  %d (%s)\n", nameW, f.Name, typeW, f.Type, req, f.Nulls, pct(f.NullRate))
	}

	id := rep.EventIDs
	p("\nevent ids (%s)\n", id.EventID)
	p("  without an id  %d\n", id.WithoutID)
	p("  duplicate ids  %d (%s)\n", id.Duplicates, pct(id.DuplicateRate))
	p("  conflicts      %d ids, %d records\n", id.ConflictIDs, id.ConflictRecords)
	for _, e := range id.ConflictExamples {
		p("    %s: first %s, then %s\n", e.ID, e.First, e.Second)
	}

	if a := rep.Arrival; a != nil {
		p("\narrival within 24h  %d of %d (%s)\n", a.Within, a.Checked, pct(a.Ratio))
	} else {
		p("\narrival within 24h  n/a (no ingest_time)\n")
	}

	p("\nrules\n")
	if len(rep.Rules) == 0 {
		p("  (none)\n")
	}
	nameW = 0
	for _, r := range rep.Rules {
		nameW = max(nameW, len(r.Name))
	}
	for _, r := range rep.Rules {
		if r.Status == "not_checked" {
			p("  %-*s  not checked (%s)\n", nameW, r.Name, r.Note)
			continue
		}
		p("  %-*s  %s  %d of %d (%s), max %s\n", nameW, r.Name, strings.ToUpper(r.Status), r.Violations, r.Checked, pct(r.Rate), pct(r.MaxViolationRate))
		for _, e := range r.Examples {
			p("    %s: %s\n", e.Source, e.Reason)
		}
	}

	p("\nthresholds\n")
	if len(rep.Thresholds) == 0 {
		p("  (none)\n")
	}
	nameW = 0
	for _, t := range rep.Thresholds {
		nameW = max(nameW, len(t.Name))
	}
	for _, t := range rep.Thresholds {
		p("  %-*s  %s  %s, %s\n", nameW, t.Name, strings.ToUpper(t.Status), num(t.Value), bound(t.Name, t.Limit))
	}

	if rep.Pass {
		p("\nresult PASS\n")
		return
	}
	p("\nresult FAIL\n")
	for _, f := range rep.Failures {
		p("  %s\n", f)
	}
}
