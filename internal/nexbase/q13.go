package nexbase

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Q13Row is a row of q13: a bid and the value of its auction's entry in
// the side input.
type Q13Row struct {
	Auction, Bidder, Price int64
	DateTime               int64 // the bid's event time, ms since the epoch
	Value                  string
}

// q13Modulus is q13.yaml's computed key: bid.auction % 10000.
const q13Modulus = 10_000

// sideVersion is one row of the side input: its value, valid from a time
// (ms since the epoch).
type sideVersion struct {
	from  int64
	value string
}

// readSideInput reads a side input file of q13's shape (CSV with a header
// line: key, value, valid_from in seconds since the epoch) into each
// key's versions, sorted by valid_from (file order on a tie). Errors:
// reading the file, or a line without three fields, an integer key and
// an integer valid_from (naming the line).
func readSideInput(path string) (map[int64][]sideVersion, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	side := map[int64][]sideVersion{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 {
			continue // the header
		}
		fs := strings.Split(sc.Text(), ",")
		if len(fs) != 3 {
			return nil, fmt.Errorf("%s:%d: want key,value,valid_from", path, line)
		}
		k, err1 := strconv.ParseInt(fs[0], 10, 64)
		from, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		side[k] = append(side[k], sideVersion{from * 1000, fs[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, vs := range side {
		slices.SortStableFunc(vs, func(a, b sideVersion) int { return cmp.Compare(a.from, b.from) })
	}
	return side, nil
}

// Q13 is Nexmark q13, bounded side input join: each bid with the value of
// the side input's row keyed by its auction % 10,000, the latest version
// valid at the bid's event time (q13.yaml's temporal join; the file is
// read before the first bid, so no bid waits). A bid whose key has no
// version valid at its time has no row (an inner join). cfg.SideInput
// names the file. Errors: no side input, or reading it (readSideInput).
func Q13(ctx context.Context, cfg Config, emit func(*Q13Row)) (Stats, error) {
	if cfg.SideInput == "" {
		return Stats{}, errors.New("q13: no side input file (an input named side_input reading a file)")
	}
	side, err := readSideInput(cfg.SideInput)
	if err != nil {
		return Stats{}, err
	}
	r, err := open(cfg, "event_type", "date_time", "bid.auction", "bid.bidder", "bid.price")
	if err != nil {
		return Stats{}, err
	}
	et, dt := r.slot("event_type"), r.slot("date_time")
	au, bi, pr := r.slot("bid.auction"), r.slot("bid.bidder"), r.slot("bid.price")
	var st Stats
	var out Q13Row
	for {
		rows, err := r.next(ctx)
		if err != nil {
			return st, err
		}
		if rows == nil {
			break
		}
		for i := range rows {
			row := &rows[i]
			if row.I[et] != bidType {
				continue
			}
			t, a := row.I[dt], row.I[au]
			vs := side[a%q13Modulus]
			// The last version with from ≤ t.
			j, _ := slices.BinarySearchFunc(vs, t+1, func(v sideVersion, x int64) int { return cmp.Compare(v.from, x) })
			if j == 0 {
				continue
			}
			out = Q13Row{Auction: a, Bidder: row.I[bi], Price: row.I[pr], DateTime: t, Value: vs[j-1].value}
			st.Rows++
			if emit != nil {
				emit(&out)
			}
		}
	}
	st.Events = r.events
	return st, nil
}
