package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/spec"
)

// Facts are what `tidemark check --connect` learned from outside the
// pipeline file — the schema registry and the source topics — for the
// rules that compare a contract's schema versions with what producers
// do (TM110, TM111). The zero Facts (or nil) says nothing was asked:
// those rules then report "not checked".
type Facts struct {
	// Asked is true when the registry and topics were asked.
	Asked bool
	// Compatibility is each subject's compatibility level in the
	// registry (its own, or the registry's global level when it has
	// none), upper case, by subject.
	Compatibility map[string]string
	// Produced are the records of deprecated versions produced after
	// their deprecated_after date (Kafka record timestamps), by subject
	// and version; a version absent or with zero Records is no longer
	// produced.
	Produced []Produced
	// Database lists what the database of a postgres_cdc source lacks
	// (TM114), empty when it has everything.
	Database []DatabaseProblem
}

// DatabaseProblem is one thing a postgres_cdc source's database lacks,
// with its fix.
type DatabaseProblem struct{ What, Fix string }

// Produced counts the records of one version of a subject in the source
// topics whose Kafka timestamp is on or after Since.
type Produced struct {
	Subject string
	Version int
	// Since is the first day (YYYY-MM-DD, UTC) after the version's
	// deprecated_after date.
	Since string
	// Records is how many were read.
	Records int64
}

// The rules over schema versions (TM110, TM111).
var (
	ruleRegistryCompat     = Rule{"TM110", "registry-compatibility-weaker", "source", "the registry lets a subject change under a compatibility level weaker than the contract promises"}
	ruleDeprecatedProduced = Rule{"TM111", "deprecated-version-produced", "source", "a schema version the contract deprecated is still produced"}
)

// Subjects returns the registry subjects whose versions contract c's
// schema_versions lists for pipeline p: its subject, or "<topic>-value"
// for each topic of a Kafka source; none without schema versions, or
// when the source reads no records with schema versions (a Kafka source
// in Avro or Protobuf, Avro files). Sorted.
func Subjects(p *spec.Pipeline, c *contract.Contract) []string {
	s := p.Source
	if c == nil || c.SchemaVersions == nil {
		return nil
	}
	if !(s.Type == "kafka" && (s.Format == "avro" || s.Format == "protobuf") || s.Type == "file" && s.Format == "avro") {
		return nil
	}
	if sub := c.SchemaVersions.Subject; sub != "" {
		return []string{sub}
	}
	if s.Type != "kafka" {
		return nil
	}
	var out []string
	for _, t := range s.Topics {
		out = append(out, t+"-value")
	}
	sort.Strings(out)
	return out
}

// subjects is Subjects for the checked pipeline.
func (ck *checker) subjects() []string { return Subjects(ck.p, ck.c) }

// registryCompat is TM110: a registry subject whose compatibility level
// is weaker than the contract's schema_versions.compatibility.
func (ck *checker) registryCompat() {
	subjects := ck.subjects()
	if len(subjects) == 0 {
		return
	}
	want := ck.c.Compatibility()
	if ck.facts == nil || !ck.facts.Asked {
		ck.add(ruleRegistryCompat, Info, "source.schema_registry",
			fmt.Sprintf("not checked: contract %s promises %s for subject %s, and only the registry knows the level it enforces", ck.c.Product, want, strings.Join(subjects, ", ")),
			"run tidemark check --connect, which asks the registry")
		return
	}
	for _, s := range subjects {
		have, ok := ck.facts.Compatibility[s]
		if !ok {
			continue
		}
		if contract.CompatCovers(have, want) {
			continue
		}
		ck.add(ruleRegistryCompat, Error, "source.schema_registry",
			fmt.Sprintf("subject %s has compatibility %s in the registry, weaker than the %s contract %s promises: a producer can register a version the consumers cannot read, and the registry will not refuse it", s, have, want, ck.c.Product),
			fmt.Sprintf(`set the subject's level: PUT /config/%s {"compatibility": "%s"} (or promise less in the contract's schema_versions.compatibility)`, s, want))
	}
}

// deprecatedProduced is TM111: a version past its deprecated_after date
// whose records still reach the source topics.
func (ck *checker) deprecatedProduced() {
	subjects := ck.subjects()
	if len(subjects) == 0 {
		return
	}
	dates := map[int]string{}
	for _, v := range ck.c.SchemaVersions.Versions {
		dates[v.Version] = v.DeprecatedAfter
	}
	deprecated := ck.c.Deprecated(ck.now)
	if len(deprecated) == 0 {
		return
	}
	if ck.facts == nil || !ck.facts.Asked {
		if ck.p.Source.Type == "kafka" {
			var vs []string
			for _, v := range deprecated {
				vs = append(vs, fmt.Sprintf("%d (after %s)", v, dates[v]))
			}
			ck.add(ruleDeprecatedProduced, Info, "source.topics",
				fmt.Sprintf("not checked: contract %s deprecates version %s of %s, and only the topics show whether producers still write them", ck.c.Product, strings.Join(vs, ", "), strings.Join(subjects, ", ")),
				"run tidemark check --connect, which reads the topics since each date")
		}
		return
	}
	for _, pr := range ck.facts.Produced {
		if pr.Records == 0 {
			continue
		}
		ck.add(ruleDeprecatedProduced, Warning, "source.topics",
			fmt.Sprintf("version %d of subject %s, which contract %s deprecated after %s, is still produced: %d records since %s; the pipeline still accepts them, but the producers broke the contract's promise", pr.Version, pr.Subject, ck.c.Product, dates[pr.Version], pr.Records, pr.Since),
			"move the producers to a newer accepted version (or extend the version's deprecated_after, telling the consumers)")
	}
}

// DeprecatedSince returns, for each version of c deprecated at now, the
// first day after its deprecated_after date (YYYY-MM-DD and its midnight
// UTC): the records of that version with a later timestamp break the
// deprecation. Ascending by version.
func DeprecatedSince(c *contract.Contract, now time.Time) map[int]time.Time {
	if c == nil || c.SchemaVersions == nil {
		return nil
	}
	dep := map[int]bool{}
	for _, v := range c.Deprecated(now) {
		dep[v] = true
	}
	out := map[int]time.Time{}
	for _, v := range c.SchemaVersions.Versions {
		if !dep[v.Version] {
			continue
		}
		d, err := time.Parse(time.DateOnly, v.DeprecatedAfter)
		if err != nil {
			continue
		}
		out[v.Version] = d.AddDate(0, 0, 1)
	}
	return out
}
