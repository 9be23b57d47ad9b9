package spec

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pipelineDoc is the user-facing reference of the pipeline keys.
const pipelineDoc = "../docs/pipeline.md"

// The key convention of docs/pipeline.md, which pipelineKeys produces:
//
//   - a nested mapping adds ".name": source.replay.seed;
//   - a list of mappings adds "[]" before its keys: sinks[].type,
//     stages[].name (the list itself is plain: sinks, stages);
//   - pointers are transparent: source.replay.seed, late.sink.path;
//   - NamedExprs, FieldTypes, Duration, string lists and scalars are leaves
//     (fields, aggregates, source.schema, key, window.size);
//   - a key of a stage in stages[] (or of an input in inputs[]) that the
//     top level has too, with the same type, is required as itself
//     (stages[].window, inputs[].source) but not with its sub-keys: the
//     page documents those once, at the top level (window.size), and says
//     that a stage takes the same keys. A key only stages have is expanded
//     in full.
func pipelineKeys() []string {
	top := reflect.TypeFor[Pipeline]()
	shared := map[string]reflect.Type{}
	for f := range yamlFields(top) {
		shared[yamlKey(f)] = deref(f.Type)
	}
	var keys []string
	var walk func(prefix string, t reflect.Type, inStage bool)
	walk = func(prefix string, t reflect.Type, inStage bool) {
		for f := range yamlFields(t) {
			name := yamlKey(f)
			key := prefix + name
			keys = append(keys, key)
			ft := deref(f.Type)
			if isLeaf(ft) {
				continue
			}
			if inStage && shared[name] == ft {
				continue // documented at the top level
			}
			switch ft.Kind() {
			case reflect.Struct:
				walk(key+".", ft, inStage)
			case reflect.Slice:
				if el := deref(ft.Elem()); el.Kind() == reflect.Struct && !isLeaf(el) {
					walk(key+"[].", el, inStage || ft.Elem() == reflect.TypeFor[Stage]() || ft.Elem() == reflect.TypeFor[Input]())
				}
			}
		}
	}
	walk("", top, false)
	return keys
}

// yamlFields yields the exported fields of struct t that YAML decodes.
func yamlFields(t reflect.Type) func(func(reflect.StructField) bool) {
	return func(yield func(reflect.StructField) bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || yamlKey(f) == "-" {
				continue
			}
			if !yield(f) {
				return
			}
		}
	}
}

// yamlKey is the field's YAML key: its tag's name, else the lower-cased
// field name (goccy/go-yaml's default).
func yamlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// isLeaf reports whether values of t are documented as one key: scalars,
// lists of scalars, durations and the ordered maps.
func isLeaf(t reflect.Type) bool {
	switch t {
	case reflect.TypeFor[NamedExprs](), reflect.TypeFor[FieldTypes](), reflect.TypeFor[Duration]():
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Slice:
		return deref(t.Elem()).Kind() != reflect.Struct
	}
	return true
}

func readPipelineDoc(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile(pipelineDoc)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestPipelineDocCoversEveryKey fails when a YAML key of the spec structs
// is not named, in backquotes, in docs/pipeline.md: add a field, document
// it there.
func TestPipelineDocCoversEveryKey(t *testing.T) {
	doc := readPipelineDoc(t)
	keys := pipelineKeys()
	// The walk itself: a few keys of each shape must be among those found.
	for _, k := range []string{"name", "source.replay.seed", "source.schema", "source.csv.header",
		"late.sink.path", "sinks[].table", "stages[].name", "stages[].window", "stages[].event_time"} {
		if !slices.Contains(keys, k) {
			t.Errorf("pipelineKeys() lacks %q; got %q", k, keys)
		}
	}
	for _, k := range []string{"stages[].window.size", "fields.name", "source.schema.name"} {
		if slices.Contains(keys, k) {
			t.Errorf("pipelineKeys() has %q, which the convention leaves out", k)
		}
	}
	for _, k := range keys {
		if !bytes.Contains(doc, []byte("`"+k+"`")) {
			t.Errorf("%s does not document the key `%s`", pipelineDoc, k)
		}
	}
}

// docKeyRef matches a backquoted dotted key such as `source.replay.seed`
// or `stages[].window`.
var docKeyRef = regexp.MustCompile("`([a-z_]+(?:\\[\\])?(?:\\.[a-z_]+(?:\\[\\])?)+)`")

// TestPipelineDocNamesNoUnknownKey fails when docs/pipeline.md names a
// dotted key, under a top-level key of the spec, that does not exist (a
// renamed or removed field).
func TestPipelineDocNamesNoUnknownKey(t *testing.T) {
	doc := readPipelineDoc(t)
	known := map[string]bool{}
	roots := map[string]bool{}
	for _, k := range pipelineKeys() {
		known[k] = true
		root, _, _ := strings.Cut(k, ".")
		roots[strings.TrimSuffix(root, "[]")] = true
	}
	for _, m := range docKeyRef.FindAllSubmatch(doc, -1) {
		k := string(m[1])
		root, _, _ := strings.Cut(k, ".")
		if !roots[strings.TrimSuffix(root, "[]")] || known[k] {
			continue
		}
		// stages[].window.size is window.size written inside a stage.
		if rest, ok := strings.CutPrefix(k, "stages[]."); ok && known[rest] {
			continue
		}
		t.Errorf("%s names `%s`, which is not a pipeline key", pipelineDoc, k)
	}
}

// yamlBlock matches a fenced YAML code block.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestPipelineDocExamplesParse parses every complete pipeline (a YAML
// block with a top-level name:) in docs/pipeline.md.
func TestPipelineDocExamplesParse(t *testing.T) {
	t.Setenv("TIDEMARK_DATA", "")
	doc := readPipelineDoc(t)
	n := 0
	for _, m := range yamlBlock.FindAllSubmatch(doc, -1) {
		if !regexp.MustCompile(`(?m)^name:`).Match(m[1]) {
			continue
		}
		n++
		if _, err := Parse("example", m[1]); err != nil {
			t.Errorf("example %d does not parse: %v\n%s", n, err, m[1])
		}
	}
	if n == 0 {
		t.Fatalf("%s has no complete pipeline example", pipelineDoc)
	}
}
