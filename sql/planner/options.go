package planner

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// optSet is a WITH clause's options: each read marks it used, and the
// options no connector read are errors naming the known ones.
type optSet struct {
	list []*parser.Option
	used map[*parser.Option]bool
}

func (pl *planner) newOptSet(opts []*parser.Option) (*optSet, error) {
	seen := map[string]*parser.Option{}
	for _, o := range opts {
		if prev, ok := seen[o.Key]; ok {
			return nil, pl.errAt(o.KeyAt, "option '%s' is given twice (also at %s)", o.Key, prev.KeyAt)
		}
		seen[o.Key] = o
	}
	return &optSet{list: opts, used: map[*parser.Option]bool{}}, nil
}

// get returns option key (marking it used).
//
//go:noinline
func (s *optSet) get(key string) (*parser.Option, bool) {
	for _, o := range s.list {
		if o.Key == key {
			s.used[o] = true
			return o, true
		}
	}
	return nil, false
}

// value returns option key's value, or "".
func (s *optSet) value(key string) string {
	if o, ok := s.get(key); ok {
		return o.Value
	}
	return ""
}

// first returns the first of keys that is set.
func (s *optSet) first(keys ...string) (*parser.Option, bool) {
	for _, k := range keys {
		if o, ok := s.get(k); ok {
			return o, true
		}
	}
	return nil, false
}

// prefixed returns the options whose key starts with prefix (marking
// them used), in order.
func (s *optSet) prefixed(prefix string) []*parser.Option {
	var out []*parser.Option
	for _, o := range s.list {
		if strings.HasPrefix(o.Key, prefix) {
			s.used[o] = true
			out = append(out, o)
		}
	}
	return out
}

// accept marks options as read without a use (documented as accepted and
// ignored).
func (s *optSet) accept(keys ...string) {
	for _, k := range keys {
		s.get(k)
	}
}

// checkUnused returns an error for the first option nothing read.
func (pl *planner) checkUnused(s *optSet, what string, known []string) error {
	for _, o := range s.list {
		if !s.used[o] {
			sort.Strings(known)
			return pl.errAt(o.KeyAt, "unknown option '%s' for %s%s (options: %s; tidemark's own keys as 'tidemark.<key>', docs/sql.md)", o.Key, what, suggest.Hint(o.Key, known), strings.Join(known, ", "))
		}
	}
	return nil
}

// flinkDuration parses a Flink duration option value: a number and a unit
// ("5 s", "1 min", "10s", "30 minutes", "100ms"), or a Go duration ("1m30s").
func flinkDuration(v string) (time.Duration, bool) {
	s := strings.TrimSpace(v)
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	m := durRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	unit := strings.ToLower(m[2])
	var u time.Duration
	switch unit {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		u = time.Millisecond
	case "s", "sec", "secs", "second", "seconds":
		u = time.Second
	case "min", "mins", "minute", "minutes", "m":
		u = time.Minute
	case "h", "hour", "hours":
		u = time.Hour
	case "d", "day", "days":
		u = 24 * time.Hour
	default:
		return 0, false
	}
	return time.Duration(n) * u, true
}

var durRE = regexp.MustCompile(`^(\d+)\s*([A-Za-z]*)$`)

func (pl *planner) durationOpt(o *parser.Option) (spec.Duration, error) {
	d, ok := flinkDuration(o.Value)
	if !ok || d < 0 {
		return 0, pl.errAt(o.ValueAt, "option '%s': %q is not a duration (write '5 s', '1 min', '10s' or '1h30m')", o.Key, o.Value)
	}
	return spec.Duration(d), nil
}

func (pl *planner) intOpt(o *parser.Option) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(o.Value), 10, 64)
	if err != nil {
		return 0, pl.errAt(o.ValueAt, "option '%s': %q is not a whole number", o.Key, o.Value)
	}
	return n, nil
}

func (pl *planner) boolOpt(o *parser.Option) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(o.Value)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, pl.errAt(o.ValueAt, "option '%s': %q is not true or false", o.Key, o.Value)
}

// overlay applies 'tidemark.<key>' options to target (a pointer to a spec
// struct): each key is a dotted path of the struct's YAML keys, each value
// YAML text ('24h', '{seed: 7, delay: 2m}', '[a, b]'). The options are
// decoded together into a fresh value, its keys checked as a pipeline
// file's are (unknown keys name the close ones), and merged into target:
// a set field replaces the target's, structs merge field by field.
func (pl *planner) overlay(target any, opts []*parser.Option, strip string) error {
	if len(opts) == 0 {
		return nil
	}
	doc := map[string]any{}
	for _, o := range opts {
		path := strings.TrimPrefix(o.Key, strip)
		if path == "" {
			return pl.errAt(o.KeyAt, "'%s' names no key: write '%s<key>' with a key of the pipeline file (docs/pipeline.md)", o.Key, strip)
		}
		parts := strings.Split(path, ".")
		var v any
		if ft := yamlFieldType(reflect.TypeOf(target), parts); ft != nil && (ft.Kind() == reflect.String || ft == reflect.TypeFor[spec.Duration]()) {
			// A text key takes the value as written (it may hold ": ").
			v = o.Value
		} else if err := yaml.Unmarshal([]byte(o.Value), &v); err != nil {
			return pl.errAt(o.ValueAt, "option '%s': the value is not YAML: %v", o.Key, err)
		} else if v == nil {
			v = o.Value
		}
		m := doc
		for i, p := range parts {
			if i == len(parts)-1 {
				if _, dup := m[p]; dup {
					return pl.errAt(o.KeyAt, "option '%s' sets a key another option sets too", o.Key)
				}
				m[p] = v
				break
			}
			next, ok := m[p].(map[string]any)
			if !ok {
				if _, set := m[p]; set {
					return pl.errAt(o.KeyAt, "option '%s' sets a key inside one another option sets whole", o.Key)
				}
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return pl.errAt(opts[0].KeyAt, "the 'tidemark.' options do not make a YAML document: %v", err)
	}
	fresh := reflect.New(reflect.TypeOf(target).Elem())
	if err := spec.CheckKeys(data, fresh.Interface()); err != nil {
		return pl.overlayErr(opts, strip, err)
	}
	if err := yaml.UnmarshalWithOptions(data, fresh.Interface(), yaml.DisallowUnknownField()); err != nil {
		return pl.overlayErr(opts, strip, fmt.Errorf("%s", yaml.FormatError(err, false, false)))
	}
	merge(reflect.ValueOf(target).Elem(), fresh.Elem())
	return nil
}

// yamlFieldType returns the type of the struct field at a path of YAML
// keys under t (nil when a part is not a struct field).
func yamlFieldType(t reflect.Type, parts []string) reflect.Type {
	for _, p := range parts {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		found := false
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == p {
				t, found = f.Type, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return t
}

// overlayErr places a decoding error at the option it concerns (the first
// whose key the message names, else the first).
func (pl *planner) overlayErr(opts []*parser.Option, strip string, err error) error {
	msg := err.Error()
	// The decoder's first line, without its [line:column] of the YAML the
	// options were written into.
	msg, _, _ = strings.Cut(msg, "\n")
	msg = strings.TrimSpace(regexp.MustCompile(`^\[\d+:\d+\]\s*`).ReplaceAllString(strings.TrimSpace(msg), ""))
	at := opts[0]
	for _, o := range opts {
		last := o.Key[strings.LastIndex(o.Key, ".")+1:]
		if strings.Contains(msg, last) {
			at = o
			break
		}
	}
	msg = strings.ReplaceAll(msg, "\n", " ")
	return pl.errAt(at.KeyAt, "option '%s': %s", at.Key, msg)
}

// merge copies the set fields of src into dst (same struct type): nested
// structs and pointers to structs merge, anything else set replaces.
func merge(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := 0; i < src.NumField(); i++ {
			if !dst.Field(i).CanSet() {
				continue
			}
			merge(dst.Field(i), src.Field(i))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if dst.IsNil() || src.Elem().Kind() != reflect.Struct {
			dst.Set(src)
			return
		}
		merge(dst.Elem(), src.Elem())
	default:
		if !src.IsZero() {
			dst.Set(src)
		}
	}
}
