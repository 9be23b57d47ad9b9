package examples

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/cli"
	"github.com/tidemark/tidemark/internal/datatest"
)

// TestOnlineRetailExplain runs the bundled pipeline as shipped (its file
// copied with out/ moved to a temporary directory and the contract path
// made absolute) through the command line, then checks its contributions
// output, what tidemark explain reads: the deltas of the lines it records,
// summed per hour and country, are exactly the batch group-by over the raw
// CSV files (minus the quarantined and too-late lines, as in
// TestOnlineRetailMatchesBatch), so every row's number is explained by its
// lines and each line counts once. Then tidemark explain on France's
// 08:00 hour of 2010-12-01 prints the row and recomputes it from its 20
// lines: 855.86 (docs/connectors/jsonl.md shows its two versions).
func TestOnlineRetailExplain(t *testing.T) {
	data := datatest.Dir(t)
	t.Setenv("TIDEMARK_DATA", data)
	src, err := os.ReadFile("online-retail/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := filepath.Abs("online-retail/contract.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	text := strings.ReplaceAll(string(src), "out/", out+"/")
	text = strings.Replace(text, "contract: examples/online-retail/contract.yaml", "contract: "+contract, 1)
	if !strings.Contains(text, "contributions:\n  sink: {type: jsonl, path: "+out+"/revenue_hourly.events.jsonl}") {
		t.Fatalf("the example has no contributions sink writing out/revenue_hourly.events.jsonl:\n%s", text)
	}
	pipeline := filepath.Join(out, "pipeline.yaml")
	if err := os.WriteFile(pipeline, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	main := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		code := cli.Main(args, strings.NewReader(""), &o, &e)
		return code, o.String(), e.String()
	}
	if code, _, errOut := main("run", "--parallelism", "2", pipeline); code != 0 {
		t.Fatalf("tidemark run: exit %d: %s", code, errOut)
	}

	late := map[string]bool{}
	for _, rec := range readJSONL[struct{ Source string }](t, filepath.Join(out, "late.jsonl")) {
		late[filepath.Base(rec.Source)] = true
	}
	want, _ := batchGroupBy(t, data, late)

	// The contributions, summed per (window, country) exactly.
	f, err := os.Open(filepath.Join(out, "revenue_hourly.events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type contribution struct {
		EventID string      `json:"event_id"`
		Windows [][2]string `json:"windows"`
		Key     struct{ Country string }
		Deltas  struct {
			NetRevenue json.Number `json:"net_revenue"`
			Lines      json.Number `json:"lines"`
		}
	}
	got := map[groupKey]*groupVal{}
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c contribution
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("contribution %s: %v", sc.Bytes(), err)
		}
		if ids[c.EventID] {
			t.Fatalf("line %s contributed twice (a redelivery counted)", c.EventID)
		}
		ids[c.EventID] = true
		if len(c.Windows) != 1 || c.Deltas.Lines != "1" {
			t.Fatalf("contribution %s: want one hour window and lines +1", sc.Bytes())
		}
		ws, err := time.Parse(time.RFC3339, c.Windows[0][0])
		if err != nil {
			t.Fatal(err)
		}
		net, ok := new(big.Rat).SetString(string(c.Deltas.NetRevenue))
		if !ok {
			t.Fatalf("contribution %s: net_revenue is not a decimal", sc.Bytes())
		}
		k := groupKey{ws.UnixMilli(), c.Key.Country}
		g := got[k]
		if g == nil {
			g = &groupVal{net: new(big.Rat)}
			got[k] = g
		}
		g.net.Add(g.net, net)
		g.lines++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	compareGroups(t, got, want)

	// One row explained: France, 2010-12-01 08:00-09:00 (UTC, London's
	// winter time).
	france := want[groupKey{time.Date(2010, 12, 1, 8, 0, 0, 0, time.UTC).UnixMilli(), "France"}]
	if france == nil || france.net.FloatString(2) != "855.86" || france.lines != 20 {
		t.Fatalf("the batch group-by gives France 08:00 %v, want 855.86 over 20 lines", france)
	}
	code, stdout, errOut := main("explain", pipeline, "--table", "revenue_hourly", "--window", "2010-12-01T08:00:00Z", "--key", "France")
	if code != 0 {
		t.Fatalf("tidemark explain: exit %d: %s", code, errOut)
	}
	for _, w := range []string{
		"stage revenue_hourly, window starting 2010-12-01T08:00:00Z, key France\n",
		"\n  net_revenue    855.86\n  lines          20\n",
		"\ncontributing events (" + out + "/revenue_hourly.events.jsonl):\n",
		"\n  536370-7     2010-12-01T08:45:00Z  net_revenue +30.00, lines +1  (" + filepath.Join(data, "online-retail", "by-day", "2010-12-01.csv") + ":34)\n",
		"\n  20 events; recomputed from them: net_revenue 855.86, lines 20\n",
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("explain lacks %q:\n%s", w, stdout)
		}
	}
	if n := strings.Count(stdout, ", lines +1  ("); n != 20 {
		t.Errorf("explain lists %d contributing lines, want 20:\n%s", n, stdout)
	}
	t.Logf("%d contributions explain %d rows; explain of France 08:00: %s", len(ids), len(got), strconv.Quote(stdout[strings.LastIndex(stdout, "\n  20 events")+3:]))
}
