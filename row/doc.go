// Package row defines tidemark's typed values and the typed row that moves
// through a pipeline's hot path.
//
// In the data flow it is the bottom of the house: formats and sources fill
// rows, expr and plan resolve fields to their slots, the operators, the
// task and the sinks read and write them. It imports no other tidemark
// package.
//
// A pipeline's plan resolves every field name to a [Field] of a [Schema]
// before the first record is read: a field has a [Kind] and a slot in one of
// the row's typed slices ([Row.I] for bool, int and time, [Row.D] for decimal,
// [Row.S] for string). Reading or writing a field is then an index, never a
// map lookup, an interface conversion or reflection.
//
// [Value] is the boxed form of one value. It is used off the hot path: for
// group-key values, aggregate results and output rows.
//
// Time values are int64 milliseconds since the Unix epoch (UTC). Decimals are
// exact fixed-point numbers (see [Decimal]).
package row
