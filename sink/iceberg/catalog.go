package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver of sql catalogs
	_ "modernc.org/sqlite"             // the SQLite driver of sql catalogs

	"github.com/tidemark/tidemark/internal/durable"
	"github.com/tidemark/tidemark/sink/parquet"
)

// ErrConflict is returned (wrapped) by a catalog's commit when the table's
// current metadata is no longer the one the commit was based on: another
// writer committed in between. The sink reloads and tries again.
var ErrConflict = errors.New("the table's current metadata changed since it was read")

// catalog holds the pointer to a table's current metadata file and swaps
// it atomically (Iceberg spec, "Table Metadata": "commits … swap the
// table's metadata file atomically").
type catalog interface {
	// current returns the location of the current metadata file, "" when
	// the table does not exist, and the file's content when the catalog
	// hands it over (REST; nil: read the file).
	current(ctx context.Context) (string, []byte, error)
	// commit makes next (encoded as data) the table's metadata if base
	// (at location loc; nil and "" for a table being created) is still
	// current: the file catalogs write data as the next metadata file
	// (version version, the base's plus one) and swap their pointer; the
	// REST catalog sends the difference between base and next as
	// requirements and updates. It returns the new metadata's location;
	// ErrConflict (wrapped) when base is not current any more. fault is
	// called with "iceberg-metadata" once the file is written (REST: the
	// request built), before the swap.
	commit(ctx context.Context, loc string, base, next *Metadata, version int, data []byte, fault func(string)) (string, error)
	close() error
}

// hadoopCatalog is Iceberg's file-system table layout (HadoopTableOperations):
// TABLE/metadata/v<N>.metadata.json, the current N in
// TABLE/metadata/version-hint.text. A new version is published by
// link(2), which fails when the name exists: two writers never both win.
type hadoopCatalog struct{ table string }

func (h *hadoopCatalog) metaDir() string { return filepath.Join(h.table, "metadata") }

func (h *hadoopCatalog) versionPath(v int) string {
	return filepath.Join(h.metaDir(), "v"+strconv.Itoa(v)+".metadata.json")
}

func (h *hadoopCatalog) current(ctx context.Context) (string, []byte, error) {
	loc, err := h.find()
	return loc, nil, err
}

// find returns the newest metadata version's file.
func (h *hadoopCatalog) find() (string, error) {
	v := 0
	b, err := os.ReadFile(filepath.Join(h.metaDir(), "version-hint.text"))
	switch {
	case err == nil:
		n, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if perr != nil || n < 0 {
			return "", fmt.Errorf("iceberg %s: version-hint.text holds %q, not a version", h.table, b)
		}
		v = n
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("iceberg %s: %w", h.table, err)
	}
	// The hint may lag behind (a crash after the link, before the hint):
	// the newest version is the last vN that exists (as Iceberg's
	// HadoopTableOperations.findVersion does).
	for {
		if _, err := os.Stat(h.versionPath(v + 1)); err != nil {
			break
		}
		v++
	}
	if v == 0 {
		return "", nil
	}
	if _, err := os.Stat(h.versionPath(v)); err != nil {
		return "", fmt.Errorf("iceberg %s: version-hint.text names version %d, and %s: %w", h.table, v, h.versionPath(v), err)
	}
	return h.versionPath(v), nil
}

func (h *hadoopCatalog) commit(ctx context.Context, base string, _, _ *Metadata, version int, data []byte, fault func(string)) (string, error) {
	if err := os.MkdirAll(h.metaDir(), 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(h.metaDir(), "."+uuid.NewString()+".metadata.json.tmp")
	if err := writeSynced(tmp, data); err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	fault("iceberg-metadata")
	cur, err := h.find()
	if err != nil {
		return "", err
	}
	if cur != base {
		return "", fmt.Errorf("iceberg %s: %w (now %s, based on %s)", h.table, ErrConflict, cur, base)
	}
	to := h.versionPath(version)
	if err := os.Link(tmp, to); err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("iceberg %s: %w (%s exists)", h.table, ErrConflict, to)
		}
		return "", err
	}
	if err := durable.SyncDir(h.metaDir()); err != nil {
		return "", err
	}
	// The hint is an optimisation: current() finds newer versions
	// without it.
	if err := parquet.WriteAtomic(filepath.Join(h.metaDir(), "version-hint.text"), []byte(strconv.Itoa(version))); err != nil {
		return "", err
	}
	return to, nil
}

func (h *hadoopCatalog) close() error { return nil }

// sqlCatalog is Iceberg's JDBC catalog (JdbcCatalog): the table
// iceberg_tables (catalog_name, table_namespace, table_name,
// metadata_location, previous_metadata_location, iceberg_type) in SQLite
// or PostgreSQL; a commit writes the metadata file under the table's
// directory, then swaps metadata_location with a conditional UPDATE.
type sqlCatalog struct {
	db          *sql.DB
	pg          bool
	name, ns    string
	table, dir  string
	hasTypeCol  bool
	placeholder func(i int) string
}

func openSQLCatalog(ctx context.Context, uri, name, ns, table, dir string) (*sqlCatalog, error) {
	c := &sqlCatalog{name: name, ns: ns, table: table, dir: dir}
	var err error
	if strings.HasPrefix(uri, "postgres://") || strings.HasPrefix(uri, "postgresql://") {
		c.pg = true
		c.db, err = sql.Open("pgx", uri)
		c.placeholder = func(i int) string { return "$" + strconv.Itoa(i) }
	} else {
		if err := os.MkdirAll(filepath.Dir(uri), 0o755); err != nil {
			return nil, err
		}
		c.db, err = sql.Open("sqlite", "file:"+uri+"?_pragma=busy_timeout(10000)")
		c.placeholder = func(int) string { return "?" }
	}
	if err != nil {
		return nil, err
	}
	_, err = c.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS iceberg_tables (
  catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL,
  table_name VARCHAR(255) NOT NULL,
  metadata_location VARCHAR(1000),
  previous_metadata_location VARCHAR(1000),
  iceberg_type VARCHAR(5),
  PRIMARY KEY (catalog_name, table_namespace, table_name))`)
	if err == nil {
		var n int
		// A catalog created by an older JdbcCatalog has no iceberg_type.
		c.hasTypeCol = c.db.QueryRowContext(ctx, `SELECT count(*) FROM iceberg_tables WHERE iceberg_type IS NULL AND 1 = 0`).Scan(&n) == nil
	}
	if err != nil {
		c.db.Close()
		return nil, fmt.Errorf("iceberg sql catalog: %w", err)
	}
	return c, nil
}

func (c *sqlCatalog) where(first int) string {
	return fmt.Sprintf("catalog_name = %s AND table_namespace = %s AND table_name = %s", c.placeholder(first), c.placeholder(first+1), c.placeholder(first+2))
}

func (c *sqlCatalog) current(ctx context.Context) (string, []byte, error) {
	var loc sql.NullString
	err := c.db.QueryRowContext(ctx, `SELECT metadata_location FROM iceberg_tables WHERE `+c.where(1), c.name, c.ns, c.table).Scan(&loc)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("iceberg sql catalog: %w", err)
	}
	return loc.String, nil, nil
}

func (c *sqlCatalog) commit(ctx context.Context, base string, _, _ *Metadata, version int, data []byte, fault func(string)) (string, error) {
	md := filepath.Join(c.dir, "metadata")
	if err := os.MkdirAll(md, 0o755); err != nil {
		return "", err
	}
	// JdbcTableOperations' naming: <version>-<uuid>.metadata.json.
	loc := filepath.Join(md, fmt.Sprintf("%05d-%s.metadata.json", version, uuid.NewString()))
	if err := writeSynced(loc, data); err != nil {
		return "", err
	}
	if err := durable.SyncDir(md); err != nil {
		return "", err
	}
	fault("iceberg-metadata")
	var res sql.Result
	var err error
	if base == "" {
		q := `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location) VALUES (` +
			c.placeholder(1) + `, ` + c.placeholder(2) + `, ` + c.placeholder(3) + `, ` + c.placeholder(4) + `, NULL)`
		args := []any{c.name, c.ns, c.table, loc}
		if c.hasTypeCol {
			q = `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type) VALUES (` +
				c.placeholder(1) + `, ` + c.placeholder(2) + `, ` + c.placeholder(3) + `, ` + c.placeholder(4) + `, NULL, 'TABLE')`
		}
		res, err = c.db.ExecContext(ctx, q+` ON CONFLICT DO NOTHING`, args...)
	} else {
		res, err = c.db.ExecContext(ctx, `UPDATE iceberg_tables SET metadata_location = `+c.placeholder(1)+`, previous_metadata_location = `+c.placeholder(2)+
			` WHERE `+c.where(3)+` AND metadata_location = `+c.placeholder(6), loc, base, c.name, c.ns, c.table, base)
	}
	if err != nil {
		os.Remove(loc)
		return "", fmt.Errorf("iceberg sql catalog: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		os.Remove(loc)
		return "", fmt.Errorf("iceberg sql catalog %s.%s: %w", c.ns, c.table, ErrConflict)
	}
	return loc, nil
}

func (c *sqlCatalog) close() error { return c.db.Close() }

// writeSynced creates path with data and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
