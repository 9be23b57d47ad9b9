// Package avro decodes Avro binary records straight into tidemark's typed
// rows: a writer's schema (from a Schema Registry, by schema id) is
// compiled once against the pipeline's fields (format.Projection: the
// reader's side of Avro's schema resolution, with a contract version's
// renames and defaults) into a Program, a flat list of ops that reads each
// writer field in order and either stores it into its row slot or skips
// it. Decoding allocates nothing, reflects on nothing and boxes nothing.
//
// # Conversions
//
//	field kind  Avro writer types
//	string      string, bytes (valid UTF-8, no NUL), enum (the symbol), int, long, float, double, boolean (as text), decimal (plain text)
//	int         int, long; float, double with a whole value
//	decimal     decimal (bytes or fixed, scale ≤ 19) exactly; int, long; float, double by their shortest text ("0.1")
//	bool        boolean; string, enum "true"/"false"
//	timestamp   long timestamp-millis, -micros, -nanos (floored to ms); int date (midnight UTC); string by the field's parser; int, long with event_time format epoch_ms or epoch_s
//
// Unions read their branch: null leaves the field null. A writer field
// whose type cannot give its field's kind (a record, an array or map, a
// boolean into an int) is a per-record type error naming both, and the
// record's other fields are still read. A pipeline field the writer's
// schema lacks is null (or its Projection default). Nested records are
// reached by dotted names ("meta.seq"); arrays and maps are skipped.
//
// # Safety
//
// Every length, count and index is checked against the bytes left before
// it is used: a length field never makes the decoder allocate or read
// past the end; arrays of zero-width items cost no loop; data nested
// deeper than 256 levels (recursive types) is refused. Record problems
// are *source.DecodeError values with a byte offset; Decode never panics
// (FuzzDecode checks it against twmb/avro).
//
// # Why not a library's decoder
//
// github.com/twmb/avro parses the schemas (Parse, SchemaCache for
// references, Root for the tree this package compiles, CheckCompatibility
// for the development registry) and is the fuzz reference; its own Decode
// fills Go values by reflection. Measured on the Online Retail lines
// (format/confluent's BenchmarkRetailDecode, 2 cores, medians of 5):
// twmb/avro into a struct 514 ns and 13 allocations per record; this
// package 129 ns and none (JSON through package format: 271 ns).
// hamba/avro decodes by reflection too, into structs or maps. Neither can
// write into a row's slots, so tidemark compiles its own reader.
package avro
