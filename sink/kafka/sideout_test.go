package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format/protobuf"
)

// sideRecords are one record of each kind as the engine writes them (in
// Seoul time), and what a reader of the Avro record finds.
func sideRecords() (late, quarantineFile, quarantineTopic, conflict []byte) {
	enc := changelog.NewEncoder(mustZone("Asia/Seoul"))
	late = enc.Late(nil, &changelog.LateRecord{Stage: "revenue", Event: []byte(`{"store":"FR", "amount":12.50}`),
		EventTime: t0, ObservedAt: t0 + 7_200_500, CurrentWatermark: t0 + 7_000_000, LatenessMs: 7_000_000,
		Reason: "too late", Position: changelog.Position{Source: "orders.jsonl", Line: 42, Offset: 4096}})
	quarantineFile = enc.Quarantine(nil, &changelog.QuarantineRecord{Stage: "revenue", Raw: []byte("{\"amount\":\"x\"}"),
		Reason: `field amount: want decimal, got "x"`, Field: "amount", Rule: "type",
		Position: changelog.Position{Source: "orders.jsonl", Line: 7, Offset: 311}})
	quarantineTopic = enc.Quarantine(nil, &changelog.QuarantineRecord{Stage: "revenue", Raw: []byte{0, 0, 0, 0, 9, 0xff},
		Reason: "schema id 9 is not in the schema registry", Rule: "schema",
		Position: changelog.Position{Source: "orders", Partition: "3", Offset: 17}})
	conflict = enc.Conflict(nil, &changelog.ConflictRecord{EventID: "e1", FirstPayloadHash: 0x9f0c0001, NewPayloadHash: 0x00000abc,
		NewPayload: []byte(`{"id":"e1","amount":3}`), EventTime: t0, ObservedAt: t0 + 1,
		Position: changelog.Position{Source: "orders", Partition: "0", Offset: 5}})
	return
}

func mustZone(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

// TestSideOutputsAvro: late, quarantine and conflict records become Avro
// records of their kind's schema, registered under <topic>-value at the
// first record; twmb/avro reads back every field.
func TestSideOutputsAvro(t *testing.T) {
	reg, cl := testRegistry(t)
	late, qf, qt, conflict := sideRecords()
	cases := []struct {
		kind string
		recs [][]byte
		want []map[string]string
	}{
		{"late", [][]byte{late}, []map[string]string{{
			"stage": "revenue", "event": `{"store":"FR","amount":12.50}`, "event_time": "2026-03-01T01:00:00Z",
			"observed_at": "2026-03-01T03:00:00.5Z", "current_watermark": "2026-03-01T02:56:40Z", "lateness_ms": "7000000",
			"reason": "too late", "source": "orders.jsonl:42"}}},
		{"quarantine", [][]byte{qf, qt}, []map[string]string{
			{"stage": "revenue", "raw": `{"amount":"x"}`, "raw_base64": "<nil>", "reason": `field amount: want decimal, got "x"`, "field": "amount", "rule": "type",
				"source": "map[file:orders.jsonl line:7 offset:311 partition:<nil> topic:<nil>]"},
			{"stage": "revenue", "raw": "\x00\x00\x00\x00\t\ufffd", "raw_base64": "AAAAAAn/", "reason": "schema id 9 is not in the schema registry", "field": "<nil>", "rule": "schema",
				"source": "map[file:<nil> line:<nil> offset:17 partition:3 topic:orders]"}}},
		{"conflict", [][]byte{conflict}, []map[string]string{{
			"event_id": "e1", "first_payload_hash": "9f0c0001", "first_payload": "<nil>", "new_payload_hash": "00000abc",
			"new_payload": `{"id":"e1","amount":3}`, "event_time": "2026-03-01T01:00:00Z", "observed_at": "2026-03-01T01:00:00.001Z",
			"source": "orders[0]@5"}}},
	}
	for _, c := range cases {
		topic := c.kind + "-topic"
		e, err := NewRecordEncoder(topic, encoding(reg, FormatAvro, 2))
		if err != nil {
			t.Fatal(err)
		}
		for i, obj := range c.recs {
			v, err := e.Encode(context.Background(), obj)
			if err != nil {
				t.Fatalf("%s %d: %v", c.kind, i, err)
			}
			ss, err := cl.SchemaByVersion(context.Background(), topic+"-value", 1)
			if err != nil {
				t.Fatal(err)
			}
			if v[0] != 0 || int(binary.BigEndian.Uint32(v[1:5])) != ss.ID {
				t.Fatalf("%s: header % x, want id %d", c.kind, v[:5], ss.ID)
			}
			s, err := tavro.Parse(ss.Schema.Schema)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if rest, err := s.Decode(v[5:], &m); err != nil || len(rest) != 0 {
				t.Fatalf("%s: %v, %d bytes left", c.kind, err, len(rest))
			}
			got := map[string]string{}
			for k, x := range m {
				got[k] = sideText(x)
			}
			if !reflect.DeepEqual(got, c.want[i]) {
				t.Errorf("%s %d:\n got %v\nwant %v", c.kind, i, got, c.want[i])
			}
		}
		// Another kind on the same topic is refused.
		other := late
		if c.kind == "late" {
			other = conflict
		}
		if _, err := e.Encode(context.Background(), other); err == nil || !strings.Contains(err.Error(), "but the topic receives "+c.kind+" records") {
			t.Errorf("%s topic, other kind: %v", c.kind, err)
		}
	}
}

// sideText renders a value twmb/avro decoded.
func sideText(x any) string {
	switch v := x.(type) {
	case map[string]any:
		keys := []string{"file", "line", "offset", "partition", "topic"}
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+":"+sideText(v[k]))
		}
		return "map[" + strings.Join(parts, " ") + "]"
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	}
	return generic(x)
}

// TestSideOutputsProtobuf: the same records as Protobuf messages, read
// back with protobuf-go's dynamicpb.
func TestSideOutputsProtobuf(t *testing.T) {
	reg, cl := testRegistry(t)
	late, _, qt, _ := sideRecords()
	for _, c := range []struct {
		kind string
		obj  []byte
		want string
	}{
		{"late", late, `{"stage":"revenue","event":"{\"store\":\"FR\",\"amount\":12.50}","eventTime":"2026-03-01T01:00:00Z","observedAt":"2026-03-01T03:00:00.500Z","currentWatermark":"2026-03-01T02:56:40Z","latenessMs":"7000000","reason":"too late","source":"orders.jsonl:42"}`},
		{"quarantine", qt, `{"stage":"revenue","raw":"\u0000\u0000\u0000\u0000\t�","rawBase64":"AAAAAAn/","reason":"schema id 9 is not in the schema registry","rule":"schema","source":{"topic":"orders","partition":"3","offset":"17"}}`},
	} {
		topic := c.kind + "-pb"
		e, err := NewRecordEncoder(topic, encoding(reg, FormatProtobuf, 2))
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.Encode(context.Background(), c.obj)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := cl.SchemaByVersion(context.Background(), topic+"-value", 1)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := protobuf.Parse(context.Background(), "x.proto", ss.Schema.Schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		msg := dynamicpb.NewMessage(fd.Messages().Get(0))
		if err := proto.Unmarshal(v[6:], msg); err != nil {
			t.Fatal(err)
		}
		if got := protoJSON(t, msg); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.kind, got, c.want)
		}
	}
}

// TestSideOutputRefusals: an object of no known kind is refused, naming
// its keys; JSON passes through untouched.
func TestSideOutputRefusals(t *testing.T) {
	reg, _ := testRegistry(t)
	e, _ := NewRecordEncoder("x", encoding(reg, FormatAvro, 2))
	if _, err := e.Encode(context.Background(), []byte(`{"a":1,"b":2}`)); err == nil ||
		err.Error() != "side-output record for topic x: keys [a, b] are those of no late, quarantine or conflict record" {
		t.Errorf("unknown object: %v", err)
	}
	j, _ := NewRecordEncoder("x", Encoding{})
	in := []byte(`{"anything":true}`)
	if out, err := j.Encode(context.Background(), in); err != nil || string(out) != string(in) {
		t.Errorf("json: %s %v", out, err)
	}
}

// protoJSON renders msg with protojson, compacted (protojson varies its
// spacing on purpose).
func protoJSON(t *testing.T, msg proto.Message) string {
	b, err := protojson.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
