package parquet

import (
	"fmt"
	"os"
	"path/filepath"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/tidemark/tidemark/internal/durable"
)

// Codec returns the Parquet compression codec named by the spec key
// compression: "zstd", "snappy" or "none". Errors: any other name.
func Codec(name string) (compress.Codec, error) {
	switch name {
	case "zstd", "":
		return &pq.Zstd, nil
	case "snappy":
		return &pq.Snappy, nil
	case "none":
		return &pq.Uncompressed, nil
	}
	return nil, fmt.Errorf("compression %q: want zstd, snappy or none", name)
}

// FileOptions are how FileWriter writes a file.
type FileOptions struct {
	// Schema of the file's rows.
	Schema *pq.Schema
	// RowGroupRows ends a row group after this many rows (0: 131,072).
	RowGroupRows int64
	// Metadata is the file's key-value metadata.
	Metadata map[string]string
}

// DefaultRowGroupRows is a file's rows per row group when the sink sets
// none (spec key row_group_rows): 2^17, near DuckDB's 122,880.
const DefaultRowGroupRows = 1 << 17

// FileWriter writes one Parquet file. It is not safe for concurrent use.
type FileWriter struct {
	Path string
	f    *os.File
	w    *pq.Writer
	rows int64
}

// CreateFile creates path (which must not exist) for writing.
func CreateFile(path string, o FileOptions) (*FileWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	n := o.RowGroupRows
	if n <= 0 {
		n = DefaultRowGroupRows
	}
	opts := []pq.WriterOption{o.Schema, pq.MaxRowsPerRowGroup(n), pq.CreatedBy("tidemark", "", "")}
	for k, v := range o.Metadata {
		opts = append(opts, pq.KeyValueMetadata(k, v))
	}
	return &FileWriter{Path: path, f: f, w: pq.NewWriter(f, opts...)}, nil
}

// WriteRows appends rows (their values' bytes are copied).
func (w *FileWriter) WriteRows(rows []pq.Row) error {
	n, err := w.w.WriteRows(rows)
	w.rows += int64(n)
	if err != nil {
		return fmt.Errorf("parquet %s: %w", w.Path, err)
	}
	return nil
}

// Rows returns the rows written.
func (w *FileWriter) Rows() int64 { return w.rows }

// Size estimates the file's size in bytes: what is written and what the
// open row group buffers.
func (w *FileWriter) Size() int64 { return w.w.Size() }

// Close writes the footer, fsyncs and closes the file, and returns its
// size in bytes.
func (w *FileWriter) Close() (int64, error) {
	err := w.w.Close()
	if err == nil {
		err = w.f.Sync()
	}
	var size int64
	if err == nil {
		var st os.FileInfo
		if st, err = w.f.Stat(); err == nil {
			size = st.Size()
		}
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("parquet %s: %w", w.Path, err)
	}
	return size, nil
}

// Abort closes and removes the file.
func (w *FileWriter) Abort() {
	w.f.Close()
	os.Remove(w.Path)
}

// WriteAtomic replaces path with data: a temporary file beside it,
// fsynced, renamed over path, and the directory fsynced.
func WriteAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}
