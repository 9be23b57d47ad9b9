package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/kafka"
)

// openTransactions returns the partitions of topic ("topic[p]: offsets
// lso–hwm") whose last stable offset (the read_committed end) is below
// their high watermark: an open transaction holds records back from
// read_committed readers there.
func openTransactions(ctx context.Context, cl *kgo.Client, topic string) ([]string, error) {
	adm := kadm.NewClient(cl)
	hw, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s: listing end offsets: %w", topic, err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s: listing last stable offsets: %w", topic, err)
	}
	var open []string
	hw.Each(func(h kadm.ListedOffset) {
		if h.Err != nil {
			return
		}
		if l, ok := lso.Lookup(h.Topic, h.Partition); ok && l.Err == nil && l.Offset < h.Offset {
			open = append(open, fmt.Sprintf("%s[%d]: offsets %d–%d", h.Topic, h.Partition, l.Offset, h.Offset))
		}
	})
	slices.Sort(open)
	return open, nil
}

// consumeRenderer returns, for --format avro or protobuf, the function
// turning a record's value into JSON through the registry — the Kafka
// source's decoder (kafka.RecordDecoder) and its rendering of records for
// side outputs — or nil for json. registrySet says --registry was given
// (an environment default applies only to the formats that use it).
func consumeRenderer(topic, valueFormat, registry, message string, registrySet bool) (func(context.Context, *kgo.Record) ([]byte, error), error) {
	switch valueFormat {
	case "", "json", "jsonl":
		if registrySet || message != "" {
			return nil, usageErr("--registry and --message: only with --format avro or protobuf")
		}
		return nil, nil
	case confluent.FormatAvro, confluent.FormatProtobuf:
	default:
		return nil, usageErr("--format %q: want json, avro or protobuf", valueFormat)
	}
	if registry == "" {
		return nil, usageErr("--format %s needs --registry URL (or $SCHEMA_REGISTRY_URL)", valueFormat)
	}
	var urls []string
	for _, u := range strings.Split(registry, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	reg, err := confluent.NewRegistry(confluent.RegistryConfig{URLs: urls})
	if err != nil {
		return nil, usageErr("--registry: %v", err)
	}
	dec, err := kafka.NewRecordDecoder(kafka.Config{Topics: []string{topic}, Fields: format.Fields{Schema: row.NewSchema()},
		Format: valueFormat, Registry: reg, Message: message})
	if err != nil {
		return nil, err
	}
	var b source.Batch
	return func(ctx context.Context, r *kgo.Record) ([]byte, error) {
		b.Reset()
		if err := dec.Append(ctx, r, 0, &b); err != nil {
			return nil, err
		}
		return dec.EventJSON(nil, &b.Meta[0]), nil
	}, nil
}

// newConsumeCmd is tidemark consume: a topic's committed records on
// stdout, for demos and checks.
func newConsumeCmd(stdout, stderr io.Writer) *cobra.Command {
	var topic string
	var brokers []string
	var final bool
	var timeout, idle time.Duration
	var valueFormat, registry, message string
	cmd := &cobra.Command{
		Use:   "consume --topic TOPIC [flags]",
		Short: "Print a Kafka topic's committed records, or with --final the newest row of each key (for demos and checks)",
		Long: `Print the records of a Kafka topic, read_committed (records of open or
aborted transactions are never shown), from the start of every partition
until no record came for --idle, one value per line on stdout. While a
partition has an open transaction (its last stable offset below its high
watermark: a producer that was killed holds it until the broker's
transaction timeout aborts it), it waits, up to --timeout, and says so on
stderr, so what it prints is never a table missing committed rows.

With --final the topic is read as tidemark's result rows (the kafka sink's
records: the key is window_start and the group key, the value a row with its
version): only the row with the highest version of each key is printed,
sorted by key — the result table the topic's changelog converges to. A
summary (records read, keys) goes to stderr.

With --format avro or protobuf the values are in the Confluent wire format
(a magic byte, a schema id, for Protobuf message indexes) and are printed
as JSON, each schema id's writer schema fetched from --registry (default
$SCHEMA_REGISTRY_URL) as the Kafka source does: Avro fields with RFC 3339
times and exact decimals, Protobuf messages as protojson, "_schema_id"
added; a value the schema cannot read is printed with "_raw_base64". A
registry that cannot be asked fails the command, naming it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return fmt.Errorf("--topic: required")
			}
			render, err := consumeRenderer(topic, valueFormat, registry, message, cmd.Flags().Changed("registry"))
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				return err
			}
			defer cl.Close()
			type row struct {
				version float64
				value   []byte
			}
			rows := map[string]row{}
			n := 0
			warned := false
			for {
				pctx, pcancel := context.WithTimeout(ctx, idle)
				fs := cl.PollFetches(pctx)
				pcancel()
				if ctx.Err() != nil {
					return fmt.Errorf("topic %s: still receiving records after %s", topic, timeout)
				}
				if fs.NumRecords() == 0 && pctx.Err() != nil {
					// Quiet for idle: read to the end — unless a partition
					// has an open transaction (its last stable offset below
					// its high watermark), whose records read_committed
					// cannot show yet: wait for it to commit or abort.
					open, err := openTransactions(ctx, cl, topic)
					if err != nil {
						return err
					}
					if len(open) == 0 {
						break
					}
					if !warned {
						fmt.Fprintf(stderr, "consume: waiting for open transactions on %s (the records after their last stable offset are neither committed nor aborted yet; a killed producer's transaction ends when the broker's transaction timeout aborts it)\n", strings.Join(open, ", "))
						warned = true
					}
					continue
				}
				for _, fe := range fs.Errors() {
					if pctx.Err() == nil || fe.Err != context.DeadlineExceeded {
						return fmt.Errorf("topic %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
					}
				}
				var rerr error
				fs.EachPartition(func(p kgo.FetchTopicPartition) {
					for _, r := range p.Records {
						if rerr != nil {
							return
						}
						if render != nil && r.Value != nil {
							if r.Value, rerr = render(ctx, r); rerr != nil {
								return
							}
						}
						n++
						if !final {
							fmt.Fprintf(stdout, "%s\n", r.Value)
							continue
						}
						var v struct {
							Version float64 `json:"version"`
						}
						if r.Value != nil && json.Unmarshal(r.Value, &v) != nil {
							continue
						}
						if cur, ok := rows[string(r.Key)]; !ok || v.Version >= cur.version {
							rows[string(r.Key)] = row{v.Version, r.Value}
						}
					}
				})
				if rerr != nil {
					return rerr
				}
			}
			if final {
				keys := make([]string, 0, len(rows))
				for k := range rows {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					if v := rows[k].value; v != nil {
						fmt.Fprintf(stdout, "%s\n", v)
					}
				}
				fmt.Fprintf(stderr, "consume: %d records of %s, %d keys\n", n, topic, len(rows))
				return nil
			}
			fmt.Fprintf(stderr, "consume: %d records of %s\n", n, topic)
			return nil
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the topic to read (required)")
	cmd.Flags().StringSliceVar(&brokers, "brokers", defaultBrokers(), "seed brokers, host:port (default $KAFKA_BROKERS, else tidemark dev-kafka's address)")
	cmd.Flags().BoolVar(&final, "final", false, "print only the newest row (highest version) of each key, sorted by key")
	cmd.Flags().DurationVar(&idle, "idle", time.Second, "stop once no record came for this long")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up when records still come after this")
	cmd.Flags().StringVar(&valueFormat, "format", "json", "record values: json (printed as they are), avro or protobuf (the Confluent wire format, printed as JSON through --registry)")
	cmd.Flags().StringVar(&registry, "registry", os.Getenv("SCHEMA_REGISTRY_URL"), "with --format avro or protobuf: the Schema Registry URL (default $SCHEMA_REGISTRY_URL)")
	cmd.Flags().StringVar(&message, "message", "", "with --format protobuf: the message type every value must be (default: any)")
	return cmd
}
