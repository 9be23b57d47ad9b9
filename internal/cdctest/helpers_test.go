package cdctest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/source/pgcdc"
	"github.com/tidemark/tidemark/spec"
)

// namePrefix starts every pipeline name of these tests (so every default
// slot is "tidemark_" + namePrefix + …) and every publication.
const namePrefix = "tmtest_cdc_"

func TestMain(m *testing.M) {
	code := m.Run()
	if left := pgtest.DropLeftovers(dsn(), "tidemark_"+namePrefix, namePrefix); left != "" {
		fmt.Fprintf(os.Stderr, "replication slots or publications left by the tests (dropped now): %s\n", left)
		code = 1
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func dsn() string {
	if d := os.Getenv("TIDEMARK_TEST_POSTGRES"); d != "" {
		return d
	}
	return pgtest.DefaultDSN
}

// fixture is a test's schema, pipeline name, publication and slot (the
// pipeline's default one), all dropped when the test ends: the slot
// first.
type fixture struct {
	t      *testing.T
	dsn    string
	schema string
	name   string // the pipeline's name
	pub    string
	slot   string
	dir    string
	conn   *pgx.Conn
}

func newFixture(t *testing.T, ddl ...string) *fixture {
	t.Helper()
	d, schema := pgtest.Schema(t)
	var rnd [4]byte
	rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	f := &fixture{t: t, dsn: d, schema: schema, name: namePrefix + id, pub: namePrefix + "pub_" + id, dir: t.TempDir()}
	f.slot = pgcdc.SlotName(f.name)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	f.conn = conn
	t.Cleanup(func() {
		pgtest.DropSlot(t, d, f.slot)
		f.exec(`DROP PUBLICATION IF EXISTS "` + f.pub + `"`)
		conn.Close(ctx)
	})
	f.exec(`SET search_path TO "` + schema + `"`)
	f.exec(ddl...)
	return f
}

// publish creates the fixture's publication for tables of its schema.
func (f *fixture) publish(tables ...string) {
	f.t.Helper()
	var q []string
	for _, t := range tables {
		q = append(q, `"`+f.schema+`"."`+t+`"`)
	}
	f.exec(`CREATE PUBLICATION "` + f.pub + `" FOR TABLE ` + strings.Join(q, ", ") + ` WITH (publish = 'insert, update, delete')`)
}

// newConn opens a connection with the fixture's schema on its search path,
// closed when the test ends.
func (f *fixture) newConn() *pgx.Conn {
	f.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.dsn)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `SET search_path TO "`+f.schema+`"`); err != nil {
		f.t.Fatal(err)
	}
	return conn
}

func (f *fixture) exec(qs ...string) {
	f.t.Helper()
	for _, q := range qs {
		if _, err := f.conn.Exec(context.Background(), q); err != nil {
			f.t.Fatalf("%s: %v", q, err)
		}
	}
}

// tx runs statements in one transaction.
func (f *fixture) tx(qs ...string) {
	f.t.Helper()
	f.exec(append(append([]string{"BEGIN"}, qs...), "COMMIT")...)
}

// query returns the rows of q as text lines ("a | b").
func (f *fixture) query(q string) []string {
	f.t.Helper()
	out := pgtest.Dump(f.t, f.dsn, q)
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// yaml fills a pipeline's placeholders: {{NAME}}, {{DSN}}, {{SCHEMA}},
// {{PUB}}, {{DIR}}.
func (f *fixture) yaml(text string) string {
	r := strings.NewReplacer("{{NAME}}", f.name, "{{DSN}}", f.dsn, "{{SCHEMA}}", f.schema, "{{PUB}}", f.pub, "{{DIR}}", f.dir)
	return r.Replace(text)
}

// writePipeline writes the pipeline file and returns its path.
func (f *fixture) writePipeline(text string) string {
	p := filepath.Join(f.dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(f.yaml(text)), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// run is a pipeline running in-process until stopped.
type run struct {
	cancel context.CancelFunc
	done   chan struct{}
	sum    *engine.Summary
	err    error
	mu     sync.Mutex
	live   *engine.Live
	// snapshotted: the source logged the end of its initial snapshot.
	snapshotted atomic.Bool
}

// start runs a pipeline in-process.
func (f *fixture) start(text string, opts engine.Options) *run {
	f.t.Helper()
	p, err := spec.Decode("pipeline.yaml", []byte(f.yaml(text)))
	if err != nil {
		f.t.Fatal(err)
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, done: make(chan struct{})}
	logf := opts.Logf
	if logf == nil {
		logf = f.t.Logf
	}
	opts.Logf = func(format string, args ...any) {
		if strings.HasPrefix(format, "postgres_cdc source: initial snapshot of") {
			r.snapshotted.Store(true)
		}
		logf(format, args...)
	}
	user := opts.Live
	opts.Live = func(l *engine.Live) {
		r.mu.Lock()
		r.live = l
		r.mu.Unlock()
		if user != nil {
			user(l)
		}
	}
	go func() {
		defer close(r.done)
		r.sum, r.err = engine.Run(ctx, pl, opts)
	}()
	f.t.Cleanup(func() { r.stop() })
	return r
}

// stop cancels the run and waits for it.
func (r *run) stop() (*engine.Summary, error) {
	r.cancel()
	<-r.done
	return r.sum, r.err
}

// failed returns the run's error if it ended.
func (r *run) failed() error {
	select {
	case <-r.done:
		if r.err == nil {
			return fmt.Errorf("the run ended")
		}
		return r.err
	default:
		return nil
	}
}

// waitStreaming waits until the initial snapshot is done (its log line)
// and the fixture's slot is read: a change committed afterwards reaches
// the run through the stream. (A slot being created is active too, and
// changes committed before it reaches its consistent point are in the
// snapshot.)
func (f *fixture) waitStreaming(r *run) {
	f.t.Helper()
	f.waitFor(r, 30*time.Second, "the slot to stream", func() bool {
		return r.snapshotted.Load() && len(f.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = '`+f.slot+`' AND active`)) == 1
	})
}

// waitFor polls cond every 50 ms for up to limit, failing the test when
// the run ended or the time is up.
func (f *fixture) waitFor(r *run, limit time.Duration, what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if r != nil {
			if err := r.failed(); err != nil {
				f.t.Fatalf("waiting for %s: %v", what, err)
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// binDir holds the tidemark binary the kill tests build (TestMain removes
// it).
var binDir string
