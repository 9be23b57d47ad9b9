package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestCheckConnect: check --connect asks the registry for the subject's
// level (NONE, weaker than the contract's BACKWARD: TM110 error) and
// reads the topic since the day after version 1's deprecated_after date
// (two v1 records produced after it, one before: TM111 warning naming
// two). Without --connect both rules say "not checked".
func TestCheckConnect(t *testing.T) {
	url, ids := paidRegistry(t, "orders-value")
	reg, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	if r := reg.SetCompatibility(context.Background(), sr.SetCompatibility{Level: sr.CompatNone}, "orders-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := strings.Join(c.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, r := range []struct {
		version int
		at      string
	}{{1, "2025-11-30"}, {1, "2026-01-05"}, {2, "2026-01-06"}, {1, "2026-02-01"}, {2, "2026-02-02"}} {
		text := []string{paidV1, paidV2}[r.version-1]
		b := binary.BigEndian.AppendUint32([]byte{0}, uint32(ids[r.version-1]))
		b, err := tavro.MustParse(text).AppendEncode(b, paidRecord(text, i))
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := time.Parse(time.DateOnly, r.at)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: b, Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	contract := strings.Replace(strings.Replace(paidContract, "%SUBJECT%", "orders-value", 1), `"2026-06-30"`, `"2025-12-31"`, 1)
	pipeline := fmt.Sprintf(`name: revenue
contract: contract.yaml
source:
  type: kafka
  brokers: [%s]
  topics: [orders]
  format: avro
  schema_registry: {url: "%s"}
event_time: {out_of_orderness: 2m, idle_timeout: 1m}
key: [currency]
window: {type: tumbling, size: 1m}
aggregates: {revenue: sum(amount)}
sinks: [{type: jsonl, path: out.jsonl}]
checkpoint: {dir: ck}
`, brokers, url)
	inDir(t, map[string]string{"contract.yaml": contract, "pipeline.yaml": pipeline})
	run := func(args ...string) (int, []map[string]string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"check", "pipeline.yaml", "--format", "json"}, args...), nil, &out, &errb)
		var fs []map[string]string
		if err := json.Unmarshal(out.Bytes(), &fs); err != nil {
			t.Fatalf("%v: %s%s", err, out.String(), errb.String())
		}
		var keep []map[string]string
		for _, f := range fs {
			if f["id"] == "TM110" || f["id"] == "TM111" {
				keep = append(keep, f)
			}
		}
		return code, keep
	}
	code, got := run("--connect")
	if code != 1 || len(got) != 2 {
		t.Fatalf("--connect: exit %d, findings %v", code, got)
	}
	if got[0]["id"] != "TM110" || got[0]["severity"] != "error" || !strings.HasPrefix(got[0]["why"], "subject orders-value has compatibility NONE in the registry, weaker than the BACKWARD contract order_paid promises") {
		t.Errorf("TM110: %v", got[0])
	}
	if got[1]["id"] != "TM111" || got[1]["severity"] != "warning" ||
		!strings.HasPrefix(got[1]["why"], "version 1 of subject orders-value, which contract order_paid deprecated after 2025-12-31, is still produced: 2 records since 2026-01-01") {
		t.Errorf("TM111: %v", got[1])
	}
	_, got = run()
	if len(got) != 2 || got[0]["severity"] != "info" || got[1]["severity"] != "info" {
		t.Errorf("without --connect: %v", got)
	}
}
