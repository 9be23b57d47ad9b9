package spec

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPipelineDocLinksEveryConnectorPage: the introduction of
// docs/pipeline.md links every page of docs/connectors (it lacked postgres
// and kafka).
func TestPipelineDocLinksEveryConnectorPage(t *testing.T) {
	doc := string(readPipelineDoc(t))
	intro, _, _ := strings.Cut(doc, "\nContents:")
	pages, err := filepath.Glob("../docs/connectors/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no connector pages: %v", err)
	}
	for _, p := range pages {
		link := "(connectors/" + filepath.Base(p) + ")"
		if !strings.Contains(intro, link) {
			t.Errorf("the introduction of %s does not link %s", pipelineDoc, link)
		}
	}
}

// TestSideOutputTypesDocumented: each side output's `*.sink.type` section
// names every type Validate accepts there (late.sink.type listed only
// jsonl and stdout).
func TestSideOutputTypesDocumented(t *testing.T) {
	// The types are those of Validate's message for a missing type.
	p := mustParse(t, pipe("late: {sink: {type: jsonl, path: l.jsonl}}"))
	p.Late.Sink.Type = ""
	m := regexp.MustCompile(`late\.sink\.type: required \(([^)]*)\)`).FindStringSubmatch(p.Validate().Error())
	if m == nil {
		t.Fatalf("no required-type message: %v", p.Validate())
	}
	types := strings.FieldsFunc(strings.ReplaceAll(m[1], " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
	if len(types) < 3 {
		t.Fatalf("types %q from %q", types, m[1])
	}
	doc := string(readPipelineDoc(t))
	for _, key := range []string{"late.sink.type", "quarantine.sink.type", "conflicts.sink.type"} {
		_, sec, ok := strings.Cut(doc, "### `"+key+"`\n")
		if !ok {
			t.Errorf("%s has no section %s", pipelineDoc, key)
			continue
		}
		sec, _, _ = strings.Cut(sec, "\n\n") // its first paragraph
		for _, ty := range types {
			if !strings.Contains(sec, "`"+ty+"`") {
				t.Errorf("%s: %s does not name the type %s: %q", pipelineDoc, key, ty, sec)
			}
		}
	}
}
