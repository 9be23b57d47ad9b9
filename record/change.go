package record

import "github.com/tidemark/tidemark/row"

// Change streams (docs/connectors/postgres-cdc.md): a source of a
// database table's changes (source/pgcdc, or a Debezium topic read by
// format debezium_json) delivers one record per change, keyed by the
// row's key and versioned by the change's WAL position, with these
// metadata fields beside the table's columns. The engine keeps each
// key's newest row and turns the changes into its changelog: an insert
// adds a row, an update retracts the key's previous row and adds the new
// one, a delete retracts it.
const (
	// FieldOp is the change: OpRead, OpCreate, OpUpdate or OpDelete.
	// String.
	FieldOp = "__op"
	// FieldLSN is the WAL position (LSN) of the change, 0 for a row of an
	// initial snapshot: the version of the row's key. Int.
	FieldLSN = "__lsn"
	// FieldCommitLSN is the position of the commit of the change's
	// transaction (for a snapshot row: the snapshot's position). Int.
	FieldCommitLSN = "__commit_lsn"
	// FieldCommitTime is when the change's transaction committed (when the
	// snapshot was taken, for a snapshot row). Timestamp.
	FieldCommitTime = "__commit_time"
	// FieldXid is the upstream transaction id (0 for a snapshot row). Int.
	FieldXid = "__xid"
	// FieldTable is the table, "schema.table". String.
	FieldTable = "__table"
	// FieldKey is the row's key as text: the key column's text, or a JSON
	// array of the texts of several key columns. String.
	FieldKey = "__key"
	// FieldUnchanged marks the fields a change did not carry because the
	// update left them unchanged (PostgreSQL's unchanged TOAST values):
	// a bitmap of schema field indexes (MarkUnchanged), null or empty
	// when every value is present. The engine takes those fields from the
	// key's previous row. String.
	FieldUnchanged = "__unchanged"
)

// The values of FieldOp (Debezium's codes).
const (
	OpRead   = "r" // a row of the initial snapshot
	OpCreate = "c" // an insert
	OpUpdate = "u" // an update
	OpDelete = "d" // a delete
)

// ChangeFields lists the metadata fields of a change stream with their
// kinds.
var ChangeFields = []struct {
	Name string
	Kind row.Kind
}{
	{FieldOp, row.KindString},
	{FieldLSN, row.KindInt},
	{FieldCommitLSN, row.KindInt},
	{FieldCommitTime, row.KindTime},
	{FieldXid, row.KindInt},
	{FieldTable, row.KindString},
	{FieldKey, row.KindString},
	{FieldUnchanged, row.KindString},
}

// IsChangeField reports whether name is one of ChangeFields.
func IsChangeField(name string) bool {
	for _, m := range ChangeFields {
		if m.Name == name {
			return true
		}
	}
	return false
}

// ChangeFieldKind returns the kind of metadata field name.
func ChangeFieldKind(name string) (row.Kind, bool) {
	for _, m := range ChangeFields {
		if m.Name == name {
			return m.Kind, true
		}
	}
	return row.KindNull, false
}

// MarkUnchanged sets field index i in the FieldUnchanged bitmap dst (bit
// i&7 of byte i>>3), growing it as needed.
func MarkUnchanged(dst []byte, i int) []byte {
	for len(dst) <= i>>3 {
		dst = append(dst, 0)
	}
	dst[i>>3] |= 1 << (uint(i) & 7)
	return dst
}

// Unchanged reports whether field index i is set in a FieldUnchanged
// bitmap.
func Unchanged(mask string, i int) bool {
	return i>>3 < len(mask) && mask[i>>3]&(1<<(uint(i)&7)) != 0
}
