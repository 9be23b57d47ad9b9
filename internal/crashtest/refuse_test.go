package crashtest

import (
	le "encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/checkpoint"
)

const refuseYAML = `name: refuse
source: {type: file, path: {{DIR}}/events.jsonl, schema: {amount: decimal}}
event_time: {field: paid_at}
key: [store_id]
window: {type: tumbling, size: 1m}
aggregates: {revenue: sum(amount)}
sinks: [{type: jsonl, path: {{DIR}}/out.jsonl}]
checkpoint: {dir: {{DIR}}/ck, interval: 1ms, retain: 2}
`

// TestRestoreRefusals: a restore under a changed pipeline is refused,
// naming the changed keys as the pipeline file spells them, unless only
// checkpoint.interval or checkpoint.retain changed; a checkpoint of
// another format version is refused with a clear error, not read.
func TestRestoreRefusals(t *testing.T) {
	dir := t.TempDir()
	writeEvents(t, filepath.Join(dir, "events.jsonl"), 200, 3)
	yamlPath := filepath.Join(dir, "pipeline.yaml")
	write := func(y string) {
		if err := os.WriteFile(yamlPath, []byte(strings.ReplaceAll(y, "{{DIR}}", dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func() (string, error) {
		out, err := exec.Command(binary, "run", "--quiet", yamlPath).CombinedOutput()
		return string(out), err
	}
	write(refuseYAML)
	if out, err := run(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}

	write(strings.Replace(refuseYAML, "size: 1m", "size: 2m", 1))
	out, err := run()
	if err == nil || !strings.Contains(out, `was taken under another pipeline spec: window.size ("1m0s" → "2m0s") changed`) {
		t.Errorf("changed window size: err %v, output\n%s", err, out)
	}
	write(strings.Replace(refuseYAML, "sum(amount)", "sum(amount), orders: count()", 1))
	out, err = run()
	if err == nil || !strings.Contains(out, "aggregates[1].") {
		t.Errorf("added aggregate: err %v, output\n%s", err, out)
	}

	// Compatible: the interval and the number kept.
	write(strings.Replace(refuseYAML, "interval: 1ms, retain: 2", "interval: 5s, retain: 4", 1))
	if out, err := run(); err != nil {
		t.Errorf("changed interval and retain: %v\n%s", err, out)
	}

	// Every checkpoint rewritten as a file of format version 99, as a
	// newer build would write it (checksum recomputed).
	ids, _ := checkpoint.List(filepath.Join(dir, "ck"))
	if len(ids) == 0 {
		t.Fatal("no checkpoints")
	}
	for _, id := range ids {
		p := filepath.Join(dir, "ck", checkpoint.Name(id))
		b, _ := os.ReadFile(p)
		le.LittleEndian.PutUint16(b[8:], 99)
		le.LittleEndian.PutUint64(b[len(b)-8:], xxhash.Sum64(b[:len(b)-8]))
		os.WriteFile(p, b, 0o644)
	}
	out, err = run()
	if err == nil || !strings.Contains(out, fmt.Sprintf("format version 99, this build reads %d", checkpoint.FormatVersion)) {
		t.Errorf("format version 99: err %v, output\n%s", err, out)
	}
}
