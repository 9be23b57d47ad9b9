package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// perturbInputs writes the test inputs into a new directory.
func perturbInputs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		// Out of event-time order on purpose (id 3), one record without a
		// parsable event time (id 4), a blank line.
		"orders.jsonl": `{"id":1,"ts":"2026-09-01T10:00:00Z","device":"a","amount":19.99}

{"id":2,"ts":"2026-09-01T10:00:05Z","device":"b","amount":5}
{"id":3,"ts":"2026-09-01T10:00:03Z","device":"a","amount":"x"}
{"id":4,"ts":"bad","device":"b"}
{"id":5,"ts":"2026-09-01T10:00:09Z","device":"c","amount":1e2}
`,
		"retail.csv": "\xEF\xBB\xBFInvoiceNo,InvoiceDate,Quantity,UnitPrice,CustomerID\n" +
			"536365,2010-12-01 08:26:00,6,2.55,17850\n" +
			"536366,2010-12-01 08:28:00,2,\"1,85\",\n" +
			"536367,2010-12-01 08:34:00,32,1.69,13047\n",
		"broken.jsonl": "{\"id\":1,\"ts\":\"2026-09-01T10:00:00Z\"}\n[1,2]\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPerturbJSONL(t *testing.T) {
	dir := perturbInputs(t)
	out := filepath.Join(dir, "out", "perturbed.jsonl")
	args := []string{"perturb", filepath.Join(dir, "orders.jsonl"), "--out", out, "--event-time", "ts",
		"--seed", "3", "--delay", "5s", "--max-delay", "20s", "--redeliver-fraction", "0.5",
		"--conflict-fraction", "0.5", "--conflict-field", "amount", "--partitions", "2",
		"--partition-by", "device", "--zone", "Asia/Seoul"}
	code, stdout, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q", stdout)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: sorted by arrival; every delay within 20s; id 4 (no event
	// time) at the horizon when it was read (10:00:05); id 1 and id 2
	// redelivered byte-identical but for ingested_at; conflicts change
	// amount 19.99 → 20.99 and "x" → "x-x"; devices a and c on p0, b on
	// p1 (FNV-1a mod 2).
	want := `{"id":3,"ts":"2026-09-01T10:00:03Z","device":"a","amount":"x","ingested_at":"2026-09-01T19:00:03.196+09:00","partition":"p0"}
{"id":1,"ts":"2026-09-01T10:00:00Z","device":"a","amount":19.99,"ingested_at":"2026-09-01T19:00:03.693+09:00","partition":"p0"}
{"id":4,"ts":"bad","device":"b","ingested_at":"2026-09-01T19:00:05.000+09:00","partition":"p1"}
{"id":2,"ts":"2026-09-01T10:00:05Z","device":"b","amount":5,"ingested_at":"2026-09-01T19:00:05.193+09:00","partition":"p1"}
{"id":2,"ts":"2026-09-01T10:00:05Z","device":"b","amount":5,"ingested_at":"2026-09-01T19:00:06.396+09:00","partition":"p1"}
{"id":5,"ts":"2026-09-01T10:00:09Z","device":"c","amount":1e2,"ingested_at":"2026-09-01T19:00:09.743+09:00","partition":"p0"}
{"id":1,"ts":"2026-09-01T10:00:00Z","device":"a","amount":19.99,"ingested_at":"2026-09-01T19:00:10.577+09:00","partition":"p0"}
{"id":3,"ts":"2026-09-01T10:00:03Z","device":"a","amount":"x-x","ingested_at":"2026-09-01T19:00:11.794+09:00","partition":"p0"}
{"id":3,"ts":"2026-09-01T10:00:03Z","device":"a","amount":"x","ingested_at":"2026-09-01T19:00:12.704+09:00","partition":"p0"}
{"id":5,"ts":"2026-09-01T10:00:09Z","device":"c","amount":1e2,"ingested_at":"2026-09-01T19:00:15.102+09:00","partition":"p0"}
{"id":1,"ts":"2026-09-01T10:00:00Z","device":"a","amount":20.99,"ingested_at":"2026-09-01T19:00:17.723+09:00","partition":"p0"}
`
	if string(got) != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range []string{
		"records in                        5",
		"without event time                1",
		"deliveries out                   11",
		"redeliveries                      4",
		"conflicts                         2",
		"max delay seen              17.723s",
		"held at most                     11  (input disorder 2s)",
	} {
		if !strings.Contains(stderr, line) {
			t.Errorf("summary lacks %q:\n%s", line, stderr)
		}
	}
	// Same flags, same bytes; another seed, other bytes.
	if code, _, stderr := run(t, args...); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	if again, _ := os.ReadFile(out); string(again) != want {
		t.Error("a second run with the same seed wrote other bytes")
	}
	args[7] = "4"
	run(t, args...)
	if other, _ := os.ReadFile(out); string(other) == want {
		t.Error("seeds 3 and 4 wrote the same bytes")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "out", ".*tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestPerturbCSV(t *testing.T) {
	dir := perturbInputs(t)
	out := filepath.Join(dir, "retail.jsonl")
	code, _, stderr := run(t, "perturb", filepath.Join(dir, "retail.csv"), "-o", out,
		"--event-time", "InvoiceDate", "--layout", "2006-01-02 15:04:05", "--timezone", "Europe/London",
		"--delay", "2m", "--conflict-fraction", "1", "--conflict-field", "UnitPrice",
		"--conflict-change", "number", "--partition-field", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(out)
	// CSV rows as objects of strings, empty text as null; no partition
	// field; UnitPrice +1 in the conflicting copies, except "1,85",
	// which is not a number (skipped).
	want := `{"InvoiceNo":"536365","InvoiceDate":"2010-12-01 08:26:00","Quantity":"6","UnitPrice":"2.55","CustomerID":"17850","ingested_at":"2010-12-01T08:27:52.021Z"}
{"InvoiceNo":"536365","InvoiceDate":"2010-12-01 08:26:00","Quantity":"6","UnitPrice":"3.55","CustomerID":"17850","ingested_at":"2010-12-01T08:27:56.916Z"}
{"InvoiceNo":"536366","InvoiceDate":"2010-12-01 08:28:00","Quantity":"2","UnitPrice":"1,85","CustomerID":null,"ingested_at":"2010-12-01T08:29:45.582Z"}
{"InvoiceNo":"536367","InvoiceDate":"2010-12-01 08:34:00","Quantity":"32","UnitPrice":"1.69","CustomerID":"13047","ingested_at":"2010-12-01T08:34:52.790Z"}
{"InvoiceNo":"536367","InvoiceDate":"2010-12-01 08:34:00","Quantity":"32","UnitPrice":"2.69","CustomerID":"13047","ingested_at":"2010-12-01T08:36:06.793Z"}
`
	if string(got) != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(stderr, "conflicts                         2  (1 more chosen without a changeable UnitPrice)") {
		t.Errorf("summary:\n%s", stderr)
	}
}

// TestPerturbFeedsPipeline runs a pipeline over perturb's output with the
// source keys the docs show.
func TestPerturbFeedsPipeline(t *testing.T) {
	dir := perturbInputs(t)
	out := filepath.Join(dir, "perturbed.jsonl")
	if code, _, stderr := run(t, "perturb", filepath.Join(dir, "orders.jsonl"), "--out", out, "--event-time", "ts",
		"--seed", "3", "--delay", "5s", "--redeliver-fraction", "0.5", "--partitions", "2", "--partition-by", "device"); code != 0 {
		t.Fatalf("perturb: exit %d: %s", code, stderr)
	}
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`
name: demo
source: {type: file, path: `+out+`, arrival_time_field: ingested_at, partition_field: partition}
event_time: {field: ts, idle_timeout: 1m}
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
`), 0o644)
	code, stdout, stderr := run(t, "run", p)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"events read                     9", "source partitions               2", "quarantined                     1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

func TestPerturbUsageErrors(t *testing.T) {
	dir := perturbInputs(t)
	in := filepath.Join(dir, "orders.jsonl")
	out := filepath.Join(dir, "o.jsonl")
	base := []string{"perturb", in, "--out", out, "--event-time", "ts"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perturb"}, "requires at least 1 arg"},
		{[]string{"perturb", in, "--event-time", "ts"}, "--out: required"},
		{[]string{"perturb", in, "--out", out}, "--event-time: required"},
		{append(base, "--bogus"), "unknown flag: --bogus"},
		{append(base, "--delay", "soon"), `invalid argument "soon"`},
		{append(base, "--distribution", "normal"), `--distribution: "normal" is neither uniform nor exponential`},
		{append(base, "--straggler-fraction", "2"), "--straggler-fraction: must be between 0 and 1"},
		{append(base, "--delay", "1m", "--max-delay", "1s"), "--max-delay: 1s is less than delay 1m0s"},
		{append(base, "--conflict-fraction", "0.1"), "--conflict-field: required with conflict_fraction"},
		{append(base, "--conflict-fraction", "0.1", "--conflict-field", "x", "--conflict-change", "flip"), `--conflict-change: "flip" is not json-type, number or string`},
		{append(base, "--partitions", "0"), "--partitions: must be between 1 and 4096"},
		{append(base, "--partitions", "5000"), "--partitions: must be between 1 and 4096"},
		{append(base, "--offline-fraction", "0.5"), "--offline-fraction: needs --partition-by"},
		{append(base, "--layout", "2006-01-02"), "--timezone: required with --layout"},
		{append(base, "--layout", "2006-01-02", "--timezone", "Mars/Base"), "--timezone: unknown time zone Mars/Base"},
		{append(base, "--event-time-format", "julian"), `--event-time-format: unknown format "julian"`},
		{append(base, "--zone", "Mars/Base"), "--zone: unknown time zone Mars/Base"},
		{append(base, "--format", "xml"), `--format: "xml" is neither jsonl nor csv`},
		{append(base, "--csv-delimiter", ";;"), `--csv-delimiter: ";;" is not one usable character`},
		{append(base, "--partition-field", "ingested_at"), `--partition-field: "ingested_at" is also the arrival field`},
		{append(base, "--arrival-field", "ts"), `--arrival-field "ts" is also --event-time: the arrival time would overwrite the event time`},
		{[]string{"perturb", filepath.Join(dir, "data.txt"), "--out", out, "--event-time", "ts"}, `cannot tell the format from the extension ".txt"`},
		{[]string{"perturb", in, "--out", in, "--event-time", "ts"}, "is also an input"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args[1:], code, stderr, tc.want)
		}
	}
	if b, _ := os.ReadFile(in); !strings.HasPrefix(string(b), `{"id":1`) {
		t.Fatal("the input was overwritten")
	}
}

func TestPerturbInputErrors(t *testing.T) {
	dir := perturbInputs(t)
	out := filepath.Join(dir, "o.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "broken.jsonl"), "--event-time", "ts"}, "broken.jsonl:2: not a JSON object"},
		{[]string{filepath.Join(dir, "missing.jsonl"), "--event-time", "ts"}, "no such file"},
		{[]string{filepath.Join(dir, "retail.csv"), "--event-time", "ts"}, `retail.csv: no column "ts" (the event-time field) in CSV header`},
	} {
		code, _, stderr := run(t, append(append([]string{"perturb"}, tc.args...), "--out", out)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: output written despite the error", tc.args)
		}
	}
}

// TestPerturbToFIFO: an --out that is not a regular file (a named pipe
// here; /dev/null or /dev/stdout in use) is written in place, never
// replaced by a regular file.
func TestPerturbToFIFO(t *testing.T) {
	dir := perturbInputs(t)
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the writer opens and closes it
		got <- b
	}()
	code, _, stderr := run(t, "perturb", filepath.Join(dir, "orders.jsonl"), "--out", fifo, "--event-time", "ts", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b := <-got; bytes.Count(b, []byte("\n")) != 5 {
		t.Errorf("the pipe carried %q, want the 5 input events", b)
	}
	st, err := os.Lstat(fifo)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("--out replaced the named pipe: %v %v", st.Mode(), err)
	}
}
