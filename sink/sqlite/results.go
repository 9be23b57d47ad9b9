package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/results"
	rowpkg "github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// busyTimeout is how long a statement waits for another connection's lock
// (a reader checkpointing the WAL, another writer) before failing.
const busyTimeout = 5 * time.Second

// Results keeps a stage's result rows in an upsert table (see the package
// documentation for the table and the write rules).
type Results struct {
	db    *sql.DB
	path  string
	table string
	nCol  int
	nKey  int
	batch int // most rows per upsert statement

	enc      encoder
	ops      []pendingRow // buffered rows, in order
	args     []any        // their arguments, nCol per row
	scratch  []any
	segments []segment

	upserts    []*sql.Stmt // upserts[n]: an upsert of n rows, prepared on first use
	nullUpdate *sql.Stmt
	nullInsert *sql.Stmt
	del        *sql.Stmt
	closed     bool
	// replace: the table's existing rows are deleted in the transaction of
	// the first Flush (a run that recomputes the result from the start).
	replace bool

	// Exactly-once mode (commit.go).
	exactlyOnce    bool
	pipeline, name string // the commit marker's identity
	prepared       *preparedRows

	o        Options
	loc      *time.Location
	keyNames []string
	linIdx   int // the Desc's value column left out (lineage), -1 for none
	linRow   changelog.Row
	// The table was created by this sink (it did not exist when the sink
	// opened); it is tidemark's (recorded in tidemark_tables).
	created, owned bool
	notes          []string
}

// pendingRow is a buffered row waiting for Flush.
type pendingRow struct {
	op      changelog.Op // Insert, UpdateAfter or Delete
	nullKey bool         // a key value is NULL
}

var (
	_ sink.Results = (*Results)(nil)
	_ sink.Noter   = (*Results)(nil)
	_ sink.Aborter = (*Results)(nil)
)

// New opens or creates the SQLite database at path (creating its parent
// directories), makes sure the result table for d can take the rows (see
// NewWithOptions) and prepares the sink's statements.
func New(ctx context.Context, path, table string, d changelog.Desc) (*Results, error) {
	return NewWithOptions(ctx, path, table, d, Options{})
}

// Options adjusts a sink. Fresh … Serve are named as sink/postgres's
// Options are and kept apart: each is its sink's public API and states
// its own database's behaviour and defaults (Resume here also covers a
// missing file).
type Options struct {
	// Fresh says the run recomputes its results from the start (it
	// resumes no checkpoint): the rows of a table tidemark created are
	// deleted in the transaction of the first Flush (or Recover(0, nil)),
	// so that the previous run's rows do not hold the new ones back by
	// their versions; Notes says how many. Readers see the old contents
	// until that commit. A table tidemark did not create is never
	// emptied. Default false: rows are upserted over whatever the table
	// holds.
	Fresh bool
	// ReplaceLayout (the sink key replace) lets a Fresh run drop and
	// create anew a table tidemark created whose layout differs from the
	// one the sink writes; Notes says so. Default false: such a table is
	// refused with a *SchemaError. Never a table tidemark did not create,
	// nor one a view reads (*ViewDependsError).
	ReplaceLayout bool
	// Resume says the run resumes from a checkpoint: a missing table is a
	// *MissingTableError, not a new empty table, and a missing database
	// file is one (NoFile) before anything is created. Default false.
	Resume bool
	// Lineage names the Desc's lineage value column ("lineage"): written
	// into tables the sink creates, and into an existing table only when
	// it has a column of that name; NoLineage leaves it out everywhere.
	// "" (default): every value column is an ordinary column.
	Lineage   string
	NoLineage bool
	// Serve: when the sink creates the table and it is a version table of
	// the versioning convention (docs/reprocessing.md; revenue__live is
	// version live of revenue), the serving view (revenue) is made to
	// read it (results.PromoteIfAbsent: promotion 1) unless something of
	// that name exists; Notes says so. Default false.
	Serve bool
	// ExactlyOnce makes the sink a sink.Committer: rows wait for the
	// checkpoint that covers them and are written in one transaction with
	// the commit marker (Pipeline, Sink, checkpoint id) in the table
	// tidemark_commits; Flush writes nothing.
	ExactlyOnce bool
	// Pipeline and Sink name the commit marker (ExactlyOnce only);
	// Pipeline is also recorded in tidemark_tables for the tables the
	// sink creates.
	Pipeline, Sink string
}

// NewWithOptions is New with options. The table:
//
//   - that does not exist is created and recorded in tidemark_tables,
//     unless o.Resume (*MissingTableError);
//   - that tidemark created must have exactly the sink's layout
//     (*SchemaError, Owned), or is replaced with o.ReplaceLayout and
//     o.Fresh (not when a view reads it: *ViewDependsError);
//   - of anyone else is used as it is when it has the columns the sink
//     writes, declared with types whose affinity keeps the values exactly
//     (TEXT for decimals and text; INTEGER or NUMERIC for integers; TEXT or
//     NUMERIC for times; untyped for any), every other column nullable or
//     with a default, and a primary key or unique index on window_start and
//     the key columns; otherwise a *SchemaError names every problem. It is
//     never dropped or emptied.
//
// It also returns an error when d.Timezone is not a known IANA zone ("" is
// UTC), when two columns share a name, or when the database cannot be
// opened.
func NewWithOptions(ctx context.Context, path, table string, d changelog.Desc, o Options) (*Results, error) {
	r, err := open(ctx, path, table, d, o)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return r, nil
}

func open(ctx context.Context, path, table string, d changelog.Desc, o Options) (*Results, error) {
	if table == "" {
		return nil, errors.New("empty table name")
	}
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	if _, err := tableColumns(&d); err != nil {
		return nil, fmt.Errorf("table %q: %w", table, err)
	}
	if o.Resume {
		if err := mustExist(path, table); err != nil {
			return nil, err
		}
	}
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	r := &Results{
		db: db, path: path, table: table, nKey: len(d.Key), loc: loc, linIdx: -1,
		exactlyOnce: o.ExactlyOnce, pipeline: o.Pipeline, name: o.Sink, o: o,
	}
	for _, k := range d.Key {
		r.keyNames = append(r.keyNames, k.Name)
	}
	cols, err := r.init(ctx, d)
	if err == nil {
		err = useWAL(ctx, db)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	r.nCol = len(cols)
	r.batch = min(defaultBatch, maxVariables/len(cols))
	r.enc = encoder{cols: cols, nKey: len(d.Key), loc: loc}
	r.replace = o.Fresh && r.owned && !r.created
	if err := r.prepareStatements(ctx, cols); err != nil {
		r.closeStatements()
		db.Close()
		return nil, err
	}
	if o.Serve && r.created {
		note, err := serve(ctx, func(ctx context.Context) (*results.DB, error) { return results.Open(ctx, path) }, table)
		if err != nil {
			r.closeStatements()
			db.Close()
			return nil, err
		}
		if note != "" {
			r.notes = append(r.notes, note)
		}
	}
	return r, nil
}

// serve makes the serving view of the version table table read it, when
// nothing has the view's name (see Options.Serve), and returns the note to
// say so ("" when it did nothing).
func serve(ctx context.Context, open func(context.Context) (*results.DB, error), table string) (string, error) {
	view, version, ok := results.SplitVersion(table)
	if !ok {
		return "", nil
	}
	db, err := open(ctx)
	if err != nil {
		return "", fmt.Errorf("create the serving view %s: %w", view, err)
	}
	defer db.Close()
	p, err := db.PromoteIfAbsent(ctx, view, version)
	if err != nil {
		return "", fmt.Errorf("create the serving view %s: %w", view, err)
	}
	if p == nil {
		return "", nil
	}
	return fmt.Sprintf("created the serving view %s, which reads %s (promotion %d): readers query %s, and tidemark promote switches it to another version", view, table, p.ID, view), nil
}

// mustExist returns a *MissingTableError (NoFile) when the database file
// at path does not exist: a resuming sink refuses before SQLite would
// create an empty database there. Other stat errors are returned as they
// are.
func mustExist(path, table string) error {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return &MissingTableError{Path: path, Table: table, NoFile: true}
	}
	return err
}

// useWAL switches the database to write-ahead logging (persistent in the
// file), once the sink has accepted its table: not in the DSN, so that a
// sink refusing a database it found (a table it cannot write) leaves the
// file's header as it was.
func useWAL(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return fmt.Errorf("journal_mode WAL: %w", err)
	}
	return nil
}

// openDB opens the database file with one connection (creating its parent
// directories).
func openDB(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, err
	}
	// One connection: statements prepared on the DB are then reused by
	// every transaction, and SQLite has one writer anyway.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// Notes implements sink.Noter: what the sink did to its table besides
// writing rows.
func (r *Results) Notes() []string { return r.notes }

// keptLimit bounds the rows of a table the sink did not create that Notes
// counts.
const keptLimit = 1_000_000

// countRows counts the rows of table (matching where, if given), at most
// keptLimit+1.
func countRows(ctx context.Context, q queryer, table, where string, args ...any) (int64, error) {
	if where != "" {
		where = " WHERE " + where
	}
	var n int64
	err := q.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM %s%s LIMIT %d)", quote(table), where, keptLimit+1), args...).Scan(&n)
	return n, err
}

func countText(n int64) string {
	if n > keptLimit {
		return fmt.Sprintf("more than %d", keptLimit)
	}
	return fmt.Sprint(n)
}

// dsn returns the data source name for path: a file: URI (so that '?' or
// '#' in the path are escaped) with the connection settings.
func dsn(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	u := url.URL{Path: filepath.ToSlash(path)}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// init decides, in one transaction, the table the sink writes: it creates
// it, replaces it, or checks it, and returns the columns written.
func (r *Results) init(ctx context.Context, d changelog.Desc) (cols []column, err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	for _, q := range []string{createCommitsSQL, createTablesSQL} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("create the bookkeeping tables: %w", err)
		}
	}
	ti, err := inspect(ctx, tx, r.table)
	if err != nil {
		return nil, err
	}
	mine := false
	if ti != nil {
		if mine, err = isOwned(ctx, tx, r.table, ti); err != nil {
			return nil, err
		}
	}
	lin := -1
	for i, c := range d.Values {
		if r.o.Lineage != "" && c.Name == r.o.Lineage {
			lin = i
		}
	}
	if lin >= 0 && (r.o.NoLineage || ti != nil && !mine && ti.col(r.o.Lineage) == nil) {
		r.linIdx = lin
		d.Values = append(append([]changelog.Column(nil), d.Values[:lin]...), d.Values[lin+1:]...)
	}
	if cols, err = tableColumns(&d); err != nil {
		return nil, fmt.Errorf("table %q: %w", r.table, err)
	}
	pk := primaryKey(cols, r.nKey)
	create := createTable(r.table, cols, r.nKey)
	switch {
	case ti == nil:
		if r.o.Resume {
			return nil, &MissingTableError{Path: r.path, Table: r.table, Marker: readMarker(ctx, tx, r.pipeline, r.name)}
		}
		if err := createOwned(ctx, tx, r.table, create, r.pipeline, false); err != nil {
			return nil, err
		}
		r.created, r.owned = true, true
	case mine:
		r.owned = true
		serr := checkExact(ti, r.table, cols, pk)
		if serr == nil {
			break
		}
		if !r.o.ReplaceLayout {
			return nil, serr
		}
		if !r.o.Fresh {
			return nil, fmt.Errorf("%w; the run resumes a checkpoint, and replace: true replaces a table only at a fresh start", serr)
		}
		views, err := dependentViews(ctx, tx, r.table)
		if err != nil {
			return nil, fmt.Errorf("look up the views on %q: %w", r.table, err)
		}
		if len(views) > 0 {
			return nil, &ViewDependsError{Table: r.table, Views: views}
		}
		n, err := countRows(ctx, tx, r.table, "")
		if err != nil {
			return nil, err
		}
		if err := createOwned(ctx, tx, r.table, create, r.pipeline, true); err != nil {
			return nil, err
		}
		var se *SchemaError
		errors.As(serr, &se)
		r.notes = append(r.notes, fmt.Sprintf("replaced table %s, which tidemark created, of another layout (%s): %s rows dropped", r.table, se.differences(), countText(n)))
		r.created = true
	default:
		if err := bind(ti, r.table, cols, pk); err != nil {
			return nil, err
		}
		if r.o.Fresh {
			n, err := countRows(ctx, tx, r.table, "")
			if err != nil {
				return nil, err
			}
			if n > 0 {
				r.notes = append(r.notes, fmt.Sprintf("kept the %s rows already in table %s, which tidemark did not create: a row there is replaced only by a higher version",
					countText(n), r.table))
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return cols, nil
}

// prepareStatements prepares the statements of the table's columns.
func (r *Results) prepareStatements(ctx context.Context, cols []column) error {
	r.upserts = make([]*sql.Stmt, r.batch+1)
	var err error
	prepare := func(query string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = r.db.PrepareContext(ctx, query)
		if err != nil {
			err = fmt.Errorf("table %q: prepare %s: %w", r.table, query, err)
		}
		return s
	}
	r.upserts[1] = prepare(upsertSQL(r.table, cols, r.nKey, 1))
	r.nullUpdate = prepare(nullUpdateSQL(r.table, cols, r.nKey))
	r.nullInsert = prepare(nullInsertSQL(r.table, cols, r.nKey))
	r.del = prepare(deleteSQL(r.table, cols, r.nKey))
	return err
}

// Write buffers rows for the next Flush; update_before rows are skipped.
// The lineage value is left out when the table has no lineage column
// (Options.Lineage). It buffers nothing and returns an error when a row
// does not fit the table (wrong number of columns, a value of the wrong
// kind; in a table of the user's, NULL in a NOT NULL column or a decimal
// that a NUMERIC or REAL column would round; the error names the row and
// the column), after Close (wrapping
// sql.ErrConnDone), or when ctx is done.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	nOps, nArgs := len(r.ops), len(r.args)
	for i := range rows {
		row := r.written(&rows[i])
		if row.Op == changelog.UpdateBefore {
			continue
		}
		if err := r.fits(row); err != nil {
			r.ops, r.args = r.ops[:nOps], r.args[:nArgs]
			return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
		}
		if row.Op > changelog.Delete {
			r.ops, r.args = r.ops[:nOps], r.args[:nArgs]
			return fmt.Errorf("sqlite %s: table %q: unknown op %s", r.path, r.table, row.Op)
		}
		var err error
		if r.args, err = r.enc.encode(r.args, row); err != nil {
			r.ops, r.args = r.ops[:nOps], r.args[:nArgs]
			return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
		}
		p := pendingRow{op: row.Op}
		for _, v := range row.Key {
			p.nullKey = p.nullKey || v.IsNull()
		}
		r.ops = append(r.ops, p)
	}
	return nil
}

// written returns the row as the table stores it: without the lineage
// value when the table has no lineage column (in a reused row, valid
// until the next call).
func (r *Results) written(rw *changelog.Row) *changelog.Row {
	if r.linIdx < 0 || r.linIdx >= len(rw.Values) {
		return rw
	}
	vals := append(r.linRow.Values[:0], rw.Values[:r.linIdx]...)
	r.linRow = *rw
	r.linRow.Values = append(vals, rw.Values[r.linIdx+1:]...)
	return &r.linRow
}

// fits returns an error naming the row and the column when a value cannot
// go into a table of the user's as it is: NULL where the column is NOT
// NULL, a decimal that a NUMERIC or REAL column would round.
func (r *Results) fits(rw *changelog.Row) error {
	cols := r.enc.cols
	bad, why := "", ""
	check := func(c *column, v rowpkg.Value) {
		switch {
		case bad != "":
		case v.IsNull() && c.notNull:
			bad, why = c.name, "is NOT NULL in the table, and the value is NULL"
		case c.asNumber && v.Kind == rowpkg.KindDecimal:
			if w := c.numberFit(string(rowpkg.FormatDecimal(nil, v.D))); w != "" {
				bad, why = c.name, "("+c.decl+"): "+w
			}
		}
	}
	for i, v := range rw.Key {
		if i < r.nKey {
			check(&cols[2+i], v)
		}
	}
	for i, v := range rw.Values {
		if c := 2 + r.nKey + i; c < len(cols) {
			check(&cols[c], v)
		}
	}
	if rw.WatermarkAt == changelog.WatermarkNone {
		check(&cols[len(cols)-2], rowpkg.Null)
	}
	if bad == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("window_start=" + rowpkg.FormatTime(rw.WindowStart, r.loc))
	for i, v := range rw.Key {
		b.WriteString(" " + r.keyNames[i] + "=")
		if v.IsNull() {
			b.WriteString("NULL")
		} else {
			b.Write(v.AppendText(nil, r.loc))
		}
	}
	return fmt.Errorf("row %s: column %s %s", b.String(), bad, why)
}

// Flush applies the buffered rows in one transaction and commits it. On
// error the transaction is rolled back and the rows stay buffered, so a
// later Flush retries them (the version guard makes that safe). It returns
// an error after Close (wrapping sql.ErrConnDone).
func (r *Results) Flush(ctx context.Context) error {
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if r.exactlyOnce || len(r.ops) == 0 && !r.replace {
		return nil
	}
	if err := r.apply(ctx); err != nil {
		return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
	}
	clear(r.args) // drop references to the rows' strings
	r.ops, r.args = r.ops[:0], r.args[:0]
	return nil
}

// apply writes every buffered row in one transaction.
func (r *Results) apply(ctx context.Context) error {
	return r.applyRows(ctx, r.ops, r.args, nil)
}

// applyRows writes ops (with their arguments, nCol per row) in one
// transaction, after deleting the table's rows when r.replace is set;
// before the commit it calls extra, which may write more in the
// transaction, or return errSkip to roll it back without an error.
func (r *Results) applyRows(ctx context.Context, ops []pendingRow, args []any, extra func(*sql.Tx) error) (err error) {
	r.segments = split(r.segments[:0], ops, r.batch)
	// Prepare missing statements before the transaction takes the
	// connection.
	for _, g := range r.segments {
		if g.kind == segUpsert && r.upserts[g.end-g.start] == nil {
			n := g.end - g.start
			if r.upserts[n], err = r.db.PrepareContext(ctx, upsertSQL(r.table, r.enc.cols, r.nKey, n)); err != nil {
				return err
			}
		}
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
			if errors.Is(err, errSkip) {
				err = nil
			}
		}
	}()
	if extra != nil {
		// The marker check first: a skipped commit writes nothing.
		if err = extra(tx); err != nil {
			return err
		}
	}
	emptied := int64(-1)
	if r.replace {
		var res sql.Result
		if res, err = tx.ExecContext(ctx, "DELETE FROM "+quote(r.table)); err != nil {
			return err
		}
		emptied, _ = res.RowsAffected()
	}
	for _, g := range r.segments {
		a := args[g.start*r.nCol : g.end*r.nCol]
		switch g.kind {
		case segDelete:
			err = r.delete(ctx, tx, a)
		case segNullKey:
			err = r.upsertNullKey(ctx, tx, a)
		default:
			_, err = tx.StmtContext(ctx, r.upserts[g.end-g.start]).ExecContext(ctx, a...)
		}
		if err != nil {
			return err
		}
	}
	if err = tx.Commit(); err != nil {
		return err
	}
	if r.replace {
		r.notes = append(r.notes, fmt.Sprintf("emptied table %s, which tidemark created, for this fresh start: %d rows of earlier runs removed", r.table, emptied))
	}
	r.replace = false
	return nil
}

// segment is a run of buffered rows [start, end) applied by one statement
// (two for a NULL key).
type segment struct {
	kind       int
	start, end int
}

// The kinds of segment.
const (
	segUpsert  = iota // up to r.batch plain upserts
	segNullKey        // one upsert with a NULL key value
	segDelete         // one delete
)

// split cuts rows into segments of at most batch upserts, in order.
func split(dst []segment, ops []pendingRow, batch int) []segment {
	for i := 0; i < len(ops); {
		p := ops[i]
		switch {
		case p.op == changelog.Delete:
			dst = append(dst, segment{segDelete, i, i + 1})
			i++
		case p.nullKey:
			dst = append(dst, segment{segNullKey, i, i + 1})
			i++
		default:
			j := i + 1
			for j < len(ops) && j-i < batch && !ops[j].nullKey && ops[j].op != changelog.Delete {
				j++
			}
			dst = append(dst, segment{segUpsert, i, j})
			i = j
		}
	}
	return dst
}

// upsertNullKey applies one upsert whose key holds a NULL: update a lower
// version, else insert when absent.
func (r *Results) upsertNullKey(ctx context.Context, tx *sql.Tx, args []any) error {
	a := append(r.scratch[:0], args[1]) // window_end
	a = append(a, args[2+r.nKey:]...)   // values and bookkeeping
	a = r.appendKey(a, args)            // WHERE key
	a = append(a, args[len(args)-4])    // version
	r.scratch = a
	res, err := tx.StmtContext(ctx, r.nullUpdate).ExecContext(ctx, a...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	a = append(a[:0], args...)
	a = r.appendKey(a, args)
	r.scratch = a
	_, err = tx.StmtContext(ctx, r.nullInsert).ExecContext(ctx, a...)
	return err
}

// delete removes a row whose version is lower than the delete's.
func (r *Results) delete(ctx context.Context, tx *sql.Tx, args []any) error {
	a := r.appendKey(r.scratch[:0], args)
	a = append(a, args[len(args)-4])
	r.scratch = a
	_, err := tx.StmtContext(ctx, r.del).ExecContext(ctx, a...)
	return err
}

// appendKey appends a row's primary key arguments: window_start and keys.
func (r *Results) appendKey(dst, args []any) []any {
	dst = append(dst, args[0])
	return append(dst, args[2:2+r.nKey]...)
}

// Close flushes (even when ctx is done, so buffered rows are not lost to a
// cancelled run) and closes the database. Closing twice is not an error.
func (r *Results) Close(ctx context.Context) error {
	if r.closed {
		return nil
	}
	err := r.Flush(context.WithoutCancel(ctx))
	r.closed = true
	r.closeStatements()
	if cerr := r.db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sqlite %s: %w", r.path, cerr)
	}
	return err
}

// Abort implements sink.Aborter: it closes the database without
// flushing, so that a run whose start is refused after the sink opened
// neither writes buffered rows nor empties the table of a run from the
// start (Options.Fresh). Abort after Close, or twice, does nothing.
func (r *Results) Abort(context.Context) error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.closeStatements()
	if err := r.db.Close(); err != nil {
		return fmt.Errorf("sqlite %s: %w", r.path, err)
	}
	return nil
}

func (r *Results) closeStatements() {
	for _, s := range append(r.upserts, r.nullUpdate, r.nullInsert, r.del) {
		if s != nil {
			s.Close()
		}
	}
}
