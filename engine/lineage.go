package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/tidemark/tidemark/spec"
)

// LineageColumn is the result column that records where a row comes from
// (Options.Lineage): "pipeline=revenue_hourly;spec=3f2a9c1e07b4;
// tidemark=v0.3.0+a1b2c3d4e5f6;contract=2012;reference=-" and, for a
// backfill, ";replay=v2@2026-11-29T12:00:00Z".
const LineageColumn = "lineage"

// Lineage describes what made a run's result rows (docs/reprocessing.md,
// "Lineage").
type Lineage struct {
	Pipeline string // the pipeline's name
	// SpecHash is the first 12 hex digits of the SHA-256 of the pipeline
	// spec's canonical JSON without its outputs and checkpoint settings
	// (sinks, the side outputs' and the contributions' sinks, checkpoint,
	// state backend, SLOs; an absent max_past as 0s, both off): the
	// computation, not where its results go, so a backfill or a crash
	// test's reference run has the live pipeline's hash.
	SpecHash string
	// Tidemark is the build: the module version (or "devel") and, when
	// built from a repository, "+" and the first 12 hex digits of the
	// revision ("+dirty" when modified).
	Tidemark string
	// Contract is the data contract's schema_version, "-" without one.
	Contract string
	// Reference is the reference data's version, "-" without any.
	Reference string
	// Replay is the backfill's replay id, "" for a live run.
	Replay string
}

// String is the lineage column's value.
func (l Lineage) String() string {
	s := "pipeline=" + l.Pipeline + ";spec=" + l.SpecHash + ";tidemark=" + l.Tidemark + ";contract=" + l.Contract + ";reference=" + l.Reference
	if l.Replay != "" {
		s += ";replay=" + l.Replay
	}
	return s
}

// ParseLineage reads a lineage column's value back.
func ParseLineage(s string) Lineage {
	var l Lineage
	for _, kv := range strings.Split(s, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "pipeline":
			l.Pipeline = v
		case "spec":
			l.SpecHash = v
		case "tidemark":
			l.Tidemark = v
		case "contract":
			l.Contract = v
		case "reference":
			l.Reference = v
		case "replay":
			l.Replay = v
		}
	}
	return l
}

// SpecHash returns Lineage.SpecHash of p.
func SpecHash(p *spec.Pipeline) string {
	b, _ := json.Marshal(p)
	var m map[string]any
	json.Unmarshal(b, &m)
	delete(m, "Checkpoint")
	delete(m, "SLO")
	delete(m, "State") // where the state lives changes no result
	delete(m, "Sinks")
	// An absent event_time.max_past and 0s both turn the rule off (a
	// backfill writes 0s: spec.EventTime.MaxPast).
	if et, ok := m["EventTime"].(map[string]any); ok && et["MaxPast"] == nil {
		et["MaxPast"] = 0
	}
	for _, k := range []string{"Late", "Quarantine", "Conflicts", "Contributions"} {
		if sub, ok := m[k].(map[string]any); ok {
			delete(sub, "Sink")
		}
	}
	if stages, ok := m["Stages"].([]any); ok {
		for _, st := range stages {
			if sm, ok := st.(map[string]any); ok {
				delete(sm, "Sinks")
				for _, k := range []string{"Late", "Contributions"} {
					if sub, ok := sm[k].(map[string]any); ok {
						delete(sub, "Sink")
					}
				}
			}
		}
	}
	// The name of a backfill job is the live pipeline's plus a suffix:
	// the computation is the same.
	if name, ok := m["Name"].(string); ok {
		if i := strings.Index(name, "__backfill_"); i > 0 {
			m["Name"] = name[:i]
		}
	}
	b, _ = json.Marshal(m) // map keys sorted: canonical
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// BuildVersion returns Lineage.Tidemark of the running binary.
func BuildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return buildVersion(bi.Main.Version, bi.Settings)
}

// pseudoRev matches the revision a pseudo-version ends in
// (v0.0.0-20261204020231-cb6856b1a2b3, +incompatible after it): its 12
// hex digits.
var pseudoRev = regexp.MustCompile(`[-.][0-9]{14}-([0-9a-f]{12})(\+incompatible)?$`)

// buildVersion is BuildVersion of a module version and the build's
// settings: the version ("devel" for none), then "+" and the revision's
// first 12 hex digits, and "+dirty" when modified — the revision only
// once: a pseudo-version the go command stamps from the repository ends
// in it already (and in "+dirty" when modified, which stays last).
func buildVersion(version string, settings []debug.BuildSetting) string {
	v, dirty := strings.CutSuffix(version, "+dirty")
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			dirty = dirty || s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if m := pseudoRev.FindStringSubmatch(v); m == nil || !strings.HasPrefix(rev, m[1]) {
		v += "+" + rev
	}
	if dirty {
		v += "+dirty"
	}
	return v
}

// lineage computes the run's lineage.
func (rt *runtime) lineage() Lineage {
	p := rt.plan
	l := Lineage{Pipeline: p.Spec.Name, SpecHash: SpecHash(p.Spec), Tidemark: BuildVersion(), Contract: "-", Reference: "-", Replay: rt.opts.ReplayID}
	if i := strings.Index(l.Pipeline, "__backfill_"); i > 0 {
		l.Pipeline = l.Pipeline[:i]
	}
	if c := p.Contract; c != nil && c.SchemaVersion != "" {
		l.Contract = c.SchemaVersion
	}
	if rt.ref != nil {
		l.Reference = rt.ref.version
	}
	return l
}
