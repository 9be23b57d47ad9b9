package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// firstLine returns the first line of err's message ("" for nil).
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}

// TestUnknownKeys: the first unknown key in the file is named, at its line
// and column, with the keys close to it; with several in one mapping, in an
// anchored mapping, or through a merge key, it is the first as written.
func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"a misspelt top-level key", pipe("windoe: {type: tumbling, size: 1m}"),
			`x.yaml: [6:1] unknown field "windoe" (did you mean window?)`},
		{"a nested key", pipe("emit: {mode: update, early: 1m}"),
			`x.yaml: [6:22] unknown field "early" in emit (did you mean early_every?)`},
		{"no key close to it", pipe("bogus: 1"), `x.yaml: [6:1] unknown field "bogus"`},
		{"in a list", pipe("sinks: [{type: jsonl, path: a.jsonl}, {type: jsonl, pth: b.jsonl}]"),
			`x.yaml: [6:53] unknown field "pth" in sinks[1] (did you mean path?)`},
		{"in a stage", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - name: a\n    windows: {type: tumbling}\n",
			`x.yaml: [6:5] unknown field "windows" in stages[0] (did you mean window?)`},
		// goccy/go-yaml alone names one of several unknown keys of a
		// mapping at random (it keeps them in a Go map).
		{"several in one mapping", pipe("source: {type: file, path: e.jsonl, zeta: 1, alpha: 2, mid: 3}"),
			`x.yaml: [2:37] unknown field "zeta" in source`},
		{"several in the file", pipe("event_time: {field: ts, tz: UTC}", "window: {type: tumbling, sise: 1m}"),
			`x.yaml: [3:25] unknown field "tz" in event_time`},
		{"in an anchored mapping used later", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: &et {field: ts, idle: 1m}\n" +
			"stages:\n  - {name: a, event_time: *et, window: {type: tumbling, size: 1m, bogus: 1}, aggregates: {n: count()}}\n",
			`x.yaml: [3:29] unknown field "idle" in event_time (did you mean idle_timeout or idle_advance?)`},
		{"after an alias", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: &et {field: ts}\n" +
			"stages:\n  - {name: a, event_time: *et, window: {type: tumbling, size: 1m, bogus: 1}, aggregates: {n: count()}}\n",
			`x.yaml: [5:67] unknown field "bogus" in stages[0].window`},
		{"in a merged mapping", "name: p\nx-base: &b {type: tumbling, sise: 1m}\n", `x.yaml: [2:1] unknown field "x-base"`},
		{"brought in by a merge key", "base: &b {type: tumbling, sise: 1m}\n" + pipe("window: {<<: *b, offset: 1m}"),
			`x.yaml: [1:1] unknown field "base"`},
		{"a merge key's own keys", pipe("source: &s {type: file, path: e.jsonl}", "window: {<<: {type: tumbling, sise: 1m}, offset: 0s}"),
			`x.yaml: [4:31] unknown field "sise" in window (did you mean size?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			if got := firstLine(err); got != tc.want {
				t.Errorf("Parse:\n%s\nerror:\n%v\nwant first line:\n%s", tc.src, err, tc.want)
			}
		})
	}
	// The message shows the line, with a caret under the key.
	_, err := Parse("x.yaml", []byte(pipe("windoe: 1")))
	if err == nil || !strings.Contains(err.Error(), ">  6 | windoe: 1\n       ^\n") {
		t.Errorf("error does not show the line and a caret:\n%v", err)
	}
}

// TestEnumValues: a value outside a key's fixed set is an error while
// decoding, with its line and column and the values close to it.
func TestEnumValues(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"window type", pipe("window: {type: tumbing, size: 1m}"),
			`x.yaml: [4:16] window.type: unknown window type "tumbing" (want tumbling, sliding, session, cumulate or global; did you mean tumbling?)`},
		{"window type far off", pipe("window: {type: hopping, size: 1m}"),
			`x.yaml: [4:16] window.type: unknown window type "hopping" (want tumbling, sliding, session, cumulate or global)`},
		{"window type of a stage", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - name: a\n    window:\n      type: Session\n",
			`x.yaml: [7:13] stages[0].window.type: unknown window type "Session" (want tumbling, sliding, session, cumulate or global; did you mean session?)`},
		{"source type", pipe("source: {type: pulsar}"),
			`x.yaml: [2:16] source.type: unknown source type "pulsar" (want file, kafka, postgres_cdc or nexmark)`},
		{"event_time format", pipe("event_time: {field: ts, format: epoch_sec}"),
			`x.yaml: [3:33] event_time.format: unknown format "epoch_sec" (want rfc3339, epoch_ms, epoch_s or layout; did you mean epoch_s?)`},
		{"event_time from", pipe("event_time: {field: ts, from: header}"),
			`x.yaml: [3:31] event_time.from: unknown event-time origin "header" (want payload or kafka_timestamp)`},
		{"emit mode", pipe("emit: {mode: updates}"),
			`x.yaml: [6:14] emit.mode: unknown mode "updates" (want final, update or retract; did you mean update?)`},
		{"late policy", pipe("late: {policy: side-output}"),
			`x.yaml: [6:16] late.policy: unknown policy "side-output" (want drop or side_output; did you mean side_output?)`},
		{"through an alias", "name: &n p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nwindow: {type: *n, size: 1m}\n",
			`x.yaml: [1:10] window.type: unknown window type "p" (want tumbling, sliding, session, cumulate or global)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			if got := firstLine(err); got != tc.want {
				t.Errorf("Parse:\n%s\nerror:\n%v\nwant first line:\n%s", tc.src, err, tc.want)
			}
		})
	}
	// Every listed value decodes; an empty one is "absent" (Validate
	// names the key as required).
	for _, w := range []string{"tumbling", "sliding", "session"} {
		_, err := Parse("x.yaml", []byte(pipe("window: {type: "+w+"}")))
		if err == nil || strings.Contains(err.Error(), "unknown window type") {
			t.Errorf("window.type %s: %v, want only Validate's size/gap errors", w, err)
		}
	}
	_, err := Parse("x.yaml", []byte(pipe("window: {type: }")))
	if want := "x.yaml: window.type: required (tumbling, sliding, session, cumulate or global)"; firstLine(err) != want {
		t.Errorf("window.type null: %v, want %s", err, want)
	}
}

// TestValidateEnumsGoOnly: a pipeline built in Go has no YAML position;
// Validate refuses the same values.
func TestValidateEnumsGoOnly(t *testing.T) {
	p := mustParse(t, pipe())
	p.Source.Type = "pulsar"
	p.EventTime.Format = "iso"
	p.Window.Type = "hopping"
	p.Emit.Mode = "upsert"
	p.Late.Policy = "keep"
	want := strings.Join([]string{
		`source.type: unknown source type "pulsar" (want file, kafka, postgres_cdc or nexmark)`,
		`event_time.format: unknown format "iso" (want rfc3339, epoch_ms, epoch_s or layout)`,
		`window.type: unknown window type "hopping" (want tumbling, sliding, session, cumulate or global)`,
		`emit.mode: unknown mode "upsert" (want final, update or retract)`,
		`late.policy: unknown policy "keep" (want drop or side_output)`,
	}, "\n")
	if err := p.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate():\n%v\nwant:\n%s", err, want)
	}
}

// TestExplicitZeroRefused: checkpoint.interval: 0s used to become the
// default 10s silently; an explicit zero of a key whose zero means
// "absent" is refused, an absent or empty key takes the default.
func TestExplicitZeroRefused(t *testing.T) {
	kafka := `source: {type: kafka, brokers: ["k:9092"], topics: [t], %s}`
	for _, tc := range []struct {
		name, src, want string
	}{
		{"checkpoint.interval 0s", pipe("checkpoint: {dir: ck, interval: 0s}"),
			`x.yaml: [6:33] checkpoint.interval: must be at least 1ms, got 0s (leave the key out for the default, 10s)`},
		{"checkpoint.interval 0ms", pipe("checkpoint:\n  dir: ck\n  interval: \"0ms\""),
			`x.yaml: [8:13] checkpoint.interval: must be at least 1ms, got 0ms (leave the key out for the default, 10s)`},
		{"checkpoint.interval 0h0m", pipe("checkpoint: {dir: ck, interval: 0h0m}"),
			`x.yaml: [6:33] checkpoint.interval: must be at least 1ms, got 0h0m (leave the key out for the default, 10s)`},
		{"checkpoint.retain 0", pipe("checkpoint: {dir: ck, retain: 0}"),
			`x.yaml: [6:31] checkpoint.retain: must be at least 1, got 0 (leave the key out for the default, 3)`},
		{"source.poll_timeout 0s", pipe(strings.Replace(kafka, "%s", "poll_timeout: 0s", 1)),
			`x.yaml: [2:71] source.poll_timeout: must be at least 1ms, got 0s (leave the key out for the default, 500ms)`},
		{"source.discovery_interval 0s", pipe(strings.Replace(kafka, "%s", "discovery_interval: 0s", 1)),
			`x.yaml: [2:77] source.discovery_interval: must be at least 1ms, got 0s (leave the key out for the default, 10s)`},
		// Below 1 ms but not zero: Validate's error (no default involved).
		{"checkpoint.interval 500us", pipe("checkpoint: {dir: ck, interval: 500us}"),
			`x.yaml: checkpoint.interval: must be at least 1ms`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			if got := firstLine(err); got != tc.want {
				t.Errorf("Parse:\n%s\nerror:\n%v\nwant first line:\n%s", tc.src, err, tc.want)
			}
		})
	}
	for _, src := range []string{pipe("checkpoint: {dir: ck}"), pipe("checkpoint: {dir: ck, interval: , retain: ~}")} {
		p := mustParse(t, src)
		if p.Checkpoint.Interval != Duration(10*time.Second) || p.Checkpoint.Retain != 3 {
			t.Errorf("%s: checkpoint = %+v, want the defaults 10s and 3", src, *p.Checkpoint)
		}
	}
	if p := mustParse(t, pipe("checkpoint: {dir: ck, interval: 1ms, retain: 1}")); p.Checkpoint.Interval != Duration(time.Millisecond) || p.Checkpoint.Retain != 1 {
		t.Errorf("checkpoint = %+v, want 1ms and 1", *p.Checkpoint)
	}
}

// TestCheckKeysLeavesTheRestToTheDecoder: a document CheckKeys cannot
// judge (a syntax error, a value of the wrong shape, an alias without an
// anchor) is the decoder's to report.
func TestCheckKeysLeavesTheRestToTheDecoder(t *testing.T) {
	for _, src := range []string{
		"name: [\n",
		pipe("key: Country"),
		pipe("window: *nowhere"),
		"- 1\n",
		"",
	} {
		if err := CheckKeys([]byte(src), new(Pipeline)); err != nil {
			t.Errorf("CheckKeys(%q) = %v, want nil", src, err)
		}
	}
}

// FuzzCheckKeys checks CheckKeys against the decoder: it never panics, and
// a key it calls unknown is one the decoder refuses too (a false "unknown
// field" would refuse a valid pipeline). Documents with a key that is not a
// string are left out: goccy/go-yaml v1.19.2 stops checking a mapping's
// keys for unknown ones when one of them is a number (`0: x`), where
// CheckKeys refuses it.
//
//	go test -fuzz=FuzzCheckKeys -fuzztime=60000x ./spec
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{
		pipe(),
		twoStages,
		pipe("emit: {mode: update, early: 1m}"),
		"base: &b {type: tumbling, size: 1m}\n" + pipe("window: {<<: *b, offset: 1m}"),
		"name: &n p\nsource: {type: file, path: e.jsonl}\nevent_time: &e {field: ts, idle: 1m}\nstages: [{name: a, event_time: *e, window: {type: *n}}]\n",
		pipe("window: {<<: [{type: tumbling}, {size: 1m}], offset: 0s}"),
		pipe("sinks: [&s {type: jsonl, path: a}, *s, {<<: *s, pth: b}]"),
		pipe("checkpoint: {dir: ck, interval: 0s, retain: 0}"),
		"? [a]\n: b\n",
		"a: &a [*a]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckKeys(data, new(Pipeline))
		if err == nil || !strings.Contains(err.Error(), "unknown field") {
			return
		}
		if hasNonStringKey(data) {
			return
		}
		var p Pipeline
		derr := func() (derr error) {
			defer func() {
				if recover() != nil {
					derr = errPanicked
				}
			}()
			return yaml.UnmarshalWithOptions(data, &p, yaml.DisallowUnknownField())
		}()
		if derr == nil {
			t.Fatalf("CheckKeys: %v\nbut the decoder accepts:\n%s", err, data)
		}
	})
}

var errPanicked = errors.New("the decoder panicked")

// hasNonStringKey reports whether a mapping of data's first document has a
// key that is not a plain string.
func hasNonStringKey(data []byte) bool {
	f, err := parser.ParseBytes(data, 0)
	if err != nil || len(f.Docs) == 0 {
		return false
	}
	found := false
	ast.Walk(visitorFunc(func(n ast.Node) {
		if mv, ok := n.(*ast.MappingValueNode); ok {
			if _, str := mv.Key.(*ast.StringNode); !str && !mv.Key.IsMergeKey() {
				found = true
			}
		}
	}), f.Docs[0])
	return found
}

type visitorFunc func(ast.Node)

func (v visitorFunc) Visit(n ast.Node) ast.Visitor {
	v(n)
	return v
}

// TestCheckKeysAliasBomb: merge keys that each bring in an anchored
// mapping twice double the mappings at every level (2^39 here); each
// mapping is walked once, so this takes microseconds, not forever.
func TestCheckKeysAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: p\nx0: &a0 {type: tumbling, bogus: 1}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "x%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
	}
	b.WriteString("window: {<<: *a39}\n")
	done := make(chan error, 1)
	go func() { done <- CheckKeys([]byte(b.String()), new(Pipeline)) }()
	select {
	case err := <-done:
		if want := `[2:1] unknown field "x0"`; firstLine(err) != want {
			t.Errorf("CheckKeys = %v, want %s", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CheckKeys did not return within 10s")
	}
}
