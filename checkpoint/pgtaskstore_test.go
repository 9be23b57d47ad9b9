package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/internal/pgutil"
	"github.com/tidemark/tidemark/spec"
)

// withParams adds connection parameters to a URL or key=value DSN.
func withParams(dsn string, kv ...string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	for i := 0; i < len(kv); i += 2 {
		dsn += " " + kv[i] + "=" + kv[i+1]
	}
	return dsn
}

// pgSchema returns the DSN of a schema of the test's own (search_path),
// the bare DSN and the schema.
func pgSchema(t *testing.T) (dsn, base, schema string) {
	base, schema = pgtest.Schema(t)
	return withParams(base, "search_path", schema), base, schema
}

func openPG(t *testing.T, dsn, pipeline string) *PGTaskStore {
	t.Helper()
	s, err := OpenPGTaskStore(context.Background(), dsn, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPGTaskStoreConformance(t *testing.T) {
	pgtest.DSN(t)
	testTaskStore(t, func(t *testing.T) (TaskStore, func() TaskStore) {
		dsn, _, _ := pgSchema(t)
		return openPG(t, dsn, "revenue"), func() TaskStore { return openPG(t, dsn, "revenue") }
	})
}

// TestPGTaskStoreTable: the table's layout, its record in tidemark_tables,
// uncompressed storage of data, bytes = the length; pipelines sharing the
// table do not see each other's objects.
func TestPGTaskStoreTable(t *testing.T) {
	ctx := context.Background()
	dsn, base, schema := pgSchema(t)
	a := openPG(t, dsn, "revenue")
	b := openPG(t, dsn, "orders")
	if a.Table() != schema+"."+TaskStoreTable {
		t.Errorf("Table() = %s", a.Table())
	}
	mustPut(t, a, "t", "seg-1", []byte("revenue's"))
	mustPut(t, b, "t", "seg-1", []byte("orders' segment"))
	checkGet(t, a, "t", "seg-1", 0, -1, "revenue's")
	checkGet(t, b, "t", "seg-1", 0, -1, "orders' segment")
	if err := a.Delete(ctx, "t", "seg-1"); err != nil {
		t.Fatal(err)
	}
	checkList(t, a, "t")
	checkList(t, b, "t", "seg-1")
	q := `"` + schema + `".`
	pgtest.Check(t, base, "SELECT pipeline, task, name, bytes, encode(data, 'escape') FROM "+q+"tidemark_checkpoints",
		"orders | t | seg-1 | 15 | orders' segment\n")
	pgtest.Check(t, base, "SELECT table_name, pipeline, table_oid = '"+q+"tidemark_checkpoints'::regclass::oid::bigint FROM "+q+"tidemark_tables",
		"tidemark_checkpoints | revenue | t\n")
	pgtest.Check(t, base, `SELECT attname, format_type(atttypid, atttypmod), attnotnull, attstorage, coalesce((SELECT collname FROM pg_collation WHERE oid = attcollation), '') FROM pg_attribute
WHERE attrelid = '`+q+`tidemark_checkpoints'::regclass AND attnum > 0 ORDER BY attnum`,
		"pipeline | text | t | x | C\ntask | text | t | x | C\nname | text | t | x | C\ndata | bytea | t | e | \nbytes | bigint | t | p | \ncreated_at | timestamp with time zone | t | p | \n")
}

// TestPGTaskStoreConcurrentOpen: instances starting at once on an empty
// schema create the table once and all open it.
func TestPGTaskStoreConcurrentOpen(t *testing.T) {
	dsn, base, schema := pgSchema(t)
	var wg sync.WaitGroup
	stores := make([]*PGTaskStore, 6)
	errs := make([]error, 6)
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = OpenPGTaskStore(context.Background(), dsn, "revenue")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		} else {
			stores[i].Close()
		}
	}
	pgtest.Check(t, base, `SELECT count(*) FROM "`+schema+`".tidemark_tables`, "1\n")
}

// TestPGTaskStoreRefusesOthersTable: a tidemark_checkpoints that tidemark
// did not create — made by hand, or dropped and made again by hand after
// tidemark created it — is refused, naming it, and left as it was; a
// tidemark table whose layout was changed is refused naming the columns.
func TestPGTaskStoreRefusesOthersTable(t *testing.T) {
	ctx := context.Background()
	dsn, base, schema := pgSchema(t)
	q := `"` + schema + `".`
	pgtest.Exec(t, base, "CREATE TABLE "+q+"tidemark_checkpoints (pipeline text, task text, name text, data bytea, bytes bigint, created_at timestamptz, PRIMARY KEY (pipeline, task, name))",
		"INSERT INTO "+q+"tidemark_checkpoints VALUES ('p', 't', 'n', 'mine', 4, now())")
	wantMsg := "table " + schema + ".tidemark_checkpoints exists but tidemark did not create it (" + schema + ".tidemark_tables does not record it)"
	_, err := OpenPGTaskStore(ctx, dsn, "revenue")
	if err == nil || !strings.Contains(err.Error(), wantMsg) || !strings.HasPrefix(err.Error(), "checkpoint store "+RedactURL(dsn)+": ") {
		t.Fatalf("open over a user's table: %v\nwant it to name the URL and contain %q", err, wantMsg)
	}
	pgtest.Check(t, base, "SELECT pipeline, task, name, encode(data, 'escape') FROM "+q+"tidemark_checkpoints", "p | t | n | mine\n")

	// Created by tidemark, then dropped and made again by someone else.
	pgtest.Exec(t, base, "DROP TABLE "+q+"tidemark_checkpoints")
	s := openPG(t, dsn, "revenue")
	s.Close()
	pgtest.Exec(t, base, "DROP TABLE "+q+"tidemark_checkpoints",
		"CREATE TABLE "+q+"tidemark_checkpoints (pipeline text, task text, name text, data bytea, bytes bigint, created_at timestamptz, PRIMARY KEY (pipeline, task, name))")
	if _, err := OpenPGTaskStore(ctx, dsn, "revenue"); err == nil || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("open over a table made again by hand: %v", err)
	}

	// tidemark's, with a column added.
	pgtest.Exec(t, base, "DROP TABLE "+q+"tidemark_checkpoints")
	s = openPG(t, dsn, "revenue")
	s.Close()
	pgtest.Exec(t, base, "ALTER TABLE "+q+"tidemark_checkpoints ADD COLUMN note text")
	_, err = OpenPGTaskStore(ctx, dsn, "revenue")
	if err == nil || !strings.Contains(err.Error(), "table "+schema+".tidemark_checkpoints has the columns (pipeline text NOT NULL, task text NOT NULL, name text NOT NULL, data bytea NOT NULL, bytes bigint NOT NULL, created_at timestamp with time zone NOT NULL, note text) and primary key (pipeline, task, name)") {
		t.Fatalf("open over a changed layout: %v", err)
	}
}

// TestPGTaskStoreNames: names text cannot hold are refused, naming them.
func TestPGTaskStoreNames(t *testing.T) {
	dsn, _, _ := pgSchema(t)
	s := openPG(t, dsn, "revenue")
	for _, tc := range []struct{ task, name, want string }{
		{"t", "nul\x00", `object name "nul\x00" holds a NUL byte`},
		{"\xff", "n", `task name "\xff" is not valid UTF-8`},
	} {
		if err := s.Put(context.Background(), tc.task, tc.name, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Put(%q, %q): %v, want %s", tc.task, tc.name, err, tc.want)
		}
	}
	if _, err := OpenPGTaskStore(context.Background(), dsn, ""); err == nil || !strings.Contains(err.Error(), "empty pipeline name") {
		t.Errorf("empty pipeline: %v", err)
	}
}

// appName returns a DSN whose sessions carry a unique application_name,
// and that name.
func appName(t *testing.T, dsn string) (string, string) {
	var b [4]byte
	rand.Read(b[:])
	name := "tm-ckstore-" + hex.EncodeToString(b[:])
	return withParams(dsn, "application_name", name), name
}

// TestPGTaskStoreRetriesTransient: when the server ends the store's
// sessions (pg_terminate_backend, as a restart or failover does), the
// next calls succeed on new connections; with retries off they fail.
func TestPGTaskStoreRetriesTransient(t *testing.T) {
	ctx := context.Background()
	dsn, base, _ := pgSchema(t)
	dsn, app := appName(t, dsn)
	terminate := func() {
		pgtest.Exec(t, base, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '"+app+"'")
	}
	fast := func(ctx context.Context, d time.Duration) error { return nil }
	for _, retry := range []pgutil.Retry{{}, {Off: true}} {
		s, err := openPGTaskStore(ctx, dsn, "revenue", retry, fast)
		if err != nil {
			t.Fatal(err)
		}
		mustPut(t, s, "t", "seg-1", []byte("before"))
		terminate()
		_, gerr := s.Get(ctx, "t", "seg-1", 0, -1)
		terminate()
		perr := s.Put(ctx, "t", "seg-2", []byte("after"))
		terminate()
		_, lerr := s.List(ctx, "t")
		if retry.Off {
			if gerr == nil && perr == nil && lerr == nil {
				t.Errorf("with retries off, every call after a terminated session succeeded: the test does not terminate them")
			}
		} else {
			if gerr != nil || perr != nil || lerr != nil {
				t.Errorf("after terminated sessions: Get %v, Put %v, List %v", gerr, perr, lerr)
			}
			checkList(t, s, "t", "seg-1", "seg-2")
			if err := s.Delete(ctx, "t", "seg-1", "seg-2"); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
}

// TestPGTaskStoreLostReply: a Put whose INSERT committed but whose reply
// was lost (a transient error after the statement) is retried, finds its
// own object and succeeds; a Put of other data under that name still
// fails with os.ErrExist.
func TestPGTaskStoreLostReply(t *testing.T) {
	ctx := context.Background()
	dsn, _, _ := pgSchema(t)
	s, err := openPGTaskStore(ctx, dsn, "revenue", pgutil.Retry{}, func(context.Context, time.Duration) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lost := 0
	s.hook = func(op string) error {
		if op == "put" && lost == 0 {
			lost++
			return io.ErrUnexpectedEOF
		}
		return nil
	}
	mustPut(t, s, "t", "seg-1", []byte("committed once"))
	if lost != 1 {
		t.Fatalf("the hook lost %d replies", lost)
	}
	checkGet(t, s, "t", "seg-1", 0, -1, "committed once")
	lost = 0
	if err := s.Put(ctx, "t", "seg-1", []byte("another writer's")); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Put of other data after a lost reply: %v, want os.ErrExist", err)
	}
	checkGet(t, s, "t", "seg-1", 0, -1, "committed once")
}

// TestPGTaskStoreAnswersNotRetried: a missing object, a short one and a
// name taken are answers, returned at once (a short read wraps
// io.ErrUnexpectedEOF, which Transient takes for a lost connection: each
// such Get used to wait 16 s of retries).
func TestPGTaskStoreAnswersNotRetried(t *testing.T) {
	ctx := context.Background()
	dsn, _, _ := pgSchema(t)
	sleeps := 0
	s, err := openPGTaskStore(ctx, dsn, "revenue", pgutil.Retry{}, func(context.Context, time.Duration) error { sleeps++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustPut(t, s, "t", "o", []byte("0123456789"))
	for _, r := range [][2]int64{{5, 6}, {11, -1}, {11, 0}, {1 << 40, 1}} {
		_, err := s.Get(ctx, "t", "o", r[0], r[1])
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Get(%d, %d): %v", r[0], r[1], err)
		}
	}
	_, err = s.Get(ctx, "t", "o", 11, -1)
	if want := `checkpoint object "o" of task "t" in table ` + s.Table() + ` (pipeline "revenue", ` + RedactURL(dsn) + `): it is 10 bytes, shorter than offset 11: unexpected EOF`; err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
	if _, err := s.Get(ctx, "t", "missing", 0, -1); !errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
	if err := s.Put(ctx, "t", "o", nil); !errors.Is(err, os.ErrExist) {
		t.Error(err)
	}
	if sleeps != 0 {
		t.Errorf("%d retries of answers", sleeps)
	}
}

// TestPGTaskStoreUnreachable: a server that refuses connections fails the
// open after the retries, naming the URL without its password.
func TestPGTaskStoreUnreachable(t *testing.T) {
	ctx := context.Background()
	var waits []time.Duration
	_, err := openPGTaskStore(ctx, "postgres://app:s3cret@127.0.0.1:1/ck?sslmode=disable&connect_timeout=2", "revenue",
		pgutil.Retry{Retries: 3, Backoff: time.Millisecond, MaxBackoff: 3 * time.Millisecond},
		func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil })
	if err == nil {
		t.Fatal("open of a closed port succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "s3cret") || !strings.HasPrefix(msg, "checkpoint store postgres://app@127.0.0.1:1/ck?") || !strings.Contains(msg, "failed 4 times in 6ms, for a transient reason each time") {
		t.Errorf("error %q", msg)
	}
	if len(waits) != 3 || waits[0] != time.Millisecond || waits[1] != 2*time.Millisecond || waits[2] != 3*time.Millisecond {
		t.Errorf("waits %v, want 1ms 2ms 3ms", waits)
	}
}

// TestRedactURL: the password of a URL or DSN never reaches a message.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:s3cret@db:5432/ck?sslmode=require": "postgres://app@db:5432/ck?sslmode=require",
		"postgresql://db/ck": "postgresql://db/ck",
		"postgres://db/ck?password=s3cret&sslmode=disable": "postgres://db/ck?password=xxxxx&sslmode=disable",
		"host=db user=app password=s3cret dbname=ck":       "host=db user=app password=xxxxx dbname=ck",
		"host=db password='s3 cret' dbname=ck":             "host=db password=xxxxx dbname=ck",
		"postgres://app:s3cr%t@db/ck":                      "a URL that does not parse",
		"postgres://app@db/ck":                             "postgres://app@db/ck",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenTaskStore: checkpoint.store opens a PGTaskStore, dir a
// DirTaskStore; another scheme and no location are refused naming the key.
func TestOpenTaskStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() + "/ck"
	s, err := OpenTaskStore(ctx, &spec.Checkpoint{Dir: dir}, "revenue")
	if ds, ok := s.(*DirTaskStore); err != nil || !ok || ds.Dir() != dir {
		t.Fatalf("dir: %T %v", s, err)
	}
	s.Close()
	for _, tc := range []struct {
		c    *spec.Checkpoint
		want string
	}{
		{nil, "checkpoint: the pipeline has no checkpoint section"},
		{&spec.Checkpoint{}, "checkpoint.dir: required: the directory that holds the checkpoints"},
		{&spec.Checkpoint{Store: "mysql://app:s3cret@db/ck"}, "checkpoint.store: mysql://app@db/ck: want a PostgreSQL URL, postgres://… or postgresql://…"},
	} {
		if _, err := OpenTaskStore(ctx, tc.c, "revenue"); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %s", tc.c, err, tc.want)
		}
	}
	dsn, _, _ := pgSchema(t)
	if !strings.HasPrefix(dsn, "postgres://") {
		t.Skipf("TIDEMARK_TEST_POSTGRES is not a postgres:// URL")
	}
	for _, u := range []string{dsn, "postgresql" + strings.TrimPrefix(dsn, "postgres")} {
		s, err := OpenTaskStore(ctx, &spec.Checkpoint{Store: u}, "revenue")
		if ps, ok := s.(*PGTaskStore); err != nil || !ok || ps.Pipeline() != "revenue" {
			t.Fatalf("store %s: %T %v", u, s, err)
		}
		s.Close()
	}
}
