package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/source/kafka"
)

// This file is validate's part for Avro and Protobuf data: the schema
// registry, the contract's schema versions, Kafka topics as data.

// registryOf returns the client of the --registry URLs, or a usage error
// saying why one is needed.
func registryOf(o validateOptions, why string) (*confluent.Registry, error) {
	var urls []string
	for _, u := range strings.Split(o.registry, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, usageErr("validate: --registry: required: %s (or set SCHEMA_REGISTRY_URL)", why)
	}
	reg, err := confluent.NewRegistry(confluent.RegistryConfig{URLs: urls})
	if err != nil {
		return nil, usageErr("validate: --registry: %v", err)
	}
	return reg, nil
}

// versionMaps returns the contract's schema versions for a Decoder or a
// VersionResolver (nil without schema_versions).
func (v *validator) versionMaps() map[int]confluent.Version {
	if v.c.SchemaVersions == nil {
		return nil
	}
	out := map[int]confluent.Version{}
	for n, m := range v.c.Mappings() {
		out[n] = confluent.Version{Rename: m.Rename, Defaults: m.Defaults}
	}
	return out
}

// useRegistry prepares the schema versions of Avro files: with a
// contract's schema_versions (or --subject), each file's schema is looked
// up in the subject, its records read with its version's mapping and
// counted by version. Without them files are read by field names.
func (v *validator) useRegistry(o validateOptions, _ string) error {
	if v.versions != nil || (v.c.SchemaVersions == nil && o.subject == "") {
		return nil
	}
	subject := o.subject
	if subject == "" {
		subject = v.c.SchemaVersions.Subject
	}
	if subject == "" {
		return usageErr("validate: --subject: required: contract %s's schema_versions names no subject, and Avro files have no topic to name one", v.c.Product)
	}
	reg, err := registryOf(o, fmt.Sprintf("contract %s lists versions of subject %s, and each Avro file's schema is looked up there to find its version", v.c.Product, subject))
	if err != nil {
		return err
	}
	v.versions = &confluent.VersionResolver{Registry: reg, Subject: subject, Contract: v.c.Product,
		Fields: format.Fields{Schema: v.schema, Time: v.timeParse}, Versions: v.versionMaps()}
	v.fileVersion, v.versionCount, v.versioned = map[string]int{}, map[int]int64{}, true
	v.subjects = []string{subject}
	return nil
}

// readTopics measures every record of the --topic topics, read from
// their start to their end (the end offsets when the read begins;
// read_committed), and counts the records of each schema version.
func (v *validator) readTopics(ctx context.Context, o validateOptions) error {
	brokers := o.brokers
	if len(brokers) == 0 {
		brokers = defaultBrokers()
	}
	cfg := kafka.Config{
		Brokers: brokers, Topics: o.topics, Start: "earliest", StopAtEnd: true,
		Fields:         format.Fields{Schema: v.schema, Time: v.timeParse},
		EventTimeField: v.c.EventTime.Field, ClientID: "tidemark-validate",
	}
	switch o.dataFormat {
	case "", "jsonl":
		cfg.Format = kafka.FormatJSON
	default:
		cfg.Format = o.dataFormat
		reg, err := registryOf(o, "--data-format "+o.dataFormat+" reads the writers' schemas from the registry")
		if err != nil {
			return err
		}
		cfg.Registry = reg
		cfg.Subject = o.subject
		if sv := v.c.SchemaVersions; sv != nil {
			cfg.Versions, cfg.Contract = v.versionMaps(), v.c.Product
			if cfg.Subject == "" {
				cfg.Subject = sv.Subject
			}
		}
		v.versioned, v.versionCount = true, map[int]int64{}
		if cfg.Subject != "" {
			v.subjects = []string{cfg.Subject}
		} else {
			for _, t := range o.topics {
				v.subjects = append(v.subjects, t+"-value")
			}
		}
	}
	src, err := kafka.New(cfg)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("validate: %w", err)}
	}
	defer src.Close()
	if err := v.read(ctx, src); err != nil {
		return err
	}
	if v.versionCount != nil {
		for _, counts := range src.SchemaCounts() {
			for _, c := range counts {
				v.versionCount[c.Version] += c.Records
			}
		}
	}
	return nil
}

// versionsReport counts the records of each version of the subject.
type versionsReport struct {
	// Subject is the registry subject (several, comma separated, for
	// topics without a contract subject: each "<topic>-value").
	Subject string `json:"subject"`
	// Versions lists the contract's versions and every other version
	// seen, ascending.
	Versions []versionReport `json:"versions"`
	// NotInSubject counts the records whose schema is no version of the
	// subject.
	NotInSubject int64 `json:"not_in_subject"`
}

// versionReport is one version of the subject.
type versionReport struct {
	Version int `json:"version"`
	// Accepted is whether the contract accepts it (true for every version
	// without schema_versions).
	Accepted bool `json:"accepted"`
	// DeprecatedAfter is the contract's deprecated_after date, or "".
	DeprecatedAfter string `json:"deprecated_after"`
	Records         int64  `json:"records"`
}

// versionsReport returns the schema versions' counts, or nil for data
// without schema versions.
func (v *validator) versionsReport() *versionsReport {
	if !v.versioned {
		return nil
	}
	rep := &versionsReport{Subject: strings.Join(v.subjects, ", "), Versions: []versionReport{}}
	listed := map[int]versionReport{}
	if sv := v.c.SchemaVersions; sv != nil {
		for _, x := range sv.Versions {
			listed[x.Version] = versionReport{Version: x.Version, Accepted: true, DeprecatedAfter: x.DeprecatedAfter}
		}
	}
	for n, c := range v.versionCount {
		if n == 0 {
			rep.NotInSubject = c
			continue
		}
		r, ok := listed[n]
		if !ok {
			r = versionReport{Version: n, Accepted: v.c.SchemaVersions == nil}
		}
		r.Records = c
		listed[n] = r
	}
	for _, r := range listed {
		rep.Versions = append(rep.Versions, r)
	}
	sort.Slice(rep.Versions, func(i, j int) bool { return rep.Versions[i].Version < rep.Versions[j].Version })
	return rep
}

// writeVersions writes the schema versions' section of the text report.
func (rep *Report) writeVersions(p func(format string, args ...any)) {
	sv := rep.SchemaVersions
	if sv == nil {
		return
	}
	p("\nschema versions (subject %s)\n", sv.Subject)
	lines := [][2]string{}
	for _, x := range sv.Versions {
		what := "accepted"
		if !x.Accepted {
			what = "not accepted"
		}
		if x.DeprecatedAfter != "" {
			what += ", deprecated after " + x.DeprecatedAfter
		}
		lines = append(lines, [2]string{fmt.Sprintf("version %d  %s", x.Version, what), fmt.Sprint(x.Records)})
	}
	lines = append(lines, [2]string{"not a version of the subject", fmt.Sprint(sv.NotInSubject)})
	w := 0
	for _, l := range lines {
		w = max(w, len(l[0]))
	}
	for _, l := range lines {
		p("  %-*s  %s\n", w, l[0], l[1])
	}
}
