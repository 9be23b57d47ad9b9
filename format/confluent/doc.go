// Package confluent is the Confluent Schema Registry wire format (a zero
// magic byte, a 4-byte big-endian schema id, for Protobuf the message
// indexes, then the Avro or Protobuf binary record): a cached registry
// client (Registry, over github.com/twmb/franz-go/pkg/sr), the Decoder
// that finds each record's writer schema by its id and decodes it with a
// program compiled once per id by format/avro or format/protobuf, the
// JSON rendering of such records for side outputs (Renderer), and the
// writing half the Kafka sink and `tidemark produce` use (Register,
// AppendHeader, AppendIndexes).
//
// In the data flow it sits between the connectors and the row decoders:
// source/kafka calls a Decoder per record value, sink/kafka registers its
// output schemas and writes the header, source/file renders Avro files'
// records with AppendAvroJSON; it reaches down to
// format/avro, format/protobuf, format and row, and never up to the
// engine.
package confluent
