package scaletest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/nexmark"
)

// input is one input topic: the perturbed JSON lines loaded into it, in
// arrival order, and how the harness's own model reads them.
type input struct {
	name       string // also the topic
	partitions int
	lines      [][]byte // the perturbed file's lines, in arrival order
	model      model
	// pipeline renders the input's pipeline (see pipelineFor).
	pipeline string
	// checks are the result stages the harness checks.
	full, normal stageCheck
	// downstream is a stage reading full (nil: none).
	downstream *stageCheck
}

// model is an input's meaning, computed by the harness without tidemark:
// which records are quarantined, duplicates and conflicts (in arrival
// order per partition, as the pipeline's dedup sees them), each accepted
// event's money, window and key.
type model interface {
	// judge classifies one record: its id and payload (the fields that
	// are not delivery metadata), or quarantined.
	judge(line []byte) (id string, payload map[string]any, quarantined bool)
	// event returns an accepted event's window start (RFC 3339 UTC), key
	// text and money.
	event(payload map[string]any) (window, key string, money *big.Rat)
}

// stageCheck describes a result stage the harness reads back: its topic
// suffix, key columns (besides window_start), the aggregate holding the
// money and the one counting events.
type stageCheck struct {
	stage string
	keys  []string
	money string
	count string
}

// produceInput writes lines to a file, perturbs it with `tidemark
// perturb` (args) and loads the result into topic name with `tidemark
// produce`, each record to the partition perturb gave it, keyed by
// keyField.
func produceInput(t *testing.T, b *broker, dir, name string, partitions int, raw []byte, keyField string, perturbArgs ...string) [][]byte {
	t.Helper()
	rawPath := filepath.Join(dir, name+".raw.jsonl")
	if err := os.WriteFile(rawPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	perturbed := filepath.Join(dir, name+".jsonl")
	args := append([]string{"perturb", rawPath, "--out", perturbed, "--partitions", strconv.Itoa(partitions)}, perturbArgs...)
	if out, err := exec.Command(binary, args...).CombinedOutput(); err != nil {
		t.Fatalf("perturb: %v\n%s", err, out)
	}
	b.createTopics(t, int32(partitions), name)
	if out, err := exec.Command(binary, "produce", perturbed, "--topic", name, "--brokers", b.addr,
		"--partition-field", "partition", "--key-field", keyField, "-q").CombinedOutput(); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}
	data, err := os.ReadFile(perturbed)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// retailInput loads the first days of the UCI Online Retail invoice lines
// (the shared data set; CC BY 4.0) into topic retail, 6 partitions by
// invoice, delivered late (2 min, 3 % up to 3 h), 1 % twice and 0.1 %
// again with another quantity. Each line gets line_id, its invoice and
// its position in the invoice (the data has no line id).
func retailInput(t *testing.T, b *broker, dir string, days int) *input {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(datatest.Dir(t), "online-retail", "by-day", "*.csv"))
	if err != nil || len(files) < days {
		t.Fatalf("online-retail/by-day: %d files, %v", len(files), err)
	}
	slices.Sort(files)
	var raw bytes.Buffer
	for _, f := range files[:days] {
		retailJSONL(t, f, &raw)
	}
	in := &input{name: "retail", partitions: 6, model: retailModel{}, pipeline: retailPipeline,
		full:   stageCheck{stage: "hourly_all", keys: []string{"Country"}, money: "net_revenue", count: "lines"},
		normal: stageCheck{stage: "hourly", keys: []string{"Country"}, money: "net_revenue", count: "lines"}}
	in.lines = produceInput(t, b, dir, in.name, in.partitions, raw.Bytes(), "InvoiceNo",
		"--event-time", "InvoiceDate", "--layout", "2006-01-02 15:04:05", "--timezone", "Europe/London",
		"--seed", "7", "--delay", "2m", "--straggler-fraction", "0.03", "--max-delay", "3h",
		"--redeliver-fraction", "0.01", "--conflict-fraction", "0.001", "--conflict-field", "Quantity",
		"--partition-by", "InvoiceNo")
	return in
}

var decimalText = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// retailJSONL appends the invoice lines of one CSV file as JSON lines:
// Quantity a number, UnitPrice its decimal text as a JSON number, the
// other columns strings, and line_id.
func retailJSONL(t *testing.T, path string, w *bytes.Buffer) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.FieldsPerRecord = 8
	head, err := r.Read()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if strings.Join(head, ",") != "InvoiceNo,StockCode,Description,Quantity,InvoiceDate,UnitPrice,CustomerID,Country" {
		t.Fatalf("%s: header %v", path, head)
	}
	pos := map[string]int{}
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		q, err := strconv.Atoi(rec[3])
		if err != nil || !decimalText.MatchString(rec[5]) {
			t.Fatalf("%s: line %v: quantity or price", path, rec)
		}
		pos[rec[0]]++
		fmt.Fprintf(w, `{"InvoiceNo":%s,"line_id":%s,"StockCode":%s,"Description":%s,"Quantity":%d,"InvoiceDate":%s,"UnitPrice":%s,"CustomerID":%s,"Country":%s}`+"\n",
			str(rec[0]), str(fmt.Sprintf("%s-%d", rec[0], pos[rec[0]])), str(rec[1]), str(rec[2]), q, str(rec[4]), rec[5], str(rec[6]), str(rec[7]))
	}
}

// retailContract is the data contract of the retail pipelines: the
// example's rules (examples/online-retail/contract.yaml) over lines that
// carry their id, and perturb's fields as delivery metadata.
const retailContract = `product: online_retail_invoice_line
owner: scale-out harness
schema_version: "1"
fields:
  InvoiceNo: {type: string, required: true}
  line_id: {type: string, required: true}
  StockCode: {type: string}
  Description: {type: string}
  Quantity: {type: int, required: true}
  InvoiceDate: {type: timestamp, required: true}
  UnitPrice: {type: decimal, required: true}
  CustomerID: {type: string}
  Country: {type: string, required: true}
  ingested_at: {type: string, metadata: true}
  partition: {type: string, metadata: true}
event_id: line_id
event_time: {field: InvoiceDate, layout: "2006-01-02 15:04:05", timezone: Europe/London}
duplicates_possible: true
rules:
  - name: quantity_sign
    check: Quantity >= 0 or InvoiceNo startsWith "C"
  - name: unit_price_not_negative
    check: UnitPrice >= 0
`

var london = func() *time.Location {
	l, err := time.LoadLocation("Europe/London")
	if err != nil {
		panic(err)
	}
	return l
}()

// retailModel reads retail lines as the contract does.
type retailModel struct{}

func (retailModel) judge(line []byte) (string, map[string]any, bool) {
	m := decodeObject(line)
	if m == nil {
		return "", nil, true
	}
	delete(m, "ingested_at")
	delete(m, "partition")
	inv, _ := m["InvoiceNo"].(string)
	q, errQ := m["Quantity"].(json.Number).Int64()
	price, okP := new(big.Rat).SetString(string(m["UnitPrice"].(json.Number)))
	if _, err := time.ParseInLocation("2006-01-02 15:04:05", m["InvoiceDate"].(string), london); err != nil || errQ != nil || !okP {
		return "", nil, true
	}
	if q < 0 && !strings.HasPrefix(inv, "C") || price.Sign() < 0 {
		return "", nil, true // quantity_sign, unit_price_not_negative
	}
	id, _ := m["line_id"].(string)
	return id, m, false
}

func (retailModel) event(m map[string]any) (string, string, *big.Rat) {
	ts, _ := time.ParseInLocation("2006-01-02 15:04:05", m["InvoiceDate"].(string), london)
	// Europe/London is a whole number of hours from UTC: its hours start
	// on UTC hours.
	w := ts.UTC().Truncate(time.Hour).Format(time.RFC3339)
	q, _ := new(big.Rat).SetString(string(m["Quantity"].(json.Number)))
	p, _ := new(big.Rat).SetString(string(m["UnitPrice"].(json.Number)))
	country, _ := json.Marshal(m["Country"])
	return w, string(country), q.Mul(q, p)
}

// decodeObject decodes a JSON object with numbers as json.Number; nil if
// the line is not one.
func decodeObject(line []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil
	}
	return m
}

// nexmarkInput loads n bids of the Nexmark generator (source/nexmark:
// Beam's reference generator; 100 events per second of event time, bids
// only) into topic bids as flat JSON objects, 4 partitions by bidder,
// delivered late (1 s, 5 % up to 20 s), 2 % twice and 0.2 % again with
// another price; one bid in 400 has a date_time that is not a time
// (quarantined).
func nexmarkInput(t *testing.T, b *broker, dir string, n int) *input {
	t.Helper()
	schema, err := nexmark.NewSchema("event_type")
	if err != nil {
		t.Fatal(err)
	}
	src, err := nexmark.New(nexmark.Config{Fields: format.Fields{Schema: schema}, Events: int64(n) * 50 / 46, Rate: 100, Seed: 5,
		Delay: &nexmark.Delay{}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var raw bytes.Buffer
	var batch source.Batch
	var js []byte
	bids := 0
	for bids < n {
		batch.Reset()
		st, err := src.Next(context.Background(), &batch, 256)
		if err != nil {
			t.Fatal(err)
		}
		for i := range batch.Meta {
			js = src.EventJSON(js[:0], &batch.Meta[i])
			var ev struct {
				Type int `json:"event_type"`
				Bid  struct {
					Auction, Bidder, Price int64
					Channel                string
				} `json:"bid"`
				DateTime string `json:"date_time"`
			}
			if err := json.Unmarshal(js, &ev); err != nil {
				t.Fatalf("%s: %v", js, err)
			}
			if ev.Type != 2 || bids >= n {
				continue
			}
			bids++
			dt := strconv.Quote(ev.DateTime)
			if bids%400 == 0 {
				dt = `"not a time"`
			}
			fmt.Fprintf(&raw, `{"event_id":"b%d","auction":%d,"bidder":%d,"price":%d,"channel":%q,"date_time":%s}`+"\n",
				batch.Meta[i].Pos.Offset, ev.Bid.Auction, ev.Bid.Bidder, ev.Bid.Price, ev.Bid.Channel, dt)
		}
		if st == source.End {
			break
		}
	}
	in := &input{name: "bids", partitions: 4, model: nexmarkModel{}, pipeline: nexmarkPipeline,
		full:       stageCheck{stage: "auction_bids", keys: []string{"auction"}, money: "volume", count: "bids"},
		normal:     stageCheck{stage: "auction_bids_ontime", keys: []string{"auction"}, money: "volume", count: "bids"},
		downstream: &stageCheck{stage: "window_volume", keys: []string{"w"}, money: "volume", count: "bids"}}
	in.lines = produceInput(t, b, dir, in.name, in.partitions, raw.Bytes(), "bidder",
		"--event-time", "date_time", "--seed", "11", "--delay", "1s", "--straggler-fraction", "0.05", "--max-delay", "20s",
		"--redeliver-fraction", "0.02", "--conflict-fraction", "0.002", "--conflict-field", "price", "--partition-by", "bidder")
	return in
}

// nexmarkModel reads the flat bids.
type nexmarkModel struct{}

func (nexmarkModel) judge(line []byte) (string, map[string]any, bool) {
	m := decodeObject(line)
	if m == nil {
		return "", nil, true
	}
	delete(m, "ingested_at")
	delete(m, "partition")
	dt, _ := m["date_time"].(string)
	if _, err := time.Parse(time.RFC3339Nano, dt); err != nil {
		return "", nil, true
	}
	id, _ := m["event_id"].(string)
	return id, m, false
}

func (nexmarkModel) event(m map[string]any) (string, string, *big.Rat) {
	ts, _ := time.Parse(time.RFC3339Nano, m["date_time"].(string))
	w := ts.UTC().Truncate(10 * time.Second).Format(time.RFC3339)
	p, _ := new(big.Rat).SetString(string(m["price"].(json.Number)))
	return w, string(m["auction"].(json.Number)), p
}

// fates is the model's account of an input: what tidemark must quarantine,
// count as duplicates, send to the conflict output and accept.
type fates struct {
	in, quarantined, duplicates, conflicts int
	moneyIn, moneyQuarantined              *big.Rat
	moneyDuplicates, moneyConflicts        *big.Rat
	moneyAccepted                          *big.Rat
	// batch is the accepted events' money and count per window and key
	// ("window_start|key"): what a stage whose allowed lateness covers
	// every delay ends with.
	batch map[string]agg
}

type agg struct {
	money *big.Rat
	n     int64
}

// account runs the model over the input in arrival order. Copies of an
// event are on one partition (perturb partitions by a field of the
// event), so arrival order is the order the pipeline's dedup sees them
// in.
func (in *input) account(t *testing.T) fates {
	f := fates{moneyIn: new(big.Rat), moneyQuarantined: new(big.Rat), moneyDuplicates: new(big.Rat),
		moneyConflicts: new(big.Rat), moneyAccepted: new(big.Rat), batch: map[string]agg{}}
	first := map[string]map[string]any{}
	for _, l := range in.lines {
		f.in++
		m := decodeObject(l)
		money := lineMoney(in, m)
		f.moneyIn.Add(f.moneyIn, money)
		id, payload, q := in.model.judge(l)
		switch {
		case q:
			f.quarantined++
			f.moneyQuarantined.Add(f.moneyQuarantined, money)
		case first[id] == nil:
			first[id] = payload
			f.moneyAccepted.Add(f.moneyAccepted, money)
			w, k, _ := in.model.event(payload)
			a := f.batch[w+"|"+k]
			if a.money == nil {
				a.money = new(big.Rat)
			}
			a.money.Add(a.money, money)
			a.n++
			f.batch[w+"|"+k] = a
		case reflect.DeepEqual(first[id], payload):
			f.duplicates++
			f.moneyDuplicates.Add(f.moneyDuplicates, money)
		default:
			f.conflicts++
			f.moneyConflicts.Add(f.moneyConflicts, money)
		}
	}
	if f.quarantined == 0 || f.duplicates == 0 || f.conflicts == 0 {
		t.Fatalf("input %s: %d quarantined, %d duplicates, %d conflicts: every fate should occur", in.name, f.quarantined, f.duplicates, f.conflicts)
	}
	return f
}

// lineMoney is a record's money as the pipeline computes it (quantity ×
// unit price, a bid's price), 0 when the record has none.
func lineMoney(in *input, m map[string]any) *big.Rat {
	r := new(big.Rat)
	if m == nil {
		return r
	}
	num := func(k string) (*big.Rat, bool) {
		n, ok := m[k].(json.Number)
		if !ok {
			return nil, false
		}
		return new(big.Rat).SetString(string(n))
	}
	switch in.name {
	case "retail":
		q, ok1 := num("Quantity")
		p, ok2 := num("UnitPrice")
		if ok1 && ok2 {
			r.Mul(q, p)
		}
	default:
		if p, ok := num("price"); ok {
			r.Set(p)
		}
	}
	return r
}
