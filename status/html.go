package status

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/tidemark/tidemark/changelog"
)

// Chart geometry (SVG user units).
const (
	chartW, chartH = 720, 300
	padL, padR     = 70, 20
	padT, padB     = 20, 40
)

// series is one polyline of the chart.
type series struct {
	Name   string
	Points string // "x,y x,y …"
	Class  string
	Last   string // the last watermark plotted, RFC 3339
}

// chart is the SVG data: watermarks (y, event time) against processing
// time (x), and the line where event time equals processing time (a
// watermark on it has no lag).
type chart struct {
	W, H     int
	Series   []series
	Diagonal string // "x1,y1 x2,y2", "" when out of range
	XLabel   [2]string
	YLabel   [2]string
	Empty    bool
}

func (pg *Page) chart() chart {
	pg.mu.Lock()
	hist := append([]point(nil), pg.history...)
	pg.mu.Unlock()
	c := chart{W: chartW, H: chartH}
	finite := func(ms int64) bool { return ms != changelog.WatermarkNone && ms != changelog.WatermarkInfinity }
	xmin, xmax := int64(math.MaxInt64), int64(math.MinInt64)
	ymin, ymax := int64(math.MaxInt64), int64(math.MinInt64)
	nparts := 0
	for _, p := range hist {
		xmin, xmax = min(xmin, p.processing), max(xmax, p.processing)
		for _, w := range append([]int64{p.watermark}, p.parts...) {
			if finite(w) {
				ymin, ymax = min(ymin, w), max(ymax, w)
			}
		}
		nparts = max(nparts, len(p.parts))
	}
	if len(hist) == 0 || ymin > ymax {
		c.Empty = true
		return c
	}
	// Processing time is a ceiling for the watermark worth showing: keep
	// it in range so the lag is visible.
	ymax = max(ymax, xmax)
	if xmax == xmin {
		xmax = xmin + 1000
	}
	if ymax == ymin {
		ymax = ymin + 1000
	}
	x := func(ms int64) float64 {
		return padL + float64(ms-xmin)/float64(xmax-xmin)*(chartW-padL-padR)
	}
	y := func(ms int64) float64 {
		return chartH - padB - float64(ms-ymin)/float64(ymax-ymin)*(chartH-padT-padB)
	}
	line := func(name, class string, get func(p point) (int64, bool)) {
		var b strings.Builder
		last := int64(changelog.WatermarkNone)
		for _, p := range hist {
			w, ok := get(p)
			if !ok || !finite(w) {
				continue
			}
			fmt.Fprintf(&b, "%.1f,%.1f ", x(p.processing), y(w))
			last = w
		}
		if b.Len() > 0 {
			c.Series = append(c.Series, series{Name: name, Points: strings.TrimSpace(b.String()), Class: class, Last: timeText(last)})
		}
	}
	pg.mu.Lock()
	names := []string{}
	if pg.last != nil {
		for _, p := range pg.last.Partitions {
			names = append(names, p.Name)
		}
	}
	pg.mu.Unlock()
	for i := 0; i < nparts; i++ {
		name := fmt.Sprintf("partition %d", i)
		if i < len(names) {
			name = names[i]
		}
		line(name, "partition", func(p point) (int64, bool) {
			if i < len(p.parts) {
				return p.parts[i], true
			}
			return 0, false
		})
	}
	line("pipeline", "pipeline", func(p point) (int64, bool) { return p.watermark, true })
	// The no-lag line y = x, clipped to the y range.
	lo, hi := max(xmin, ymin), min(xmax, ymax)
	if lo < hi {
		c.Diagonal = fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(lo), y(lo), x(hi), y(hi))
	}
	c.XLabel = [2]string{timeText(xmin), timeText(xmax)}
	c.YLabel = [2]string{timeText(ymin), timeText(ymax)}
	return c
}

var page = template.Must(template.New("status").Funcs(template.FuncMap{
	"lag": func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f s", *v)
	},
	"ratio": func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.4f%%", *v*100)
	},
	"clag": func(v *int64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tidemark: {{.D.Pipeline}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.missed{color:#b00;font-weight:bold}.met{color:#070}
svg .partition{fill:none;stroke:#4a7fb5;stroke-width:1.5}
svg .pipeline{fill:none;stroke:#d2691e;stroke-width:3}
svg .diagonal{stroke:#999;stroke-dasharray:4 4}
svg text{font-size:11px;fill:#555}
</style></head><body>
<h1>tidemark: <span id="pipeline">{{.D.Pipeline}}</span></h1>
<p>Snapshot <span id="snapshot">{{.D.Snapshot}}</span>{{if .D.Ended}} (run ended){{end}}.
Processing time <span id="processing-time">{{.D.ProcessingTime}}</span>,
watermark <span id="watermark">{{.D.Watermark}}</span>,
event-time lag <span id="event-time-lag">{{lag .D.EventTimeLagSeconds}}</span>,
late ratio <span id="late-ratio">{{ratio .D.LateRatio}}</span>.</p>

{{if .D.Waiting}}<h2>Waiting</h2>
<ul id="waiting">{{range .D.Waiting}}<li class="waiting" data-service="{{.Service}}">{{.Service}}: unreachable since {{.Since}} ({{printf "%.0f" .Seconds}} s, {{.Attempts}} failed attempts; the last: {{.LastError}}); records of {{.Records}} wait, not quarantined; the run fails after {{printf "%.0f" .LimitSeconds}} s.</li>{{end}}</ul>
{{end}}
<h2>Contracts</h2>
<table id="contracts">
<tr><th>source</th><td>{{.D.Contracts.Source}}</td></tr>
<tr><th>time</th><td>{{.D.Contracts.Time}}</td></tr>
<tr><th>state</th><td>{{.D.Contracts.State}}</td></tr>
<tr><th>sink</th><td>{{.D.Contracts.Sink}}</td></tr>
</table>

<h2>Watermarks against processing time</h2>
{{if .C.Empty}}<p id="chart-empty">No watermark yet.</p>{{else}}
<svg id="chart" width="{{.C.W}}" height="{{.C.H}}" viewBox="0 0 {{.C.W}} {{.C.H}}" role="img" aria-label="watermarks against processing time">
{{if .C.Diagonal}}<polyline class="diagonal" points="{{.C.Diagonal}}"><title>event time = processing time (no lag)</title></polyline>{{end}}
{{range .C.Series}}<polyline class="{{.Class}}" data-name="{{.Name}}" data-last="{{.Last}}" points="{{.Points}}"><title>{{.Name}}: {{.Last}}</title></polyline>
{{end}}<text x="70" y="{{.C.H}}" dy="-8">{{index .C.XLabel 0}}</text>
<text x="{{.C.W}}" y="{{.C.H}}" dy="-8" text-anchor="end">{{index .C.XLabel 1}} (processing time)</text>
<text x="4" y="290" dy="-40">{{index .C.YLabel 0}}</text>
<text x="4" y="14">{{index .C.YLabel 1}} (event time)</text>
</svg>{{end}}

<h2>Partitions</h2>
<table id="partitions"><tr><th>partition</th><th>watermark</th><th>event-time lag</th><th>idle</th><th>records</th><th>consumer lag</th></tr>
{{range .D.Partitions}}<tr class="partition" data-name="{{.Name}}"><td>{{.Name}}</td><td class="watermark">{{.Watermark}}</td><td class="n">{{lag .EventTimeLagSeconds}}</td><td>{{if .Idle}}idle{{else}}active{{end}}</td><td class="n records">{{.Records}}</td><td class="n">{{clag .ConsumerLag}}</td></tr>
{{end}}</table>

{{with .D.Group}}<h2>Instance {{.Instance}} of group {{.Group}}</h2>
<p id="group">{{len .Sources}} input partitions and {{len .Keyed}} of the {{.Partitions}} partitions of {{.Topic}}; {{.Commits}} transactions committed, {{.Aborts}} aborted by rebalances; {{.Rebalances}} assignment changes; {{.Restores}} tasks restored from checkpoints.</p>
<table id="group-sources"><tr><th>input partition</th><th>watermark reported</th><th>idle</th><th>records</th><th>lag</th><th>done</th></tr>
{{range .Sources}}<tr class="group-source" data-name="{{.Partition}}"><td>{{.Partition}}</td><td>{{.Watermark}}</td><td>{{if .Idle}}idle{{else}}active{{end}}</td><td class="n">{{.Records}}</td><td class="n">{{clag .Lag}}</td><td>{{if .Done}}done{{end}}</td></tr>
{{end}}</table>
<table id="group-keyed"><tr><th>repartition partition</th><th>node watermarks</th><th>lag</th><th>done</th></tr>
{{range .Keyed}}<tr class="group-keyed" data-partition="{{.Partition}}"><td>{{.Partition}}</td><td>{{range .Nodes}}{{.}}<br>{{end}}</td><td class="n">{{clag .Lag}}</td><td>{{if .Done}}done{{end}}</td></tr>
{{end}}</table>
{{end}}
<h2>Records</h2>
<table id="records">
<tr><th>read</th><td class="n" id="records-read">{{.D.Records.Read}}</td></tr>
<tr><th>quarantined</th><td class="n" id="records-quarantined">{{.D.Records.Quarantined}}</td></tr>
{{range .D.Records.QuarantinedByStage}}<tr class="quarantined-by-stage" data-stage="{{.Stage}}"><th>&nbsp;&nbsp;at {{if eq .Stage "source"}}the source{{else}}stage {{.Stage}}{{end}}</th><td class="n">{{.Records}}</td></tr>
{{end}}<tr><th>duplicates</th><td class="n" id="records-duplicates">{{.D.Records.Duplicates}}</td></tr>
<tr><th>conflicts</th><td class="n" id="records-conflicts">{{.D.Records.Conflicts}}</td></tr>
<tr><th>filtered</th><td class="n" id="records-filtered">{{.D.Records.Filtered}}</td></tr>
<tr><th>on time</th><td class="n" id="records-on-time">{{.D.Records.OnTime}}</td></tr>
<tr><th>late, accepted</th><td class="n" id="records-late-accepted">{{.D.Records.LateAccepted}}</td></tr>
<tr><th>too late</th><td class="n" id="records-too-late">{{.D.Records.TooLate}}</td></tr>
<tr><th>rows emitted</th><td class="n" id="rows-emitted">{{.D.Records.RowsEmitted}}</td></tr>
</table>

<h2>Checkpoints</h2>
{{if .D.Checkpoints.Enabled}}<p id="checkpoints">{{.D.Checkpoints.Taken}} taken, {{.D.Checkpoints.Failures}} failed; last: id {{.D.Checkpoints.LastID}} at {{.D.Checkpoints.LastAt}}, {{.D.Checkpoints.LastBytes}} bytes in {{printf "%.3f" .D.Checkpoints.LastDurationSec}} s.</p>
{{else}}<p id="checkpoints">No checkpoints: a restart recomputes from the start.</p>{{end}}

{{with .D.State}}<h2>State on disk</h2>
<table id="state">
<tr><th>on disk</th><td class="n" id="state-disk-bytes">{{.DiskBytes}} bytes in {{.Files}} files</td></tr>
<tr><th>memtables</th><td class="n" id="state-memtable-bytes">{{.MemTableBytes}} bytes</td></tr>
<tr><th>block cache</th><td class="n" id="state-cache-bytes">{{.CacheBytes}} bytes{{with .CacheHitRate}}, hit rate {{printf "%.3f" .}}{{end}}</td></tr>
<tr><th>hot tiers' budget</th><td class="n" id="state-hot-budget">{{.HotBudget}} bytes</td></tr>
<tr><th>flush, compaction</th><td class="n" id="state-work">{{printf "%.3f" .FlushSeconds}} s, {{printf "%.3f" .CompactionSeconds}} s</td></tr>
</table>
{{end}}
<h2>Service-level objectives</h2>
{{if .D.SLO}}<ul id="slo">{{range .D.SLO}}<li class="{{if .Met}}met{{else}}missed{{end}}" data-name="{{.Name}}">{{.Text}}</li>{{end}}</ul>
{{else}}<p id="slo">None stated (pipeline key slo).</p>{{end}}
</body></html>
`))

func (pg *Page) writeHTML(w io.Writer) error {
	return page.Execute(w, struct {
		D Doc
		C chart
	}{pg.Doc(), pg.chart()})
}
