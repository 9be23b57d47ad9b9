package sink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tidemark/tidemark/state"
)

// preparedRecordsVersion is the version byte of EncodePrepared's layout.
const preparedRecordsVersion = 1

// maxPreparedRecords bounds the count DecodePrepared accepts.
const maxPreparedRecords = 1 << 30

// EncodePrepared returns the encoding of the side-output records a table
// sink prepared for a checkpoint (sink.Committer's Prepare): Byte(1)
// Uint(#records), then each record as Bytes8. The layout is kept in
// checkpoints: it never changes.
func EncodePrepared(recs [][]byte) []byte {
	e := state.NewEncoder(nil)
	e.Byte(preparedRecordsVersion)
	e.Uint(uint64(len(recs)))
	for _, b := range recs {
		e.Bytes8(b)
	}
	return e.Bytes()
}

// DecodePrepared reads EncodePrepared's records back (copies; nil for an
// empty p). name ("postgres prepared records") names the section in a
// version error. Errors: a version other than 1, a truncated input or
// bytes after the last record, wrapped as "prepared records: …".
func DecodePrepared(p []byte, name string) ([][]byte, error) {
	if len(p) == 0 {
		return nil, nil
	}
	d := state.NewDecoder(p)
	d.Section(name, preparedRecordsVersion)
	n := d.Len(maxPreparedRecords, 1)
	out := make([][]byte, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		out = append(out, append([]byte(nil), d.Bytes8()...))
	}
	if d.Err() == nil && d.Remaining() > 0 {
		d.Fail("%d bytes after the last record", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("prepared records: %w", err)
	}
	return out, nil
}

// PreparedRecords is the two-phase-commit bookkeeping of a table sink of
// side-output records (sink/postgres's and sink/sqlite's Records): the
// records written since the last Prepare, those prepared and not yet
// committed, and the checkpoint they were last prepared for. Each sink
// keeps its own table, marker and transaction; this is only what the
// checkpoint protocol asks of them all. The zero value holds nothing. It
// is not safe for concurrent use.
type PreparedRecords struct {
	// Staged are the records written since the last Prepare (or, for a
	// sink that writes at least once, since its last Flush).
	Staged [][]byte
	prep   [][]byte // prepared and not committed
	prepID int64    // the checkpoint prep was last prepared for
}

// Stage adds a copy of rec to Staged.
func (p *PreparedRecords) Stage(rec []byte) {
	p.Staged = append(p.Staged, append([]byte(nil), rec...))
}

// Prepare (sink.Committer's) moves Staged to the records prepared and not
// committed, notes id as the checkpoint they are prepared for, and
// returns EncodePrepared of all of them, or nil when there are none.
func (p *PreparedRecords) Prepare(id int64) []byte {
	p.prep = append(p.prep, p.Staged...)
	p.Staged = nil
	p.prepID = id
	if len(p.prep) == 0 {
		return nil
	}
	return EncodePrepared(p.prep)
}

// ForCommit returns the records a Commit of checkpoint id inserts: those
// in memory when the last Prepare was for id and left some, else the
// decoding of prepared, the bytes Prepare returned (after a restart;
// DecodePrepared, name naming the section in its errors).
func (p *PreparedRecords) ForCommit(id int64, prepared []byte, name string) ([][]byte, error) {
	if p.prepID == id && p.prep != nil {
		return p.prep, nil
	}
	return DecodePrepared(prepared, name)
}

// Committed forgets the prepared records once the commit of checkpoint id
// covers them: when they were last prepared for id or an earlier one.
func (p *PreparedRecords) Committed(id int64) {
	if p.prepID <= id {
		p.prep = nil
	}
}

// Reset drops the staged and the prepared records (a Recover, an Abort,
// a Close: a restore writes them again).
func (p *PreparedRecords) Reset() {
	p.Staged, p.prep = nil, nil
}

// RecordFields are the fields of a side-output record that a table of
// records keeps in typed columns (docs/pipeline.md, "Side-output tables"),
// read from its JSON. A field the record lacks, or holds as null, is nil
// or "".
type RecordFields struct {
	// Kind is "late" (the record has lateness_ms), "conflict"
	// (first_payload_hash), "quarantine" (raw), or "record".
	Kind    string
	Stage   *string
	EventID *string
	Reason  *string
	// Source is where the record was read: a late or conflict record's
	// "source" as it is ("events.jsonl:5"); a quarantine record's source
	// object as the same text ("file:line", "file[partition]@offset",
	// "topic[partition]@offset").
	Source *string
	// EventTime, ObservedAt and CurrentWatermark are the record's RFC 3339
	// texts; CurrentWatermark may be "infinity".
	EventTime, ObservedAt, CurrentWatermark string
	LatenessMs                              *int64
}

// ParseRecord reads the typed fields of a side-output record, a JSON
// object. It returns an error when obj is not a JSON object or a field
// has another type than the record formats give it.
func ParseRecord(obj []byte) (RecordFields, error) {
	var r struct {
		Stage            *string         `json:"stage"`
		EventID          *string         `json:"event_id"`
		EventTime        *string         `json:"event_time"`
		ObservedAt       *string         `json:"observed_at"`
		CurrentWatermark *string         `json:"current_watermark"`
		LatenessMs       *int64          `json:"lateness_ms"`
		Reason           *string         `json:"reason"`
		Source           json.RawMessage `json:"source"`
		Raw              json.RawMessage `json:"raw"`
		FirstHash        json.RawMessage `json:"first_payload_hash"`
	}
	var f RecordFields
	if t := bytes.TrimSpace(obj); len(t) == 0 || t[0] != '{' {
		return f, fmt.Errorf("side-output record is not a JSON object: %.80q", obj)
	}
	if err := json.Unmarshal(obj, &r); err != nil {
		return f, fmt.Errorf("side-output record %.80q: %w", obj, err)
	}
	switch {
	case r.FirstHash != nil:
		f.Kind = "conflict"
	case r.LatenessMs != nil:
		f.Kind = "late"
	case r.Raw != nil:
		f.Kind = "quarantine"
	default:
		f.Kind = "record"
	}
	f.Stage, f.EventID, f.Reason, f.LatenessMs = r.Stage, r.EventID, r.Reason, r.LatenessMs
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	f.EventTime, f.ObservedAt, f.CurrentWatermark = str(r.EventTime), str(r.ObservedAt), str(r.CurrentWatermark)
	src, err := sourceText(r.Source)
	if err != nil {
		return f, fmt.Errorf("side-output record %.80q: source: %w", obj, err)
	}
	f.Source = src
	return f, nil
}

// sourceText renders a record's "source": a string as it is, a quarantine
// record's position object as changelog.Position.String does.
func sourceText(raw json.RawMessage) (*string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return &s, err
	}
	var p struct {
		File      *string `json:"file"`
		Topic     *string `json:"topic"`
		Partition *string `json:"partition"`
		Line      *int64  `json:"line"`
		Offset    int64   `json:"offset"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	name := p.File
	if name == nil {
		name = p.Topic
	}
	s := ""
	if name != nil {
		s = *name
	}
	switch {
	case p.Line != nil && *p.Line > 0:
		s += ":" + strconv.FormatInt(*p.Line, 10)
	case p.Partition != nil && *p.Partition != "":
		s += "[" + *p.Partition + "]@" + strconv.FormatInt(p.Offset, 10)
	default:
		s += "@" + strconv.FormatInt(p.Offset, 10)
	}
	return &s, nil
}
