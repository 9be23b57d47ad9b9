// Package aggregate implements window aggregate functions as columns of
// accumulators.
//
// In the data flow it is core, below the operators: plan builds a stage's
// Columns from its spec, and the window operator (package operator) and
// the task's stages add, retract and merge rows into them; it imports
// only row and state (for its checkpoint encoding).
//
// A Column holds one aggregate's accumulators for every slot of a stage's
// state table: slot s is one (window, key). Storage is columnar (a []int64
// of counts, a []Decimal of sums, ...) so the hot path indexes slices and
// boxes nothing. Every function supports:
//
//   - Add: a row enters the slot;
//   - Retract: a row previously added leaves it (changelog input, per-key
//     upserts) — count, sum and avg are exact; min and max keep a multiset
//     of values so that retracting the current extreme yields the next one
//     (Flink's retractable MinWithRetractAggFunction does the same with a
//     MapView);
//   - Merge: two slots combine (session windows merging).
//
// Null arguments are ignored, as in SQL: sum, avg, min and max of no
// non-null value are null; count(x) counts non-null x; count() counts rows.
//
// Functions and result kinds:
//
//	count()            int
//	count(x)           int
//	sum(x)             int for int x (overflow is an error, never a wrap),
//	                   decimal for decimal x (exact)
//	avg(x)             decimal: sum/count rounded half away from zero to
//	                   max(6, scale of x) digits (Flink's DECIMAL avg scale
//	                   rule; for int x Flink returns a truncated int, tidemark
//	                   returns the exact decimal)
//	min(x), max(x)     kind of x (int, decimal, string, timestamp, bool)
//	count_distinct(x)  int: number of distinct non-null x (exact up to
//	                   56-bit hash collisions: distinct.go)
//	arg_max(x, y)      kind of y: y of the row with the largest x (ties: the
//	arg_min(x, y)      smallest y); not retractable
//	first_by(y, k…)    kind of y: y of the first (last) row in the order of
//	last_by(y, k…)     the keys k (desc(k) for descending; ties: the row added
//	                   first, last); not retractable (firstby.go)
//	nth_by(y, n, k…)   kind of y: y of the n-th row in that order, null
//	                   before n rows; not retractable (nthby.go)
//
// Checkpoints: AppendSlot and RestoreSlot write and read one slot's
// accumulator exactly (snapshot.go describes the encoding per function).
package aggregate

import (
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// ErrNotRetractable is returned by Retract on a column built without
// retraction support.
var ErrNotRetractable = errors.New("aggregate built without retraction support")

// Spec describes one aggregate column.
type Spec struct {
	Name    string    // output column name
	Func    string    // count, sum, avg, min, max, count_distinct
	Arg     row.Field // argument field
	HasArg  bool      // false for count()
	Arg2    row.Field // second argument (arg_max, arg_min: the field returned)
	HasArg2 bool
	// Order and Desc are first_by's and last_by's keys to order by, each
	// descending when its Desc is true.
	Order []row.Field
	Desc  []bool
	// N is nth_by's rank (1-based; nthby.go), or top_n's number of rows
	// kept per slot (topn.go).
	N int
	// Cols are top_n's columns: the values kept of each row, in the
	// order Ranker.AppendRank appends them.
	Cols []row.Field
	// Versions makes top_n keep each rank's version in its state
	// (Ranker.Bump): an updating Top-N (operator.Config.Ranked in mode
	// update or retract).
	Versions bool
	Retract  bool // the input may retract rows: build retractable accumulators
}

// Column holds one aggregate's accumulators for all slots.
type Column interface {
	// Kind is the result kind.
	Kind() row.Kind
	// Grow makes slots [0, n) usable; new slots are empty.
	Grow(n int)
	// Add adds row r to slot s. Errors: int overflow.
	Add(s int32, r *row.Row) error
	// Retract removes a row previously added to slot s. Errors:
	// ErrNotRetractable, int overflow.
	Retract(s int32, r *row.Row) error
	// Merge adds slot src's contents into slot dst (src is left as is).
	Merge(dst, src int32) error
	// Result returns slot s's current value.
	Result(s int32) row.Value
	// Reset empties slot s for reuse.
	Reset(s int32)
	// SlotBytes is the fixed size of one slot in bytes.
	SlotBytes() int
	// ExtraBytes estimates heap bytes slot s holds beyond SlotBytes
	// (multisets, distinct sets, long strings).
	ExtraBytes(s int32) int
	// AppendSlot appends slot s's accumulator state to e (format: see
	// snapshot.go). The encoding is deterministic: equal states give equal
	// bytes, multisets and distinct sets being written in ascending value
	// order. It changes no state of the slot (it may reuse a scratch
	// buffer of the column, so it is not safe to call concurrently).
	AppendSlot(e *state.Encoder, s int32)
	// RestoreSlot replaces slot s's state with one AppendSlot wrote for a
	// column built from the same Spec; s must be below the length given to
	// Grow. The restored slot behaves exactly as the saved one under
	// Result, Add, Retract and Merge (decimal scales, multisets and
	// distinct sets included). Errors are recorded in d (see d.Err):
	// truncated input, a multiplicity below 1, a value listed twice, a
	// decimal scale above row.MaxDecimalScale. After an error the slot's
	// state is unspecified: Reset it before reuse.
	RestoreSlot(d *state.Decoder, s int32)
}

// Checker is implemented by columns whose updates can fail (an int sum that
// would overflow). Check returns the error Add (weight > 0) or Retract
// (weight < 0) of row r on slot s would return, and CheckMerge the error a
// result of Merge(dst, src) outside the column's range is (Merge itself
// never fails: a slot may hold a partial aggregate beyond the range, see
// sumIntCol), changing nothing — so that a caller can refuse a record
// before any state changes.
//
// Magnitude and RowMagnitude bound what a slot or a row adds to a merged
// total (|sum| for an int sum, saturating at 2^64 − 1): a caller holding
// partial aggregates (the window operator's slices) skips the exact check
// of a merged total when n partials of at most Magnitude each and the
// row's RowMagnitude cannot leave the range.
type Checker interface {
	Check(s int32, r *row.Row, weight int) error
	CheckMerge(dst, src int32) error
	Magnitude(s int32) uint64
	RowMagnitude(r *row.Row) uint64
}

// HistoryDependent is implemented by columns whose Result can depend on
// the order of a slot's adds and retractions, not only on the rows it
// holds: with retraction, a decimal sum or average keeps the largest scale
// it saw while the slot was not empty (10.50 + 3 − 10.50 = 3.00), and a
// decimal min or max keeps the representation of the extreme it saw (2.00
// after 2.00 and 2, then −2.00). Merging the partial aggregates of a
// window's slices cannot reproduce that history, so the window operator
// keeps one accumulator per window for a stage with such a column.
type HistoryDependent interface {
	HistoryDependent() bool
}

// New builds the column for spec. It returns an error for an unknown
// function, a missing or extra argument, or an argument kind the function
// does not accept (e.g. sum of a string).
func New(sp Spec) (Column, error) {
	k := sp.Arg.Kind
	need := func() error {
		if !sp.HasArg {
			return fmt.Errorf("%s() needs one argument", sp.Func)
		}
		return nil
	}
	switch sp.Func {
	case "count":
		if !sp.HasArg {
			return &countCol{}, nil
		}
		return &countCol{arg: sp.Arg, field: true}, nil
	case "sum":
		if err := need(); err != nil {
			return nil, err
		}
		switch k {
		case row.KindInt:
			return &sumIntCol{arg: sp.Arg}, nil
		case row.KindDecimal:
			return &sumDecCol{arg: sp.Arg, retract: sp.Retract}, nil
		}
		return nil, fmt.Errorf("sum(%s) needs an int or decimal argument, %s is %s", sp.Arg.Name, sp.Arg.Name, k)
	case "avg":
		if err := need(); err != nil {
			return nil, err
		}
		if !k.Numeric() {
			return nil, fmt.Errorf("avg(%s) needs an int or decimal argument, %s is %s", sp.Arg.Name, sp.Arg.Name, k)
		}
		return &avgCol{arg: sp.Arg, retract: sp.Retract && k == row.KindDecimal}, nil
	case "min", "max":
		if err := need(); err != nil {
			return nil, err
		}
		return newExtreme(sp)
	case "count_distinct":
		if err := need(); err != nil {
			return nil, err
		}
		return newDistinct(sp), nil
	case "arg_max", "arg_min":
		return newArgExtreme(sp)
	case "first_by", "last_by":
		return newFirstBy(sp)
	case "nth_by":
		return newNthBy(sp)
	case "top_n":
		return newTopN(sp)
	}
	return nil, fmt.Errorf("unknown aggregate %s() (want count, sum, avg, min, max, count_distinct, arg_max, arg_min, first_by, last_by or nth_by)", sp.Func)
}

func grow[T any](s []T, n int) []T {
	if len(s) >= n {
		return s
	}
	if cap(s) >= n {
		return s[:n]
	}
	c := 2 * cap(s)
	if c < n {
		c = n
	}
	if c < 64 {
		c = 64
	}
	out := make([]T, n, c)
	copy(out, s)
	return out
}
