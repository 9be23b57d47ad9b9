package file

import (
	"context"
	"encoding/csv"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// retailDir is the Online Retail by-day CSV files (datatest.Dir).
func retailDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(datatest.Dir(t), "online-retail", "by-day")
}

// retailTruth is what an independent pass (encoding/csv, strconv,
// math/big) computes over the files.
type retailTruth struct {
	lines      int
	quantity   int64
	revenue    *big.Rat // sum of Quantity × UnitPrice
	ordinalSum int64    // Σ k(k+1)/2 over invoices with k lines in a file
	dstGap     []string // InvoiceDate in 2011-03-27 01:00–01:59 (does not exist in London)
	dstRepeat  []string // InvoiceDate in 2011-10-30 01:00–01:59 (occurs twice in London)
}

func computeRetailTruth(t testing.TB, dir string) retailTruth {
	files, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil {
		t.Fatal(err)
	}
	tr := retailTruth{revenue: new(big.Rat)}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		perInvoice := map[string]int64{}
		for _, r := range recs[1:] {
			tr.lines++
			q, err := strconv.ParseInt(r[col["Quantity"]], 10, 64)
			if err != nil {
				t.Fatalf("%s: Quantity %q: %v", p, r[col["Quantity"]], err)
			}
			tr.quantity += q
			price, ok := new(big.Rat).SetString(r[col["UnitPrice"]])
			if !ok {
				t.Fatalf("%s: UnitPrice %q", p, r[col["UnitPrice"]])
			}
			tr.revenue.Add(tr.revenue, price.Mul(price, new(big.Rat).SetInt64(q)))
			perInvoice[r[col["InvoiceNo"]]]++
			switch d := r[col["InvoiceDate"]]; {
			case strings.HasPrefix(d, "2011-03-27 01:"):
				tr.dstGap = append(tr.dstGap, d)
			case strings.HasPrefix(d, "2011-10-30 01:"):
				tr.dstRepeat = append(tr.dstRepeat, d)
			}
		}
		for _, k := range perInvoice {
			tr.ordinalSum += k * (k + 1) / 2
		}
	}
	return tr
}

func retailConfig(t testing.TB, dir string, replay *spec.Replay) Config {
	return Config{
		Spec: spec.Source{
			Type:    "file",
			Path:    dir,
			Format:  "csv",
			Ordinal: &spec.Ordinal{Field: "line_no", Per: "InvoiceNo"},
			Replay:  replay,
		},
		Fields:         testFields(t, "InvoiceNo:string", "Quantity:int", "UnitPrice:decimal", "InvoiceDate:timestamp/london", "Country:string", "line_no:int"),
		EventTimeField: "InvoiceDate",
	}
}

func TestOnlineRetail(t *testing.T) {
	dir := retailDir(t)
	truth := computeRetailTruth(t, dir)
	t.Logf("independent pass: %d lines, quantity %d, revenue %s, DST gap %d, DST repeated hour %d",
		truth.lines, truth.quantity, truth.revenue.FloatString(3), len(truth.dstGap), len(truth.dstRepeat))
	if truth.lines != 541909 {
		t.Fatalf("independent pass counts %d lines, the data set has 541909", truth.lines)
	}
	if len(truth.dstGap) != 0 || len(truth.dstRepeat) != 0 {
		t.Errorf("InvoiceDates in DST transitions: gap %q, repeated %q", truth.dstGap, truth.dstRepeat)
	}

	cfg := retailConfig(t, dir, nil)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := cfg.Fields.Schema
	qty, _ := sc.Lookup("Quantity")
	price, _ := sc.Lookup("UnitPrice")
	when, _ := sc.Lookup("InvoiceDate")
	ord, _ := sc.Lookup("line_no")
	inv, _ := sc.Lookup("InvoiceNo")
	ids := make(map[string]bool, truth.lines) // InvoiceNo-line_no: each line's id is unique
	var (
		n, errs      int
		sumQty       int64
		sumOrd       int64
		revenue      row.Decimal
		first, last  int64
		backwards    int
		prevTime     int64
		prevFileLine = map[string]int64{}
	)
	var b source.Batch
	for {
		b.Reset()
		st, err := s.Next(context.Background(), &b, 4096)
		for i := range b.Meta {
			r, m := &b.Rows[i], &b.Meta[i]
			n++
			if m.Err != nil {
				errs++
				t.Errorf("%s: %v", m.Pos, m.Err)
				continue
			}
			if m.Pos.Line <= prevFileLine[m.Pos.Source] {
				t.Fatalf("%s: line does not increase", m.Pos)
			}
			prevFileLine[m.Pos.Source] = m.Pos.Line
			sumQty += r.I[qty.Slot]
			sumOrd += r.I[ord.Slot]
			id := fmt.Sprintf("%v-%d", r.Get(inv), r.I[ord.Slot])
			if ids[id] {
				t.Errorf("%s: id %s already seen", m.Pos, id)
			}
			ids[id] = true
			revenue = revenue.Add(r.D[price.Slot].Mul(row.DecimalFromInt(r.I[qty.Slot])))
			ts := r.I[when.Slot]
			if n == 1 {
				first = ts
			} else if ts < prevTime {
				backwards++
			}
			prevTime, last = ts, ts
		}
		if st == source.End {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != truth.lines || errs != 0 {
		t.Errorf("%d records, %d decode errors; want %d and 0", n, errs, truth.lines)
	}
	if sumQty != truth.quantity {
		t.Errorf("sum of Quantity %d, independent pass %d", sumQty, truth.quantity)
	}
	if sumOrd != truth.ordinalSum {
		t.Errorf("sum of line_no %d, independent pass %d", sumOrd, truth.ordinalSum)
	}
	want, _ := row.ParseDecimal([]byte(truth.revenue.FloatString(4)))
	if !revenue.Equal(want) {
		t.Errorf("revenue %s, independent pass %s", revenue, want)
	}
	if backwards != 0 {
		t.Errorf("%d records earlier than the record before them", backwards)
	}
	t.Logf("file source: %d records, quantity %d, revenue %s, %s … %s", n, sumQty, revenue,
		time.UnixMilli(first).UTC().Format(time.RFC3339), time.UnixMilli(last).UTC().Format(time.RFC3339))
}

func TestOnlineRetailReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole data set")
	}
	dir := retailDir(t)
	rp := &spec.Replay{Seed: 1, Delay: spec.Duration(30 * time.Second), MaxDelay: spec.Duration(10 * time.Minute),
		StragglerFraction: 0.01, RedeliverFraction: 0.001, Partitions: 4, PartitionBy: "InvoiceNo"}
	cfg := retailConfig(t, dir, rp)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n, redelivered, maxHeld int
	prev := int64(source.NoArrival)
	var b source.Batch
	for {
		b.Reset()
		st, err := s.Next(context.Background(), &b, 4096)
		maxHeld = max(maxHeld, s.rp.q.Len())
		for i := range b.Meta {
			m := &b.Meta[i]
			if m.Arrival < prev {
				t.Fatalf("%s: arrival goes back", m.Pos)
			}
			prev = m.Arrival
			if m.Redelivery {
				redelivered++
			} else {
				n++
			}
		}
		if st == source.End {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != 541909 {
		t.Errorf("%d first deliveries, want 541909", n)
	}
	t.Logf("replay: %d records, %d redeliveries, at most %d held at once", n, redelivered, maxHeld)
}
