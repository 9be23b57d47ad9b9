package contract

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/spec"
)

// Load reads the contract file at path and returns Parse's result. Errors
// name the file and, for YAML problems, the line and column.
func Load(path string) (*Contract, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes a contract from YAML (name is used in error messages),
// expanding ${VAR} and ${VAR:-default} from the environment first (as
// spec.ExpandEnv does for pipelines), then applies Defaults and Validate.
// Unknown keys are errors; YAML errors carry the line and column and show
// the line; Validate's errors come one per line, each naming its key.
func Parse(name string, data []byte) (*Contract, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	data, err := spec.ExpandEnv(data, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty contract file", name)
	}
	var c Contract
	if err := decode(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, true))
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

// decode unmarshals data into c, unknown keys being errors. A panic of the
// YAML library becomes an error (goccy/go-yaml v1.19.2 dereferences nil
// on a tag without a value where a list is expected; see spec's decode).
func decode(data []byte, c *Contract) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode the YAML (the decoder failed: %v); check for a tag such as !foo without a value", r)
		}
	}()
	if err := spec.CheckKeys(data, c); err != nil {
		return err // the first unknown key in the file, with the keys close to it
	}
	return yaml.UnmarshalWithOptions(data, c, yaml.DisallowUnknownField())
}

// Defaults fills in the documented defaults of unset keys: event_time.format
// is "layout" when event_time.layout is set, else "rfc3339". The other keys
// default to their zero values (false, 0, none), which need no filling in.
func (c *Contract) Defaults() {
	if c.EventTime.Format == "" {
		if c.EventTime.Layout != "" {
			c.EventTime.Format = "layout"
		} else {
			c.EventTime.Format = "rfc3339"
		}
	}
}

// fieldTypes are the type names a contract field may have, in the order
// error messages list them. Unlike a pipeline's source.schema, a contract
// takes no aliases ("integer", "text"): a published contract spells each
// type one way.
var fieldTypes = [...]string{"bool", "int", "decimal", "string", "timestamp"}

// knownType reports whether t is one of fieldTypes.
func knownType(t string) bool {
	for _, k := range fieldTypes {
		if t == k {
			return true
		}
	}
	return false
}

// identRE matches a plain field name (possibly dotted, for nested JSON).
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// Validate checks the contract and returns every problem found, joined,
// one per line, each naming its key ("fields.amount.type: unknown type
// ..."). It expects Defaults to have run. docs/contracts.md lists the
// messages.
func (c *Contract) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if strings.TrimSpace(c.Product) == "" {
		add("product", "required")
	}
	if strings.TrimSpace(c.Owner) == "" {
		add("owner", "required")
	}
	if strings.TrimSpace(c.SchemaVersion) == "" {
		add("schema_version", "required")
	}
	c.validateFields(add)
	c.validateTime(add)
	c.validateRules(add)
	c.validateQuality(add)
	c.validateSchemaVersions(add)
	return errors.Join(errs...)
}

// adder records one problem, naming its key.
type adder func(key, format string, args ...any)

// validateFields checks fields.
func (c *Contract) validateFields(add adder) {
	if len(c.Fields) == 0 {
		add("fields", "required: declare at least one field")
	}
	seen := map[string]bool{}
	for i, f := range c.Fields {
		if f.Name == "" {
			add(fmt.Sprintf("fields[%d]", i), "empty field name")
			continue
		}
		key := "fields." + f.Name
		if seen[f.Name] {
			add(key, "declared twice")
			continue
		}
		seen[f.Name] = true
		switch {
		case f.Type == "":
			add(key+".type", "required (bool, int, decimal, string or timestamp)")
		case !knownType(f.Type):
			add(key+".type", "unknown type %q (want bool, int, decimal, string or timestamp)", f.Type)
		}
	}
}

// validateTime checks event_id, event_time, ingest_time, ordering and
// the durations.
func (c *Contract) validateTime(add adder) {
	// event_id
	switch id := strings.TrimSpace(c.EventID); {
	case id == "":
		add("event_id", "required (a field name, or an expression over fields for a composite id)")
	case identRE.MatchString(id):
		if _, ok := c.Field(id); !ok {
			add("event_id", "field %q is not declared in fields", id)
		}
	default:
		if _, err := expr.Parse(c.EventID); err != nil {
			add("event_id", "%v", err)
		}
	}

	// event_time
	et := &c.EventTime
	if et.Field == "" {
		add("event_time.field", "required")
	} else if f, ok := c.Field(et.Field); ok && f.Type != "" && f.Type != "timestamp" {
		add("event_time.field", "%q is declared %s; the event time is a timestamp (declare it timestamp or leave it out of fields)", et.Field, f.Type)
	}
	switch et.Format {
	case "rfc3339", "epoch_ms", "epoch_s":
		if et.Layout != "" {
			add("event_time.layout", "only with format layout")
		}
	case "layout":
		if et.Layout == "" {
			add("event_time.layout", "required with format layout")
		}
		if et.Timezone == "" {
			add("event_time.timezone", "required with a layout: timestamps without an offset need a zone")
		}
	case "":
		add("event_time.format", "required (rfc3339, epoch_ms, epoch_s or layout)")
	default:
		add("event_time.format", "unknown format %q (want rfc3339, epoch_ms, epoch_s or layout)", et.Format)
	}
	if et.Timezone != "" {
		if msg := checkZone(et.Timezone); msg != "" {
			add("event_time.timezone", "%s", msg)
		}
	}

	// ingest_time
	if n := c.IngestTime; n != "" {
		f, ok := c.Field(n)
		switch {
		case !ok:
			add("ingest_time", "field %q is not declared in fields (declare it timestamp)", n)
		case f.Type != "" && f.Type != "timestamp":
			add("ingest_time", "%q is declared %s; want timestamp", n, f.Type)
		case n == et.Field:
			add("ingest_time", "%q is the event-time field; the ingest time is when the event arrived", n)
		}
	}

	// ordering
	if o := c.Ordering; o != nil {
		if o.Key == "" {
			add("ordering.key", "required (the entity field, e.g. order_id)")
		} else if _, ok := c.Field(o.Key); !ok {
			add("ordering.key", "field %q is not declared in fields", o.Key)
		}
		if o.Version == "" {
			add("ordering.version", "required (an int field that grows with each state change)")
		} else if f, ok := c.Field(o.Version); !ok {
			add("ordering.version", "field %q is not declared in fields (declare it int)", o.Version)
		} else if f.Type != "" && f.Type != "int" {
			add("ordering.version", "%q is declared %s; want int", o.Version, f.Type)
		}
	}

	nonNegative := func(key string, d spec.Duration) {
		if d < 0 {
			add(key, "must not be negative")
		}
		if d.D()%time.Millisecond != 0 {
			add(key, "%s is not a whole number of milliseconds", d)
		}
	}
	nonNegative("max_normal_delay", c.MaxNormalDelay)
	nonNegative("retention", c.Retention)
	if c.Rate < 0 {
		add("rate", "%d events/s: must not be negative (0: unknown)", c.Rate)
	}
}

// validateRules checks rules.
func (c *Contract) validateRules(add adder) {
	reserved := map[string]string{}
	for _, f := range c.Fields {
		if f.Required && f.Name != "" {
			reserved[RequiredRuleName(f.Name)] = f.Name
		}
	}
	names := map[string]bool{}
	for i, r := range c.Rules {
		key := fmt.Sprintf("rules[%d]", i)
		switch {
		case strings.TrimSpace(r.Name) == "":
			add(key+".name", "required")
		case names[r.Name]:
			add(key+".name", "%q used twice", r.Name)
		case reserved[r.Name] != "":
			add(key+".name", "%q is the name of the required check of field %s", r.Name, reserved[r.Name])
		}
		names[r.Name] = true
		set := 0
		if r.Check != "" {
			set++
		}
		if r.MaxFuture != 0 {
			set++
		}
		if r.MaxAge != 0 {
			set++
		}
		if set != 1 {
			add(key, "give exactly one of check, max_future or max_age")
		}
		if r.Check != "" {
			if _, err := expr.Parse(r.Check); err != nil {
				add(key+".check", "%v", err)
			}
		}
		if r.MaxFuture != 0 {
			if r.MaxFuture < 0 {
				add(key+".max_future", "must be positive")
			}
			if r.MaxFuture.D()%time.Millisecond != 0 {
				add(key+".max_future", "%s is not a whole number of milliseconds", r.MaxFuture)
			}
		}
		if r.MaxAge != 0 {
			if r.MaxAge < 0 {
				add(key+".max_age", "must be positive")
			}
			if r.MaxAge.D()%time.Millisecond != 0 {
				add(key+".max_age", "%s is not a whole number of milliseconds", r.MaxAge)
			}
			if !c.Realtime {
				add(key+".max_age", "only for a realtime source (set realtime: true): in a backfill or a batch file old events are normal")
			}
		}
		if !isRate(r.MaxViolationRate) {
			add(key+".max_violation_rate", "must be between 0 and 1")
		}
	}
}

// validateQuality checks quality.
func (c *Contract) validateQuality(add adder) {
	q := &c.Quality
	nullKeys := make([]string, 0, len(q.MaxNullRate))
	for k := range q.MaxNullRate {
		nullKeys = append(nullKeys, k)
	}
	sort.Strings(nullKeys)
	for _, k := range nullKeys {
		key := "quality.max_null_rate." + k
		if _, ok := c.Field(k); !ok {
			add(key, "field %q is not declared in fields", k)
		}
		if !isRate(q.MaxNullRate[k]) {
			add(key, "must be between 0 and 1")
		}
	}
	if q.MaxDuplicateIDRate != nil && !isRate(*q.MaxDuplicateIDRate) {
		add("quality.max_duplicate_id_rate", "must be between 0 and 1")
	}
	if q.MaxConflicts != nil && *q.MaxConflicts < 0 {
		add("quality.max_conflicts", "must not be negative")
	}
	if q.MinArrivalWithin24h != nil {
		if !isRate(*q.MinArrivalWithin24h) {
			add("quality.min_arrival_within_24h", "must be between 0 and 1")
		}
		if c.IngestTime == "" {
			add("quality.min_arrival_within_24h", "needs ingest_time: the arrival is measured from it")
		}
	}
}

// isRate reports whether v is a share in [0, 1]; written so that NaN fails.
func isRate(v float64) bool { return v >= 0 && v <= 1 }

// checkZone returns why zone is not usable, or "" (as the pipeline's
// event_time.timezone: "Local" is refused, it depends on the machine).
func checkZone(zone string) string {
	if zone == "Local" {
		return `"Local" depends on the machine; name an IANA zone such as "Europe/London" or "UTC"`
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return fmt.Sprintf("unknown zone %q", zone)
	}
	return ""
}

// Field returns the declaration of the field named name.
func (c *Contract) Field(name string) (Field, bool) {
	return c.Fields.Lookup(name)
}

// MetadataFields returns the names of the fields that describe a delivery
// rather than the event: those marked metadata, and ingest_time, in
// declaration order (ingest_time last when it is not declared), without
// repeats. It returns nil when there are none. Deduplication ignores
// these fields when it compares two deliveries of one event id.
func (c *Contract) MetadataFields() []string {
	var out []string
	seen := map[string]bool{}
	addName := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, f := range c.Fields {
		if f.Metadata || (c.IngestTime != "" && f.Name == c.IngestTime) {
			addName(f.Name)
		}
	}
	addName(c.IngestTime)
	return out
}

// RequiredRuleName is the rule name of the required check of a field:
// "<field>_required".
func RequiredRuleName(field string) string { return field + "_required" }

// Compatibility levels of a registry subject, weakest first within each
// line: NONE < BACKWARD < BACKWARD_TRANSITIVE, NONE < FORWARD <
// FORWARD_TRANSITIVE, and FULL (FULL_TRANSITIVE) covers both lines.
var compatLevels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}

// CompatCovers reports whether a subject at registry level have keeps
// every promise of level want (both names as compatLevels spells them,
// any letter case): FULL covers BACKWARD and FORWARD, a transitive
// level its plain one, every level NONE.
func CompatCovers(have, want string) bool {
	h, w := strings.ToUpper(have), strings.ToUpper(want)
	back := func(l string) int {
		switch l {
		case "BACKWARD", "FULL":
			return 1
		case "BACKWARD_TRANSITIVE", "FULL_TRANSITIVE":
			return 2
		}
		return 0
	}
	fwd := func(l string) int {
		switch l {
		case "FORWARD", "FULL":
			return 1
		case "FORWARD_TRANSITIVE", "FULL_TRANSITIVE":
			return 2
		}
		return 0
	}
	return back(h) >= back(w) && fwd(h) >= fwd(w)
}

// validateSchemaVersions checks schema_versions.
func (c *Contract) validateSchemaVersions(add adder) {
	sv := c.SchemaVersions
	if sv == nil {
		return
	}
	if sv.Compatibility != "" {
		ok := false
		for _, l := range compatLevels {
			ok = ok || strings.EqualFold(l, sv.Compatibility)
		}
		if !ok {
			add("schema_versions.compatibility", "unknown mode %q (want %s)", sv.Compatibility, strings.Join(compatLevels, ", "))
		}
	}
	if len(sv.Versions) == 0 {
		add("schema_versions.versions", "required: list at least one accepted version")
	}
	seen := map[int]bool{}
	for i, v := range sv.Versions {
		key := fmt.Sprintf("schema_versions.versions[%d]", i)
		if v.Version < 1 {
			add(key+".version", "required: a subject version, 1 or more")
		} else if seen[v.Version] {
			add(key+".version", "version %d listed twice", v.Version)
		}
		seen[v.Version] = true
		for _, name := range sortedKeys(v.Fields) {
			if _, ok := c.Field(name); !ok {
				add(key+".fields."+name, "field %q is not declared in fields", name)
			}
			if !identRE.MatchString(v.Fields[name]) {
				add(key+".fields."+name, "%q is not a field name (a dotted path into nested records is)", v.Fields[name])
			}
		}
		for _, name := range sortedKeys(v.Defaults) {
			f, ok := c.Field(name)
			if !ok {
				add(key+".defaults."+name, "field %q is not declared in fields", name)
				continue
			}
			if _, err := parseDefault(f, v.Defaults[name]); err != nil {
				add(key+".defaults."+name, "%v", err)
			}
		}
		if v.DeprecatedAfter != "" {
			if _, err := time.Parse(time.DateOnly, v.DeprecatedAfter); err != nil {
				add(key+".deprecated_after", "%q is not a date YYYY-MM-DD", v.DeprecatedAfter)
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
