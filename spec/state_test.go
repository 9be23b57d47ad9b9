package spec

import (
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]Bytes{
		"512MiB": 512 << 20, "2GiB": 2 << 30, "1.5GiB": 3 << 29, "64KiB": 64 << 10,
		"100MB": 100_000_000, "3kB": 3000, "7B": 7, " 1TiB ": 1 << 40, "0B": 0,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"1024", "GiB", "-1MiB", "1 GB x", "1gib", ""} {
		if v, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, v)
		}
	}
	for b, want := range map[Bytes]string{1 << 30: "1GiB", 1536 << 20: "1536MiB", 100: "100B", 0: "0B", 3 << 10: "3KiB"} {
		if got := b.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(b), got, want)
		}
	}
}

func TestStateKeys(t *testing.T) {
	p := mustParse(t, pipe("state: {backend: disk}"))
	if p.State.Backend != "disk" || p.State.Memory != DefaultStateMemory {
		t.Fatalf("disk defaults: %+v", p.State)
	}
	p = mustParse(t, pipe("state: {backend: disk, memory: 256MiB, dir: /var/tm}"))
	if p.State.Memory != 256<<20 || p.State.Dir != "/var/tm" {
		t.Fatalf("state: %+v", p.State)
	}
	for src, want := range map[string]string{
		"state: {backend: rocksdb}":             `state.backend: "rocksdb": want memory or disk`,
		"state: {memory: 1GiB}":                 "state.memory: only with state.backend: disk",
		"state: {dir: x}":                       "state.dir: only with state.backend: disk",
		"state: {backend: disk, memory: 8MiB}":  "state.memory: 8MiB is below the least budget, 16MiB",
		"state: {backend: disk, memory: 1024}":  "size must be a number with a unit such as \"512MiB\" or \"2GiB\", got 1024 (a bare number has no unit)",
		"state: {backend: disk, memory: 2 GiB}": "",
	} {
		_, err := Parse("x.yaml", []byte(pipe(src)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}

// TestExchangeMemory: exchange_memory takes a size with a unit, at least
// 64KiB; absent it is 0 (the runner's default, DefaultExchangeMemory).
func TestExchangeMemory(t *testing.T) {
	if p := mustParse(t, pipe("")); p.ExchangeMemory != 0 {
		t.Fatalf("default: %s", p.ExchangeMemory)
	}
	if p := mustParse(t, pipe("exchange_memory: 16MiB")); p.ExchangeMemory != 16<<20 {
		t.Fatalf("16MiB: %d", p.ExchangeMemory)
	}
	for src, want := range map[string]string{
		"exchange_memory: 1KiB":  "exchange_memory: 1KiB is below the least, 64KiB",
		"exchange_memory: 65536": "a bare number has no unit",
		"exchange_memory: 64KiB": "",
	} {
		_, err := Parse("x.yaml", []byte(pipe(src)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}
