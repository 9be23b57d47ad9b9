package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/metrics"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/slo"
	"github.com/tidemark/tidemark/spec"
)

// run runs a small two-partition pipeline to the end, feeding a page, and
// returns the page.
func run(t *testing.T) *Page {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range 120 {
		p := i % 2
		ts := base.Add(time.Duration(i) * 5 * time.Second)
		at := ts.Add(time.Duration(2+p*20) * time.Second) // partition 1 arrives 20 s later
		if i == 101 {
			ts = base // very late: too late for its window
		}
		lines = append(lines, fmt.Sprintf(`{"at":%q,"ts":%q,"p":"p%d","store":"s%d"}`, at.Format(time.RFC3339), ts.Format(time.RFC3339), p, i%3))
	}
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	p, err := spec.Parse("s.yaml", []byte(fmt.Sprintf(`name: shop
source: {type: file, path: %s, partition_field: p, arrival_time_field: at}
event_time: {field: ts, out_of_orderness: 10s, idle_timeout: 1m}
key: [store]
window: {type: tumbling, size: 1m}
emit: {mode: final}
aggregates: {n: count()}
slo: {event_time_lag_p95: 1m, late_ratio: 0.5%%}
`, in)))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := slo.New(p.SLO)
	pg := New(p, ev)
	if _, err := engine.Run(context.Background(), pl, engine.Options{BatchSize: 4, LiveEvery: time.Nanosecond, Live: func(l *engine.Live) {
		ev.Update(l)
		pg.Update(l)
	}}); err != nil {
		t.Fatal(err)
	}
	return pg
}

// TestStatusDocument checks /status against values worked out by hand.
func TestStatusDocument(t *testing.T) {
	pg := run(t)
	srv := httptest.NewServer(pg.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d Doc
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Pipeline != "shop" || !d.Ended || d.Watermark != "+inf" || d.Records.Read != 120 || d.Records.TooLate != 1 || d.Records.OnTime != 119 {
		t.Errorf("document: %+v", d)
	}
	if len(d.Partitions) != 2 || d.Partitions[0].Name != "p0" || d.Partitions[0].Records != 60 || d.Partitions[1].Records != 60 || d.Partitions[0].ConsumerLag != nil {
		t.Errorf("partitions: %+v", d.Partitions)
	}
	if d.LateRatio == nil || *d.LateRatio != 1.0/120 {
		t.Errorf("late ratio %v, want 1/120", d.LateRatio)
	}
	// 1/120 = 0.83% > 0.5%: missed.
	if len(d.SLO) != 2 || d.SLO[1].Name != "late_ratio" || d.SLO[1].Met {
		t.Errorf("slo: %+v", d.SLO)
	}
	for _, want := range []string{"files " + "", "no deduplication", "event time is ts; the watermark waits 10s", "a partition silent for 1m0s stops holding it back", "later events are dropped and counted"} {
		all := d.Contracts.Source + d.Contracts.Time + d.Contracts.State + d.Contracts.Sink
		if !strings.Contains(all, want) {
			t.Errorf("contracts lack %q: %+v", want, d.Contracts)
		}
	}
}

// chromium returns the headless browser's path, skipping the test when it
// is absent (failing under CI, whose script installs it).
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("TIDEMARK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (install Debian's chromium, or set TIDEMARK_CHROMIUM)")
	}
	t.Skip("no Chromium found (install Debian's chromium, or set TIDEMARK_CHROMIUM)")
	return ""
}

// TestStatusPageInChromium loads the HTML page in headless Chromium and
// checks that the numbers it shows and its chart agree with /status; it
// saves a screenshot in the test's temporary directory.
func TestStatusPageInChromium(t *testing.T) {
	exe := chromium(t)
	pg := run(t)
	srv := httptest.NewServer(pg.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var d Doc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(900, 1400),
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("chart")),
	); err != nil {
		t.Fatal(err)
	}
	text := func(id string) string {
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("#%s: %v", id, err)
		}
		return v
	}
	eval := func(js string) int {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	watermark, read, tooLate, lateRatio := text("watermark"), text("records-read"), text("records-too-late"), text("late-ratio")
	series := eval(`document.querySelectorAll("#chart polyline.partition, #chart polyline.pipeline").length`)
	partitionRows := eval(`document.querySelectorAll("#partitions tr.partition").length`)
	missed := eval(`document.querySelectorAll("#slo li.missed").length`)
	lastP0, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#chart polyline[data-name="p0"]').getAttribute("data-last")`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(t.TempDir(), "status.png")
	if d := os.Getenv("TIDEMARK_SCREENSHOT_DIR"); d != "" {
		shotPath = filepath.Join(d, "status.png")
	}
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shotPath, len(shot))
	if watermark != d.Watermark || read != strconv.FormatInt(d.Records.Read, 10) || tooLate != strconv.FormatInt(d.Records.TooLate, 10) {
		t.Errorf("page shows watermark %q, read %q, too late %q; /status has %q, %d, %d", watermark, read, tooLate, d.Watermark, d.Records.Read, d.Records.TooLate)
	}
	if lateRatio != fmt.Sprintf("%.4f%%", *d.LateRatio*100) {
		t.Errorf("late ratio on the page %q, /status %v", lateRatio, *d.LateRatio)
	}
	// One line per partition and one for the pipeline watermark.
	if series != len(d.Partitions)+1 || partitionRows != len(d.Partitions) {
		t.Errorf("chart lines %d, partition rows %d; /status has %d partitions", series, partitionRows, len(d.Partitions))
	}
	// p0's last finite watermark: its largest event time (09:55 + 5 s ×
	// 118 = 10:09:50) minus 10 s.
	if lastP0 != "2026-09-01T10:09:40Z" {
		t.Errorf("p0's line ends at %q, want 2026-09-01T10:09:40Z", lastP0)
	}
	if missed != 1 {
		t.Errorf("%d missed objectives on the page, want 1 (late_ratio)", missed)
	}
	if len(shot) < 1000 {
		t.Errorf("screenshot of %d bytes", len(shot))
	}
}

// TestRecordsFilteredAndQuarantinedByStage: the page shows the filter's
// count (the metrics had it, the page did not) and splits quarantined
// records as the metric's stage label does: "source" before the stages,
// then each stage.
func TestRecordsFilteredAndQuarantinedByStage(t *testing.T) {
	p, err := spec.Parse("s.yaml", []byte("name: shop\nsource: {type: file, path: in.jsonl}\nevent_time: {field: ts}\n"+
		"stages:\n  - {name: a, filter: 'x > 1', key: [k], window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: final}}\n"+
		"  - {name: b, input: source, filter: 'x > 2', window: {type: tumbling, size: 1m}, aggregates: {n: count()}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pg := New(p, nil)
	pg.Update(&engine.Live{Pipeline: "shop", EventsRead: 20, Quarantined: 3, Stages: []engine.LiveStage{
		{Name: "a", Counters: engine.Counters{In: 17, Quarantined: 2, Filtered: 5, OnTime: 10}},
		{Name: "b", Counters: engine.Counters{In: 17, Quarantined: 1, Filtered: 7, OnTime: 9}},
	}})
	r := pg.Doc().Records
	want := []StageCount{{"source", 3}, {"a", 2}, {"b", 1}}
	if r.Filtered != 12 || r.Quarantined != 6 || fmt.Sprint(r.QuarantinedByStage) != fmt.Sprint(want) {
		t.Errorf("records %+v, want filtered 12, quarantined 6 by %v", r, want)
	}
	if SourceStage != metrics.SourceStage {
		t.Errorf("status labels the source %q, metrics %q", SourceStage, metrics.SourceStage)
	}
	var html strings.Builder
	if err := pg.writeHTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`<tr><th>filtered</th><td class="n" id="records-filtered">12</td></tr>`,
		`<tr class="quarantined-by-stage" data-stage="source"><th>&nbsp;&nbsp;at the source</th><td class="n">3</td></tr>`,
		`<tr class="quarantined-by-stage" data-stage="b"><th>&nbsp;&nbsp;at stage b</th><td class="n">1</td></tr>`,
	} {
		if !strings.Contains(html.String(), w) {
			t.Errorf("the page lacks %s", w)
		}
	}
	// Before the first snapshot the list is empty, not null.
	if d := New(p, nil).Doc(); d.Records.QuarantinedByStage == nil || len(d.Records.QuarantinedByStage) != 0 {
		t.Errorf("before a snapshot: %+v", d.Records)
	}
}

// TestDiskState: the disk backend's stores reach the document with the
// block cache's hit rate; the memory backend's document has none.
func TestDiskState(t *testing.T) {
	p, err := spec.Parse("s.yaml", []byte("name: shop\nsource: {type: file, path: in.jsonl}\nevent_time: {field: ts}\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pg := New(p, nil)
	pg.Update(&engine.Live{Pipeline: "shop"})
	if pg.Doc().State != nil {
		t.Fatal("a memory-backend run reports state on disk")
	}
	pg.Update(&engine.Live{Pipeline: "shop", DiskState: &engine.LiveDiskState{DiskBytes: 5 << 20, MemTableBytes: 1 << 20, CacheBytes: 2 << 20,
		HotBudget: 8 << 20, CacheHits: 30, CacheMisses: 10, FlushTime: 1500 * time.Millisecond, Files: 7}})
	st := pg.Doc().State
	if st == nil || st.DiskBytes != 5<<20 || st.Files != 7 || st.CacheHitRate == nil || *st.CacheHitRate != 0.75 || st.FlushSeconds != 1.5 {
		t.Fatalf("state %+v", st)
	}
}

// TestKafkaPositionsContract (issue 25 item 5): the source contract of a
// Kafka pipeline says its positions live in the checkpoints only when it
// takes checkpoints; without, that a restart reads from source.start.
func TestKafkaPositionsContract(t *testing.T) {
	p := &spec.Pipeline{Name: "k", Source: spec.Source{Type: "kafka", Topics: []string{"orders"}}}
	if got, want := contracts(p).Source, "Kafka topics orders, one watermark per partition; positions (offsets) are not kept (no checkpoint): a restart reads from source.start (earliest) again; no deduplication (every delivery counts)"; got != want {
		t.Errorf("without checkpoints:\n%s\nwant\n%s", got, want)
	}
	p.Checkpoint = &spec.Checkpoint{Dir: "ck"}
	if got, want := contracts(p).Source, "Kafka topics orders, one watermark per partition; positions (offsets) live in the checkpoints; no deduplication (every delivery counts)"; got != want {
		t.Errorf("with checkpoints:\n%s\nwant\n%s", got, want)
	}
}
