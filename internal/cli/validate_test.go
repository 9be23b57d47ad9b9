package cli

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/datatest"
)

// orderContract is the order-event contract of docs/contracts.md.
const orderContract = "../../contract/testdata/order_item_event.yaml"

// orderEvents are the articles' order events with one of every problem:
// a redelivery that differs only in produced_at (delivery metadata: a
// duplicate), one with another amount (a conflict), a negative payment, a
// producer clock two days ahead, a 43-day-old event, a line that is not
// JSON, a timestamp without an offset, and missing fields.
const orderEvents = `{"event_id":"e100","event_type":"PAYMENT","order_id":"O1","store_id":"store-7","amount":25000,"currency":"KRW","paid_at":"2026-09-01T10:02:00+09:00","produced_at":"2026-09-01T10:02:02+09:00","version":1}
{"event_id":"e101","event_type":"REFUND","order_id":"O1","store_id":"store-7","amount":-5000,"currency":"KRW","paid_at":"2026-09-01T10:05:00+09:00","produced_at":"2026-09-01T10:20:00+09:00","version":2}
{"event_id":"e101","event_type":"REFUND","order_id":"O1","store_id":"store-7","amount":-5000,"currency":"KRW","paid_at":"2026-09-01T10:05:00+09:00","produced_at":"2026-09-01T10:21:00+09:00","version":2}
{"event_id":"e101","event_type":"REFUND","order_id":"O1","store_id":"store-7","amount":-8000,"currency":"KRW","paid_at":"2026-09-01T10:05:00+09:00","produced_at":"2026-09-01T10:22:00+09:00","version":2}
{"event_id":"e102","event_type":"PAYMENT","order_id":"O2","store_id":"store-7","amount":-8000,"currency":"KRW","paid_at":"2026-09-01T10:06:00+09:00","produced_at":"2026-09-01T10:06:01+09:00","version":1}
{"event_id":"e103","event_type":"PAYMENT","order_id":"O3","store_id":"store-8","amount":1000,"currency":"KRW","paid_at":"2026-09-03T10:00:00+09:00","produced_at":"2026-09-01T10:00:00+09:00","version":1}
{"event_id":"e104","event_type":"PAYMENT","order_id":"O4","store_id":"store-8","amount":1000,"currency":"KRW","paid_at":"2026-07-20T10:00:00+09:00","produced_at":"2026-09-01T10:00:00+09:00","version":1}
not json
{"event_id":"e105","event_type":"PAYMENT","order_id":"O5","amount":1000,"currency":"KRW","paid_at":"2026-09-01T10:05:10","produced_at":"2026-09-01T10:06:00+09:00","version":1}
{"event_id":"e106","event_type":"PAYMENT","amount":1000,"currency":"KRW","paid_at":"2026-09-01T10:07:00+09:00","produced_at":"2026-09-01T10:07:01+09:00"}
{"event_id":"e107","event_type":"PAYMENT","order_id":"O7","amount":1000,"currency":"KRW","paid_at":"2026-09-01T10:08:00+09:00"}
{"event_type":"PAYMENT","order_id":"O8","amount":1000,"currency":"KRW","paid_at":"2026-09-01T10:09:00+09:00","produced_at":"2026-09-01T10:09:00+09:00"}
`

const orderReportText = `contract order_item_event (schema_version 3, owner order domain)
data events.jsonl

records
  read         12
  not decoded  2
    events.jsonl:8: invalid JSON at byte 2: invalid character 'o' in literal null (expecting 'u')
    events.jsonl:9: field paid_at: timestamp has no UTC offset: "2026-09-01T10:05:10"
  checked      10

fields (null or missing)
  event_id     string     required  1 (10.0000%)
  event_type   string     required  0 (0.0000%)
  order_id     string     required  1 (10.0000%)
  store_id     string               3 (30.0000%)
  amount       decimal    required  0 (0.0000%)
  currency     string               0 (0.0000%)
  paid_at      timestamp  required  0 (0.0000%)
  produced_at  timestamp            1 (10.0000%)
  version      int                  3 (30.0000%)

event ids (event_id)
  without an id  1
  duplicate ids  2 (20.0000%)
  conflicts      1 ids, 1 records
    e101: first events.jsonl:2, then events.jsonl:4

arrival within 24h  8 of 9 (88.8889%)

rules
  event_id_required                FAIL  1 of 10 (10.0000%), max 0.0000%
    events.jsonl:12: required field event_id is null or missing
  event_type_required              PASS  0 of 10 (0.0000%), max 0.0000%
  order_id_required                FAIL  1 of 10 (10.0000%), max 0.0000%
    events.jsonl:10: required field order_id is null or missing
  amount_required                  PASS  0 of 10 (0.0000%), max 0.0000%
  paid_at_required                 PASS  0 of 10 (0.0000%), max 0.0000%
  not_in_future                    FAIL  1 of 9 (11.1111%), max 0.0000%
    events.jsonl:6: event time 2026-09-03T01:00:00Z is 48h0m0s after its arrival 2026-09-01T01:00:00Z; max_future is 24h0m0s
  not_older_than_30d               FAIL  1 of 9 (11.1111%), max 0.0000%
    events.jsonl:7: event time 2026-07-20T01:00:00Z is 1032h0m0s before its arrival 2026-09-01T01:00:00Z; max_age is 720h0m0s
  produced_after_paid              FAIL  2 of 10 (20.0000%), max 0.0000%
    events.jsonl:6: check is false: produced_at >= paid_at (produced_at=2026-09-01T01:00:00Z, paid_at=2026-09-03T01:00:00Z)
    events.jsonl:11: check is null, which is not true: produced_at >= paid_at (produced_at=null, paid_at=2026-09-01T01:08:00Z)
  negative_amount_only_for_refund  FAIL  1 of 10 (10.0000%), max 0.0000%
    events.jsonl:5: check is false: amount >= 0 or event_type == "REFUND" (amount=-8000, event_type="PAYMENT")

thresholds
  max_null_rate.event_id  FAIL  0.1, at most 0
  max_null_rate.order_id  FAIL  0.1, at most 0
  max_duplicate_id_rate   FAIL  0.2, at most 0.01
  max_conflicts           FAIL  1, at most 0
  min_arrival_within_24h  FAIL  0.8888888888888888, at least 0.999

result FAIL
  not decoded: 2 records failed to decode or have no event time (the contract admits none)
  rule event_id_required: violation rate 10.0000% (1 of 10) is above max_violation_rate 0.0000%
  rule order_id_required: violation rate 10.0000% (1 of 10) is above max_violation_rate 0.0000%
  rule not_in_future: violation rate 11.1111% (1 of 9) is above max_violation_rate 0.0000%
  rule not_older_than_30d: violation rate 11.1111% (1 of 9) is above max_violation_rate 0.0000%
  rule produced_after_paid: violation rate 20.0000% (2 of 10) is above max_violation_rate 0.0000%
  rule negative_amount_only_for_refund: violation rate 10.0000% (1 of 10) is above max_violation_rate 0.0000%
  max_null_rate.event_id: 0.1, want at most 0
  max_null_rate.order_id: 0.1, want at most 0
  max_duplicate_id_rate: 0.2, want at most 0.01
  max_conflicts: 1, want at most 0
  min_arrival_within_24h: 0.8888888888888888, want at least 0.999
`

const orderReportJSON = `{"contract":{"product":"order_item_event","schema_version":"3","owner":"order domain"},"data":["events.jsonl"],` +
	`"records":{"read":12,"not_decoded":2,"checked":10,"not_decoded_examples":[{"source":"events.jsonl:8","reason":"invalid JSON at byte 2: invalid character 'o' in literal null (expecting 'u')"},{"source":"events.jsonl:9","reason":"field paid_at: timestamp has no UTC offset: \"2026-09-01T10:05:10\""}]},"schema_versions":null,` +
	`"fields":[{"name":"event_id","type":"string","required":true,"nulls":1,"null_rate":0.1},{"name":"event_type","type":"string","required":true,"nulls":0,"null_rate":0},{"name":"order_id","type":"string","required":true,"nulls":1,"null_rate":0.1},{"name":"store_id","type":"string","required":false,"nulls":3,"null_rate":0.3},{"name":"amount","type":"decimal","required":true,"nulls":0,"null_rate":0},{"name":"currency","type":"string","required":false,"nulls":0,"null_rate":0},{"name":"paid_at","type":"timestamp","required":true,"nulls":0,"null_rate":0},{"name":"produced_at","type":"timestamp","required":false,"nulls":1,"null_rate":0.1},{"name":"version","type":"int","required":false,"nulls":3,"null_rate":0.3}],` +
	`"event_ids":{"event_id":"event_id","without_id":1,"duplicates":2,"duplicate_rate":0.2,"conflict_ids":1,"conflict_records":1,"conflict_examples":[{"id":"e101","first":"events.jsonl:2","second":"events.jsonl:4"}]},` +
	`"arrival_within_24h":{"checked":9,"within":8,"ratio":0.8888888888888888},` +
	`"rules":[{"name":"event_id_required","kind":"required","field":"event_id","status":"fail","note":"","checked":10,"violations":1,"rate":0.1,"max_violation_rate":0,"examples":[{"source":"events.jsonl:12","reason":"required field event_id is null or missing"}]},` +
	`{"name":"event_type_required","kind":"required","field":"event_type","status":"pass","note":"","checked":10,"violations":0,"rate":0,"max_violation_rate":0,"examples":[]},` +
	`{"name":"order_id_required","kind":"required","field":"order_id","status":"fail","note":"","checked":10,"violations":1,"rate":0.1,"max_violation_rate":0,"examples":[{"source":"events.jsonl:10","reason":"required field order_id is null or missing"}]},` +
	`{"name":"amount_required","kind":"required","field":"amount","status":"pass","note":"","checked":10,"violations":0,"rate":0,"max_violation_rate":0,"examples":[]},` +
	`{"name":"paid_at_required","kind":"required","field":"paid_at","status":"pass","note":"","checked":10,"violations":0,"rate":0,"max_violation_rate":0,"examples":[]},` +
	`{"name":"not_in_future","kind":"max_future","field":"paid_at","status":"fail","note":"","checked":9,"violations":1,"rate":0.1111111111111111,"max_violation_rate":0,"examples":[{"source":"events.jsonl:6","reason":"event time 2026-09-03T01:00:00Z is 48h0m0s after its arrival 2026-09-01T01:00:00Z; max_future is 24h0m0s"}]},` +
	`{"name":"not_older_than_30d","kind":"max_age","field":"paid_at","status":"fail","note":"","checked":9,"violations":1,"rate":0.1111111111111111,"max_violation_rate":0,"examples":[{"source":"events.jsonl:7","reason":"event time 2026-07-20T01:00:00Z is 1032h0m0s before its arrival 2026-09-01T01:00:00Z; max_age is 720h0m0s"}]},` +
	`{"name":"produced_after_paid","kind":"check","field":"","status":"fail","note":"","checked":10,"violations":2,"rate":0.2,"max_violation_rate":0,"examples":[{"source":"events.jsonl:6","reason":"check is false: produced_at >= paid_at (produced_at=2026-09-01T01:00:00Z, paid_at=2026-09-03T01:00:00Z)"},{"source":"events.jsonl:11","reason":"check is null, which is not true: produced_at >= paid_at (produced_at=null, paid_at=2026-09-01T01:08:00Z)"}]},` +
	`{"name":"negative_amount_only_for_refund","kind":"check","field":"","status":"fail","note":"","checked":10,"violations":1,"rate":0.1,"max_violation_rate":0,"examples":[{"source":"events.jsonl:5","reason":"check is false: amount >= 0 or event_type == \"REFUND\" (amount=-8000, event_type=\"PAYMENT\")"}]}],` +
	`"thresholds":[{"name":"max_null_rate.event_id","limit":0,"value":0.1,"status":"fail"},{"name":"max_null_rate.order_id","limit":0,"value":0.1,"status":"fail"},{"name":"max_duplicate_id_rate","limit":0.01,"value":0.2,"status":"fail"},{"name":"max_conflicts","limit":0,"value":1,"status":"fail"},{"name":"min_arrival_within_24h","limit":0.999,"value":0.8888888888888888,"status":"fail"}],` +
	`"failures":["not decoded: 2 records failed to decode or have no event time (the contract admits none)","rule event_id_required: violation rate 10.0000% (1 of 10) is above max_violation_rate 0.0000%","rule order_id_required: violation rate 10.0000% (1 of 10) is above max_violation_rate 0.0000%","rule not_in_future: violation rate 11.1111% (1 of 9) is above max_violation_rate 0.0000%","rule not_older_than_30d: violation rate 11.1111% (1 of 9) is above max_violation_rate 0.0000%","rule produced_after_paid: violation rate 20.0000% (2 of 10) is above max_violation_rate 0.0000%","rule negative_amount_only_for_refund: violation rate 10.0000% (1 of 10) is above max_violation_rate 0.0000%","max_null_rate.event_id: 0.1, want at most 0","max_null_rate.order_id: 0.1, want at most 0","max_duplicate_id_rate: 0.2, want at most 0.01","max_conflicts: 1, want at most 0","min_arrival_within_24h: 0.8888888888888888, want at least 0.999"],` +
	`"pass":false}
`

// inDir writes files into a new temporary directory and makes it the
// working directory for the rest of the test.
func inDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestValidateOrderEvents: every part of the report, in text and JSON, on
// the articles' order events.
func TestValidateOrderEvents(t *testing.T) {
	inDir(t, map[string]string{"contract.yaml": readFile(t, orderContract), "events.jsonl": orderEvents})
	code, out, errOut := run(t, "validate", "--contract", "contract.yaml", "events.jsonl")
	if code != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if out != orderReportText {
		t.Errorf("text report:\n%s\nwant:\n%s", out, orderReportText)
	}
	if want := "tidemark: validate: the data fails contract order_item_event: 12 failures (listed at the end of the report)\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	code, out, _ = run(t, "validate", "--contract", "contract.yaml", "--format", "json", "events.jsonl")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if out != orderReportJSON {
		t.Errorf("JSON report:\n%s\nwant:\n%s", out, orderReportJSON)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
}

const retailContract = `product: retail_lines
owner: test
schema_version: "1"
fields:
  InvoiceNo: {type: string, required: true}
  Quantity: {type: int, required: true}
  InvoiceDate: timestamp
  UnitPrice: decimal
  CustomerID: string
event_id: InvoiceNo + "-" + string(line_no)
event_time: {field: InvoiceDate, layout: "2006-01-02 15:04:05", timezone: Europe/London}
rules:
  - {name: quantity_sign, check: 'Quantity >= 0 or InvoiceNo startsWith "C"', max_violation_rate: 0.5}
  - {name: not_in_future, max_future: 24h}
quality:
  max_null_rate: {CustomerID: 0.5, InvoiceNo: 0}
  max_duplicate_id_rate: 0
  max_conflicts: 0
`

const retailHeader = "InvoiceNo,StockCode,Description,Quantity,InvoiceDate,UnitPrice,CustomerID,Country\n"

var retailFiles = map[string]string{
	"contract.yaml": retailContract,
	"data/2010-12-01.csv": retailHeader +
		`536365,85123A,"HEART, WHITE",6,2010-12-01 08:26:00,2.55,17850.0,United Kingdom` + "\n" +
		"536365,71053,LANTERN,6,2010-12-01 08:26:00,3.39,,United Kingdom\n" +
		"C536379,D,Discount,-1,2010-12-01 09:41:00,27.50,14527.0,United Kingdom\n",
	"data/2010-12-02.csv": retailHeader +
		"536380,22961,JAM,-3,2010-12-02 09:00:00,1.45,,United Kingdom\n" +
		"536381,22962,JAR,2,2010-12-02 09:01:00,0.85,17850.0,France\n",
}

const retailReportText = `contract retail_lines (schema_version 1, owner test)
data data

records
  read         5
  not decoded  0
  checked      5

fields (null or missing)
  InvoiceNo    string     required  0 (0.0000%)
  Quantity     int        required  0 (0.0000%)
  InvoiceDate  timestamp            0 (0.0000%)
  UnitPrice    decimal              0 (0.0000%)
  CustomerID   string               2 (40.0000%)

event ids (InvoiceNo + "-" + string(line_no))
  without an id  0
  duplicate ids  0 (0.0000%)
  conflicts      0 ids, 0 records

arrival within 24h  n/a (no ingest_time)

rules
  InvoiceNo_required  PASS  0 of 5 (0.0000%), max 0.0000%
  Quantity_required   PASS  0 of 5 (0.0000%), max 0.0000%
  quantity_sign       PASS  1 of 5 (20.0000%), max 50.0000%
    data/2010-12-02.csv:2: check is false: Quantity >= 0 or InvoiceNo startsWith "C" (Quantity=-3, InvoiceNo="536380")
  not_in_future       not checked (no ingest_time)

thresholds
  max_null_rate.InvoiceNo   PASS  0, at most 0
  max_null_rate.CustomerID  PASS  0.4, at most 0.5
  max_duplicate_id_rate     PASS  0, at most 0
  max_conflicts             PASS  0, at most 0

result PASS
`

// TestValidateCSVPasses: a CSV directory (format from the files' names),
// the ordinal in the event id, a rule within its max_violation_rate, a
// time rule without ingest_time: exit 0.
func TestValidateCSVPasses(t *testing.T) {
	inDir(t, retailFiles)
	code, out, errOut := run(t, "validate", "--contract", "contract.yaml", "--ordinal", "line_no:InvoiceNo", "data")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if out != retailReportText {
		t.Errorf("text report:\n%s\nwant:\n%s", out, retailReportText)
	}
	// A glob and the file list read the same records.
	for _, args := range [][]string{{"data/*.csv"}, {"data/*"}, {"data/2010-12-01.csv", "data/2010-12-02.csv"}, {"--data-format", "csv", "data"}} {
		code, out, _ := run(t, append([]string{"validate", "--contract", "contract.yaml", "--ordinal", "line_no:InvoiceNo", "--format", "json"}, args...)...)
		var rep Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("%q: exit %d, %v", args, code, err)
		}
		if rep.Records.Read != 5 || rep.Rules[2].Violations != 1 || !rep.Pass {
			t.Fatalf("%q: %+v", args, rep)
		}
	}
}

// TestValidateExpandsData: DATA expands ${VAR} and ${VAR:-default} as a
// pipeline file does ('${TIDEMARK_DATA}/online-retail/by-day' in the
// README), reading the records of the directory it names; an unset
// ${VAR} is a usage error naming it.
func TestValidateExpandsData(t *testing.T) {
	inDir(t, retailFiles)
	t.Setenv("TIDEMARK_TEST_VALIDATE_DIR", "data")
	for arg, shown := range map[string]string{"${TIDEMARK_TEST_VALIDATE_DIR}": "data", "${TIDEMARK_TEST_VALIDATE_NONE:-data}/*.csv": "data/*.csv"} {
		code, out, errOut := run(t, "validate", "--contract", "contract.yaml", "--ordinal", "line_no:InvoiceNo", arg)
		// The report names the data as expanded.
		if want := strings.Replace(retailReportText, "\ndata data\n", "\ndata "+shown+"\n", 1); code != 0 || errOut != "" || out != want {
			t.Fatalf("%s: exit %d, stderr %q\n%s", arg, code, errOut, out)
		}
	}
	code, _, errOut := run(t, "validate", "--contract", "contract.yaml", "${TIDEMARK_TEST_VALIDATE_NONE}/x.csv")
	if want := "tidemark: validate: DATA \"${TIDEMARK_TEST_VALIDATE_NONE}/x.csv\": "; code != 2 || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "TIDEMARK_TEST_VALIDATE_NONE") {
		t.Fatalf("exit %d, stderr %q, want %q…", code, errOut, want)
	}
}

// TestValidateDataFormatFlag: --data-format reads a file whose name says
// nothing; the event time may be undeclared and epoch_ms.
func TestValidateDataFormatFlag(t *testing.T) {
	inDir(t, map[string]string{
		"contract.yaml": "product: p\nowner: o\nschema_version: \"1\"\nfields: {id: string}\nevent_id: id\nevent_time: {field: ts, format: epoch_ms}\n",
		"events.log":    `{"id":"a","ts":1}` + "\n" + `{"id":"a","ts":1}` + "\n" + `{"id":"b"}` + "\n",
	})
	code, out, errOut := run(t, "validate", "--contract", "contract.yaml", "--data-format", "jsonl", "--format", "json", "events.log")
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d, %v, stderr %q", code, err, errOut)
	}
	// The record without an event time is not decoded (and fails).
	if code != 1 || !reflect.DeepEqual(rep.Records, recordCounts{Read: 3, NotDecoded: 1, Checked: 2,
		NotDecodedExamples: []example{{Source: "events.log:3", Reason: "event-time field ts is null or missing"}}}) ||
		rep.EventIDs.Duplicates != 1 || rep.EventIDs.ConflictIDs != 0 || len(rep.Failures) != 1 {
		t.Fatalf("exit %d, %+v", code, rep)
	}
}

// TestValidateMissingColumns: an event id over a field the data lacks is
// a usage error with a hint (exit 2); a CSV header without a contract
// field is data that breaks the contract (exit 1).
func TestValidateMissingColumns(t *testing.T) {
	files := map[string]string{"other/a.csv": "InvoiceNo,Quantity,InvoiceDate,UnitPrice\n1,1,2010-12-01 08:26:00,1.00\n"}
	for k, v := range retailFiles {
		files[k] = v
	}
	inDir(t, files)
	code, out, errOut := run(t, "validate", "--contract", "contract.yaml", "--ordinal", "line_no:InvoiceNo", "other")
	if want := `tidemark: other/a.csv: no column "CustomerID" in CSV header ["InvoiceNo" "Quantity" "InvoiceDate" "UnitPrice"]` + "\n"; code != 1 || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, want)
	}
	code, out, errOut = run(t, "validate", "--contract", "contract.yaml", "data")
	want := `tidemark: data/2010-12-01.csv: no column "line_no" in CSV header ["InvoiceNo" "StockCode" "Description" "Quantity" "InvoiceDate" "UnitPrice" "CustomerID" "Country"] (event_id reads line_no, which the contract does not declare: if it numbers records, give --ordinal line_no:FIELD)` + "\n"
	if code != 2 || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, want)
	}
}

func TestValidateUsageErrors(t *testing.T) {
	inDir(t, map[string]string{
		"contract.yaml": retailContract,
		"bad.yaml":      "product: p\n",
		"kind.yaml":     strings.Replace(retailContract, `'Quantity >= 0 or InvoiceNo startsWith "C"'`, `'Quantity startsWith "C"'`, 1),
		"mixed/a.csv":   retailHeader,
		"mixed/b.jsonl": "",
		"events.txt":    "",
		"data/a.csv":    retailHeader,
	})
	if err := os.Mkdir("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // the first line of stderr
	}{
		{[]string{"validate", "data"}, "tidemark: validate: --contract is required"},
		{[]string{"validate", "--contract", "contract.yaml"}, "tidemark: validate: give DATA files (or --topic TOPIC)"},
		{[]string{"validate", "--contract", "contract.yaml", "--format", "xml", "data"}, `tidemark: validate: --format "xml": want text or json`},
		{[]string{"validate", "--contract", "contract.yaml", "--data-format", "parquet", "data"}, `tidemark: validate: --data-format "parquet": want jsonl, csv or avro (with --topic: jsonl, avro or protobuf)`},
		{[]string{"validate", "--contract", "contract.yaml", "--ordinal", ":InvoiceNo", "data"}, `tidemark: validate: --ordinal ":InvoiceNo": want FIELD:PER or FIELD`},
		{[]string{"validate", "--contract", "contract.yaml", "--topic", "orders", "data"}, "tidemark: validate: give DATA files or --topic, not both"},
		{[]string{"validate", "--contract", "contract.yaml", "--topic", "orders", "--ordinal", "line_no"}, "tidemark: validate: --ordinal numbers the records of files; Kafka records have offsets"},
		{[]string{"validate", "--contract", "contract.yaml", "--topic", "orders", "--data-format", "csv"}, "tidemark: validate: --data-format csv: Kafka records are jsonl, avro or protobuf"},
		{[]string{"validate", "--contract", "contract.yaml", "--data-format", "protobuf", "data"}, "tidemark: validate: --data-format protobuf: only with --topic (files are jsonl, csv or avro)"},
		{[]string{"validate", "--contract", "bad.yaml", "data"}, "tidemark: bad.yaml: owner: required"},
		{[]string{"validate", "--contract", "nowhere.yaml", "data"}, "tidemark: open nowhere.yaml: no such file or directory"},
		{[]string{"validate", "--contract", "kind.yaml", "--ordinal", "line_no:InvoiceNo", "data"}, "tidemark: kind.yaml: rule quantity_sign: check: "},
		{[]string{"validate", "--contract", "contract.yaml", "--ordinal", "InvoiceNo", "data"}, `tidemark: contract.yaml: --ordinal: field "InvoiceNo" is declared string in the contract; an ordinal is an int`},
		{[]string{"validate", "--contract", "contract.yaml", "missing"}, `tidemark: no files match "missing": does not exist`},
		{[]string{"validate", "--contract", "contract.yaml", "missing/*.csv"}, `tidemark: no files match "missing/*.csv": no file matches the pattern`},
		{[]string{"validate", "--contract", "contract.yaml", "missing/*"}, `tidemark: no files match "missing/*": no file matches the pattern`},
		{[]string{"validate", "--contract", "contract.yaml", "empty"}, `tidemark: no files match "empty": directory has no files`},
		{[]string{"validate", "--contract", "contract.yaml", "mixed"}, "tidemark: mixed: cannot tell the format (jsonl, csv, avro) by the file names: give --data-format"},
		{[]string{"validate", "--contract", "contract.yaml", "events.txt"}, "tidemark: events.txt: cannot tell the format (jsonl, csv, avro) by the name: give --data-format"},
	} {
		code, out, errOut := run(t, tc.args...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != 2 || out != "" || !strings.HasPrefix(first, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant exit 2 and\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
}

// retailTruth is an independent recomputation of the report's figures
// over the raw CSV files (encoding/csv, math/big).
type retailTruth struct {
	read, quantitySign, negativePrice int64
	nulls                             map[string]int64
	duplicates, conflictIDs           int64
	conflictRecords                   int64
}

func retailRecompute(t *testing.T, dir string) retailTruth {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files: %v", err)
	}
	sort.Strings(files)
	tr := retailTruth{nulls: map[string]int64{}}
	first := map[string]string{} // id -> the whole first record
	conflicted := map[string]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		r := csv.NewReader(fh)
		header, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		perInvoice := map[string]int{} // the ordinal: lines of each invoice in this file so far
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			tr.read++
			col := map[string]string{}
			for i, h := range header {
				col[h] = rec[i]
				if rec[i] == "" {
					tr.nulls[h]++
				}
			}
			q, err := strconv.ParseInt(col["Quantity"], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if q < 0 && !strings.HasPrefix(col["InvoiceNo"], "C") {
				tr.quantitySign++
			}
			price, ok := new(big.Rat).SetString(col["UnitPrice"])
			if !ok {
				t.Fatalf("price %q", col["UnitPrice"])
			}
			if price.Sign() < 0 {
				tr.negativePrice++
			}
			// The line's position within its run of equal invoice numbers.
			perInvoice[col["InvoiceNo"]]++
			n := perInvoice[col["InvoiceNo"]]
			id := col["InvoiceNo"] + "-" + strconv.Itoa(n)
			whole := strings.Join(rec, "\x00")
			if f, seen := first[id]; !seen {
				first[id] = whole
			} else {
				tr.duplicates++
				if f != whole {
					tr.conflictRecords++
					if !conflicted[id] {
						conflicted[id] = true
						tr.conflictIDs++
					}
				}
			}
		}
		fh.Close()
	}
	return tr
}

// TestValidateRetailData runs validate over the whole UCI Online Retail
// data with the example contract, and checks every figure against an
// independent pass over the CSV files.
func TestValidateRetailData(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 541,909 records")
	}
	data := filepath.Join(datatest.Dir(t), "online-retail", "by-day")
	contractPath, err := filepath.Abs("../../examples/online-retail/contract.yaml")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "validate", "--contract", contractPath, "--ordinal", "line_no:InvoiceNo", "--format", "json", data)
	if code != 0 {
		t.Fatalf("exit %d (the data breaks quantity_sign and unit_price_not_negative, within their max_violation_rate), stderr %q", code, errOut)
	}
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tr := retailRecompute(t, data)

	// The figures, as published in docs/contracts.md.
	want := retailTruth{read: 541909, quantitySign: 1336, negativePrice: 2, duplicates: 0, conflictIDs: 0, conflictRecords: 0,
		nulls: map[string]int64{"Description": 1454, "CustomerID": 135080}}
	if tr.read != want.read || tr.quantitySign != want.quantitySign || tr.negativePrice != want.negativePrice ||
		tr.duplicates != want.duplicates || tr.conflictIDs != want.conflictIDs || tr.conflictRecords != want.conflictRecords ||
		len(tr.nulls) != 2 || tr.nulls["Description"] != 1454 || tr.nulls["CustomerID"] != 135080 {
		t.Fatalf("the data set changed: recomputed %+v", tr)
	}

	if rep.Records.Read != tr.read || rep.Records.NotDecoded != 0 || rep.Records.Checked != tr.read {
		t.Errorf("records %+v, want %d read, all decoded", rep.Records, tr.read)
	}
	for _, f := range rep.Fields {
		if f.Nulls != tr.nulls[f.Name] {
			t.Errorf("field %s: %d nulls, recomputed %d", f.Name, f.Nulls, tr.nulls[f.Name])
		}
	}
	id := rep.EventIDs
	if id.WithoutID != 0 || id.Duplicates != tr.duplicates || id.ConflictIDs != tr.conflictIDs || id.ConflictRecords != tr.conflictRecords {
		t.Errorf("event ids %+v, recomputed %+v", id, tr)
	}
	if len(id.ConflictExamples) != 0 {
		t.Errorf("conflict examples %+v", id.ConflictExamples)
	}
	if rep.Arrival != nil {
		t.Errorf("arrival %+v without ingest_time", rep.Arrival)
	}
	got := map[string]int64{}
	for _, r := range rep.Rules {
		got[r.Name] = r.Violations
		if r.Checked != tr.read {
			t.Errorf("rule %s checked %d", r.Name, r.Checked)
		}
	}
	wantRules := map[string]int64{
		"InvoiceNo_required": 0, "Quantity_required": 0, "InvoiceDate_required": 0, "UnitPrice_required": 0, "Country_required": 0,
		"quantity_sign": tr.quantitySign, "unit_price_not_negative": tr.negativePrice,
	}
	if len(got) != len(wantRules) {
		t.Errorf("rules %v", got)
	}
	for name, n := range wantRules {
		if got[name] != n {
			t.Errorf("rule %s: %d violations, recomputed %d", name, got[name], n)
		}
	}
	if !rep.Pass || len(rep.Failures) != 0 {
		t.Errorf("failures %q", rep.Failures)
	}
}
