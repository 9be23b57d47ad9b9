package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func sample(id int64) *Checkpoint {
	return &Checkpoint{ID: id, Created: 1_788_220_800_000 + id, Pipeline: "revenue_minute", Spec: []byte(`{"name":"revenue_minute"}`), Payload: []byte("state of checkpoint " + string(rune('0'+id)))}
}

func TestWriteReadListPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	for id := int64(1); id <= 4; id++ {
		path, n, err := Write(dir, sample(id))
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Size() != int64(n) || filepath.Base(path) != Name(id) {
			t.Fatalf("Write = %s, %d: %v", path, n, err)
		}
	}
	ids, err := List(dir)
	if err != nil || !slices.Equal(ids, []int64{4, 3, 2, 1}) {
		t.Fatalf("List = %v, %v", ids, err)
	}
	c, err := Latest(dir, nil)
	if err != nil || c.ID != 4 || c.Pipeline != "revenue_minute" || string(c.Payload) != string(sample(4).Payload) || string(c.Spec) != string(sample(4).Spec) || c.Created != sample(4).Created {
		t.Fatalf("Latest = %+v, %v", c, err)
	}
	if err := Prune(dir, 2); err != nil {
		t.Fatal(err)
	}
	if ids, _ := List(dir); !slices.Equal(ids, []int64{4, 3}) {
		t.Fatalf("after Prune(2): %v", ids)
	}
}

// Every truncation and every single-byte change of a checkpoint file is
// detected: Latest falls back to the previous checkpoint and logs why.
func TestCorruptFallsBack(t *testing.T) {
	good := Encode(sample(2))
	for cut := 0; cut < len(good); cut++ {
		if _, err := Decode(good[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a %d-byte prefix: %v", cut, err)
		}
	}
	for i := range good {
		b := slices.Clone(good)
		b[i] ^= 0x40
		if _, err := Decode(b); err == nil {
			t.Fatalf("flipping byte %d went unnoticed", i)
		}
	}
	dir := t.TempDir()
	if _, _, err := Write(dir, sample(1)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, Name(2)), good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var logs []string
	c, err := Latest(dir, func(f string, a ...any) { logs = append(logs, f) })
	if err != nil || c.ID != 1 {
		t.Fatalf("Latest = %+v, %v", c, err)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "unusable") {
		t.Fatalf("logs %q", logs)
	}
	// None usable: an error naming the file, not a silent fresh start.
	os.Remove(filepath.Join(dir, Name(1)))
	if _, err := Latest(dir, nil); err == nil || !strings.Contains(err.Error(), Name(2)) || !strings.Contains(err.Error(), "start from scratch") {
		t.Fatalf("Latest with only a corrupt file: %v", err)
	}
}

func TestOtherFormatVersion(t *testing.T) {
	b := Encode(sample(3))
	b[len(magic)] = FormatVersion + 1
	// Re-seal the checksum: a well-formed file of another version.
	b = b[:len(b)-8]
	b = appendSum(b)
	if _, err := Decode(b); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), fmt.Sprintf("format version %d, this build reads %d", FormatVersion+1, FormatVersion)) {
		t.Fatalf("Decode: %v", err)
	}
}

func TestCleanAndMissingDir(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".tmp-"+Name(5)+"-123")
	os.WriteFile(tmp, []byte("partial"), 0o644)
	if err := Clean(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("temporary file left")
	}
	if c, err := Latest(filepath.Join(dir, "none"), nil); c != nil || err != nil {
		t.Fatalf("missing dir: %v %v", c, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(sample(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err == nil && string(Encode(c)) != string(b) {
			t.Fatal("decoded a file that does not re-encode to itself")
		}
	})
}

func appendSum(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(b, xxhash.Sum64(b))
}

func TestOlderFormatVersionSaysWhy(t *testing.T) {
	b := Encode(sample(3))
	b[len(magic)] = 1
	b = appendSum(b[:len(b)-8])
	_, err := Decode(b)
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "format version 1") || !strings.Contains(err.Error(), "new checkpoint.dir") {
		t.Fatalf("Decode: %v", err)
	}
}
