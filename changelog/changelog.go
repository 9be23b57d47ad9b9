// Package changelog defines what a pipeline stage emits: window result rows
// with a changelog operation, and the side-output records (late, quarantine)
// that make sure no input is silently lost.
//
// The operations follow Flink's RowKind: +I insert, -U update_before,
// +U update_after, -D delete. An emit mode selects which of them a stage
// produces: final (insert only, once per window and key), update (an upsert
// stream: insert, update_after, delete) or retract (all four).
package changelog

import (
	"fmt"
	"math"
	"time"

	"github.com/tidemark/tidemark/row"
)

// Op is a changelog operation.
type Op uint8

// The operations, with Flink's short names in comments.
const (
	Insert       Op = iota // +I: a row for a window and key appears
	UpdateBefore           // -U: the previous values of a row being updated (retract mode)
	UpdateAfter            // +U: the new values of a row
	Delete                 // -D: the row no longer exists (e.g. a session merged away)
)

var opNames = [...]string{"insert", "update_before", "update_after", "delete"}

// String returns the op's name as written in outputs: "insert",
// "update_before", "update_after" or "delete".
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Short returns Flink's notation: "+I", "-U", "+U", "-D".
func (o Op) Short() string {
	switch o {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return "?"
}

// ParseOp maps an op name ("insert", "+I", ...) back to an Op.
func ParseOp(s string) (Op, error) {
	switch s {
	case "insert", "+I":
		return Insert, nil
	case "update_before", "-U":
		return UpdateBefore, nil
	case "update_after", "+U":
		return UpdateAfter, nil
	case "delete", "-D":
		return Delete, nil
	}
	return 0, fmt.Errorf("unknown changelog op %q", s)
}

// Retracts reports whether the op removes a previous row's contribution
// (update_before and delete) rather than adding one.
func (o Op) Retracts() bool { return o == UpdateBefore || o == Delete }

// WatermarkInfinity is the watermark after the end of a bounded input: every
// window has fired and closed. Outputs write it as "infinity".
const WatermarkInfinity = int64(math.MaxInt64)

// WatermarkNone is the watermark before any record has been seen.
const WatermarkNone = int64(math.MinInt64)

// Row is one emitted window result.
//
// Key and Values are owned by the emitting operator and are valid only until
// the next call into it; sinks copy what they keep.
type Row struct {
	Op          Op
	WindowStart int64       // ms since epoch, inclusive
	WindowEnd   int64       // ms since epoch, exclusive
	Key         []row.Value // group key values, in the order of Desc.Key
	Values      []row.Value // aggregate results, in the order of Desc.Values
	Version     uint64      // 1, 2, 3 … per (window_start, key): later rows have higher versions
	IsFinal     bool        // no further change for this window and key (its allowed lateness has passed)
	WatermarkAt int64       // pipeline watermark when produced (ms); WatermarkInfinity at end of input
	UpdatedAt   int64       // processing time when produced (ms)
}

// Column is one named, typed output column.
type Column struct {
	Name string
	Kind row.Kind
}

// Desc describes the rows a stage emits: its name, group-key columns and
// aggregate columns. Window and bookkeeping columns (window_start,
// window_end, version, is_final, watermark_at, updated_at, op) are implied.
type Desc struct {
	Stage    string   // stage (pipeline) name
	Key      []Column // group key columns
	Values   []Column // aggregate columns
	Session  bool     // session windows: window_end of a row can change
	Timezone string   // IANA zone used to render window times (e.g. "Asia/Seoul")
	EmitMode string   // "final", "update" or "retract"
	// Stateless marks a select stage's rows: no window and no key; each
	// row is an insert of one record's Values, WindowStart and WindowEnd
	// holding its event time. JSON: {"op":"insert","event_time":…,<values>,
	// "updated_at":…}.
	Stateless bool
}

// Position locates a record in its source: a file and line (and byte
// offset), or a partition and offset for a log.
type Position struct {
	Source    string // file path or topic
	Partition string // partition name, "" when the source has none
	Line      int64  // 1-based line (files); 0 when not applicable
	Offset    int64  // byte offset in the file, or the record offset in a partition
}

// String renders the position as "file:line" or "topic[partition]@offset".
func (p Position) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d", p.Source, p.Line)
	}
	if p.Partition != "" {
		return fmt.Sprintf("%s[%s]@%d", p.Source, p.Partition, p.Offset)
	}
	return fmt.Sprintf("%s@%d", p.Source, p.Offset)
}

// FormatWatermark returns a watermark as text for messages: "+inf" for
// WatermarkInfinity, "-inf" for WatermarkNone, else the time in RFC 3339
// (row.FormatTime, in loc; nil: UTC) — never the year 292278994 that the int64 bounds
// would print as.
func FormatWatermark(wm int64, loc *time.Location) string {
	switch wm {
	case WatermarkInfinity:
		return "+inf"
	case WatermarkNone:
		return "-inf"
	}
	return row.FormatTime(wm, loc)
}

// Lateness returns how far watermark wm is past event time ts, ms (a late
// record's LatenessMs): wm − ts, saturated to the int64 range, so that it
// never overflows (a watermark of +∞, an event time near the bounds).
func Lateness(wm, ts int64) int64 {
	d := wm - ts
	switch {
	case ts < 0 && d < wm: // wm − ts overflowed upward
		return math.MaxInt64
	case ts > 0 && d > wm: // downward
		return math.MinInt64
	}
	return d
}

// LateRecord is the side output for an event that arrived after every window
// it belongs to had closed (watermark ≥ window end + allowed lateness).
type LateRecord struct {
	Stage            string
	Event            []byte // the original event as a JSON object
	EventTime        int64  // ms
	ObservedAt       int64  // processing time at arrival (ms)
	CurrentWatermark int64  // pipeline watermark at arrival (ms)
	LatenessMs       int64  // CurrentWatermark − EventTime, saturated (Lateness)
	Reason           string
	Position         Position
}

// QuarantineRecord is the side output for a record that could not be
// decoded or broke a rule: it never reaches a window and never moves the
// watermark.
type QuarantineRecord struct {
	Stage    string
	Raw      []byte // the original bytes of the record
	Reason   string // what is wrong, naming the field
	Field    string // the offending field, "" when not one field
	Rule     string // the rule or check that failed (e.g. "decode", "event_time")
	Position Position
}

// ConflictRecord is the side output for a delivery that reuses an event id
// with a different payload: it is neither applied nor dropped silently.
type ConflictRecord struct {
	EventID          string
	FirstPayloadHash uint32
	FirstPayload     []byte // the first delivery as a JSON object; nil when no longer kept
	NewPayloadHash   uint32
	NewPayload       []byte // this delivery as a JSON object
	EventTime        int64  // ms, of this delivery
	ObservedAt       int64  // processing time (ms)
	Position         Position
}
