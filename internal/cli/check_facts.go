package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidemark/tidemark/check"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/kafka"
	"github.com/tidemark/tidemark/source/pgcdc"
)

// gatherFacts is check --connect: the compatibility level of each subject
// the contract's schema_versions governs, and the records of each
// deprecated version produced after its date (a bounded read of the
// source topics from that date, by Kafka record timestamp, to their end).
func gatherFacts(ctx context.Context, pl *plan.Plan, now time.Time) (*check.Facts, error) {
	facts := &check.Facts{Asked: true, Compatibility: map[string]string{}}
	if pl.Spec.Source.Type == "postgres_cdc" {
		cfg, err := engine.CDCConfig(pl)
		if err != nil {
			return nil, err
		}
		probs, err := pgcdc.Check(ctx, cfg)
		if err != nil {
			return nil, err
		}
		for _, p := range probs {
			facts.Database = append(facts.Database, check.DatabaseProblem{What: p.What, Fix: p.Fix})
		}
	}
	c := pl.Contract
	subjects := check.Subjects(pl.Spec, c)
	if len(subjects) == 0 {
		return facts, nil
	}
	sp := &pl.Spec.Source
	if sp.SchemaRegistry == nil {
		return nil, errors.New("source.schema_registry is not set: there is no registry to ask")
	}
	var urls []string
	for _, u := range strings.Split(sp.SchemaRegistry.URL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	reg, err := confluent.NewRegistry(confluent.RegistryConfig{URLs: urls, Username: sp.SchemaRegistry.Username,
		Password: sp.SchemaRegistry.Password, TimeoutMs: sp.SchemaRegistry.Timeout.Ms()})
	if err != nil {
		return nil, err
	}
	for _, s := range subjects {
		level, err := reg.Compatibility(ctx, s)
		if err != nil {
			return nil, err
		}
		facts.Compatibility[s] = level
	}
	if sp.Type != "kafka" {
		return facts, nil
	}
	// One bounded read per distinct date, from its first day.
	byDate := map[time.Time][]int{}
	for v, since := range check.DeprecatedSince(c, now) {
		byDate[since] = append(byDate[since], v)
	}
	dates := make([]time.Time, 0, len(byDate))
	for d := range byDate {
		dates = append(dates, d)
	}
	sort.Slice(dates, func(i, j int) bool { return dates[i].Before(dates[j]) })
	for _, since := range dates {
		counts, err := countVersionsSince(ctx, pl, reg, since)
		if err != nil {
			return nil, err
		}
		versions := byDate[since]
		sort.Ints(versions)
		for _, v := range versions {
			for _, s := range subjects {
				facts.Produced = append(facts.Produced, check.Produced{Subject: s, Version: v, Since: since.Format(time.DateOnly), Records: counts[s][v]})
			}
		}
	}
	return facts, nil
}

// countVersionsSince reads the source topics from the first record with
// a timestamp at or after since to their end and returns the records of
// each version, by subject.
func countVersionsSince(ctx context.Context, pl *plan.Plan, reg *confluent.Registry, since time.Time) (map[string]map[int]int64, error) {
	sp := &pl.Spec.Source
	subject := ""
	if sv := pl.Contract.SchemaVersions; sv != nil {
		subject = sv.Subject
	}
	src, err := kafka.New(kafka.Config{
		Brokers: sp.Brokers, Topics: sp.Topics, Start: "timestamp", StartTimestamp: since.UnixMilli(), StopAtEnd: true,
		Fields: format.Fields{Schema: row.NewSchema()}, Format: sp.Format, Registry: reg, Subject: subject,
		ClientID: "tidemark-check", ReadUncommitted: sp.Isolation == "read_uncommitted",
	})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var b source.Batch
	for {
		b.Reset()
		st, err := src.Next(ctx, &b, 4096)
		if err != nil {
			return nil, fmt.Errorf("reading the source topics since %s: %w", since.Format(time.DateOnly), err)
		}
		if st == source.End {
			break
		}
	}
	out := map[string]map[int]int64{}
	for topic, counts := range src.SchemaCounts() {
		s := subject
		if s == "" {
			s = topic + "-value"
		}
		if out[s] == nil {
			out[s] = map[int]int64{}
		}
		for _, c := range counts {
			out[s][c.Version] += c.Records
		}
	}
	return out, nil
}
