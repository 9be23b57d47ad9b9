// Package protobuf decodes Protobuf binary messages straight into
// tidemark's typed rows: a writer's message type (parsed from a registry
// schema's .proto text by Parse, found by Confluent's message indexes or
// by name) is compiled once against the pipeline's fields (a Reader,
// format.Projection, with a contract version's renames and defaults) into
// a Program that reads each wire field and either stores it into its row
// slot or skips it, as format/avro does for Avro records.
//
// In the data flow it sits below format/confluent, which picks the
// Program for each record's schema id, and above format and row; the
// Kafka source reaches it only through format/confluent.
package protobuf
