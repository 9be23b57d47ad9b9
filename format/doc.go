// Package format decodes records (a JSON object, a CSV record) into typed
// rows laid out by a [row.Schema].
//
// In the data flow it is at the front, in the connectors' layer: a source
// (source/file, source/kafka, source/pgcdc), or the
// engine's decoders beside the router, turns each record's bytes into a
// row with it before the router sees the record; format/avro,
// format/protobuf and format/debezium build on its conversions. It imports
// row, eventtime and source (for DecodeError and Arena), no runner.
//
// A decoder is compiled once from [Fields]: every schema field knows its
// kind, its JSON path or CSV column, and its timestamp parser, so decoding a
// record is a walk over a fixed list of fields with no map lookups, no
// reflection and no boxing.
//
// # Conversions
//
// Each schema kind accepts these inputs (JSON value or CSV text); anything
// else is a [source.DecodeError] with Rule "type" that names the field and
// quotes the value.
//
//	kind       JSON                                         CSV text
//	string     string; a number, true or false as its text  the text
//	int        integer number; a string holding one          integer
//	decimal    number (exact, from the literal); numeric     decimal number
//	           string
//	bool       true, false; "true", "false"                 true, false
//	timestamp  string for the field's parser; a number       text for the parser
//	           when the parser reads epoch_ms or epoch_s
//
// An integer may be written with a zero fraction or an exponent ("2.0",
// "1e3"); a value with a non-zero fraction ("2.5") is a type error. Numbers
// are never converted through float64: decimals keep the literal's exact
// digits and scale. Bool text is matched without regard to letter case
// ("TRUE" is true). Numeric, bool and timestamp text is not trimmed: " 5"
// is a type error.
//
// A JSON null or a missing member is null. A CSV field with empty text is
// null for every kind, strings included: CSV cannot tell an empty string
// from a missing value, and a missing value is the more common meaning. In
// JSON an empty string is an empty string for a string field and a type
// error for the other kinds.
//
// A timestamp that its parser rejects is a DecodeError with Rule
// "timestamp" and the parser's error text. A line that is not valid JSON,
// or is valid JSON but not an object, is a DecodeError with Rule "decode".
//
// When one field fails, the decoders still decode the others (the failed
// field is left null) and return the first error, so that a caller can
// still read, say, a partition key from a record it will quarantine.
//
// # JSON
//
// [JSON] parses with github.com/valyala/fastjson, reusing one parser, and
// extracts only the schema's fields; other members are skipped without
// being converted. A dotted field name ("properties.time") is a path into
// nested objects (an element of an array is reached by its index,
// "items.0.sku"); when the path finds nothing, a top-level member whose name
// is the whole dotted name is used. Of duplicate member names the first
// wins. Number literals of extracted fields are checked against the JSON
// grammar ("01", "1.", "NaN" are Rule "decode" errors); members that are
// skipped are only checked as far as fastjson's parser does (it accepts, for
// example, NaN and raw control characters in strings).
//
// Decoded strings are copied into the arena passed to Decode (the
// [source.Arena] of the batch the row belongs to): they stay valid across
// later calls to Decode, until that arena is Reset. After warm-up,
// decoding a record of strings, ints and decimals allocates nothing.
//
// # CSV
//
// [CSV] maps header columns to schema fields once ([NewCSV]); a record is a
// [CSVRecord], its fields already split and unquoted (the file source
// parses CSV). Strings are copied into the arena passed to Decode, so
// decoding allocates nothing.
//
// Decoders are not safe for concurrent use.
package format
