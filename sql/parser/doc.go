// Package parser reads scripts in Flink SQL's dialect: the statements of a
// tidemark SQL job (CREATE TABLE with computed columns, WATERMARK, PRIMARY
// KEY and WITH options; CREATE [TEMPORARY] VIEW; CREATE FUNCTION; SET and
// RESET; INSERT INTO … SELECT; statement sets) into a syntax tree whose
// every node knows its position.
//
// The parser is hand-written recursive descent (no Go SQL parser reads
// Flink's window table functions, DESCRIPTOR or FOR SYSTEM_TIME AS OF).
// What it accepts is Flink's grammar for these statements (Calcite's
// parser with Flink's extensions, flink-sql-parser's Parser.tdd); what the
// planner can run is a subset, and the planner refuses the rest at its
// position (docs/sql.md). Keywords are case-insensitive, identifiers
// case-sensitive; `backquotes` quote an identifier (“ is a backquote),
// 'quotes' a string (” is a quote).
//
// Placeholders ${NAME} and ${NAME:-default} are replaced as the script is
// read: inside a string in its value, elsewhere by the tokens of the value,
// each at the placeholder's position, so that errors point into the script
// as written. An unset placeholder without a default is an error.
//
// Errors are *Error values: file:line:column, the message, the line and a
// caret under the column. No input makes Parse panic (FuzzParse).
//
// The small helpers called from hundreds of places (next, isKw, the
// formatter's w, …) are marked //go:noinline: inlined at every call they
// made the front end some 300 KB larger; its budget is 1 MB of binary
// (docs/sql.md, Size).
package parser
