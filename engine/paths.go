package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark/internal/flock"
	"github.com/tidemark/tidemark/sink/iceberg"
	"github.com/tidemark/tidemark/sink/parquet"
	"github.com/tidemark/tidemark/spec"
)

// guardOutputs makes sure that a run writes only files it may write, and
// is the only run writing them. It refuses (checkOutputPaths) an output
// that is, or would become, an input or another output, and a jsonl
// output on a device with exactly-once delivery; then it takes the
// advisory locks (internal/flock) that keep a second run off the same
// outputs:
//
//   - checkpoint.dir: DIR/LOCK (the directory is created if absent);
//   - a jsonl output PATH: PATH.lock beside the file (none for a device or
//     a named pipe);
//   - a parquet output directory DIR: DIR/_tidemark/LOCK, and an iceberg
//     table's directory TABLE (WAREHOUSE/<namespace>/<table>):
//     TABLE/.tidemark.lock — the locks their sinks would take, taken here
//     so that the directories the sinks make when they open are noted as
//     created, for a refused start to remove; the sinks then take none
//     (parquet.Options.LockHeld, iceberg.Options.LockHeld);
//   - a sqlite output PATH, table T: PATH.T.lock (T in lower case), so that
//     two runs may write different tables of one database (a backfill
//     beside the live pipeline) but never the same table. SQLite's own
//     files and locks (PATH-journal, PATH-wal, PATH-shm) are left alone:
//     tidemark never opens the database file itself, since closing any
//     descriptor of it would drop the locks SQLite holds in this process.
//
// A lock file lies beside the file a symbolic link resolves to, so two
// spellings of one output share it. specSource is false when the caller
// supplies the source (Options.Source): source.path is then not an input.
//
// It returns the function that releases the locks (call it after the
// sinks are closed; it may be called more than once). Errors: a
// *ConfigError for a refused path; an error wrapping *flock.HeldError,
// naming the output and the holder (pid, host, since when), for an output
// another run holds; file errors naming the lock file.
func guardOutputs(p *spec.Pipeline, specSource bool) (release func(), err error) {
	release, _, err = guardOutputsAt(p, specSource)
	return release, err
}

// guardOutputsAt is guardOutputs, and also returns the outputs' files and
// directories that did not exist before it (startFiles), for a start that
// is refused later to remove. A refusal of its own (another run holds an
// output) removes the lock files and directories it created.
func guardOutputsAt(p *spec.Pipeline, specSource bool) (release func(), created *startFiles, err error) {
	outs, err := checkOutputPaths(p, specSource)
	if err != nil {
		return nil, nil, err
	}
	sf := &startFiles{}
	created = sf
	var locks []*flock.Lock
	release = func() {
		for _, l := range locks {
			l.Release()
		}
		locks = nil
	}
	defer func() {
		if err != nil {
			sf.undo() // created is nil by then
		}
	}()
	for _, o := range outs {
		path, what := o.lockPath()
		if path == "" {
			continue
		}
		created.absentDirs(path, false)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			release()
			return nil, nil, fmt.Errorf("%s: %w", o.key, err)
		}
		_, lerr := os.Lstat(path)
		l, err := flock.Acquire(path)
		if err == nil {
			if errors.Is(lerr, fs.ErrNotExist) {
				created.files = append(created.files, path)
			}
			created.absentOutput(o)
		}
		if err != nil {
			release()
			var he *flock.HeldError
			if errors.As(err, &he) {
				// The held lock file was there before: undo keeps it.
				return nil, nil, fmt.Errorf("%s %s: another run is writing %s: %w; two runs on the same outputs corrupt them: wait for that run to end or stop it (its lock goes with its process, even after kill -9)", o.key, o.name(), what, err)
			}
			return nil, nil, fmt.Errorf("%s %s: %w", o.key, o.name(), err)
		}
		locks = append(locks, l)
		if o.typ == "parquet" || o.typ == "iceberg" {
			sf.held = append(sf.held, path)
		}
	}
	return release, created, nil
}

// checkOutputPaths refuses outputs that are, or would become, inputs or
// other outputs (a parquet directory or an iceberg table directory also
// when another output, an input or the checkpoint directory lies inside
// it, or it inside the checkpoint directory). Files are compared by identity (os.SameFile), after
// resolving symbolic links, so a symlink or a hard link to an input is
// caught; a file that does not exist yet is identified by the directory it
// will be created in and its name. Outputs are result sinks, late,
// quarantine, conflict and contributions outputs (jsonl files with the
// staging files beside them, sqlite databases with theirs) and the
// checkpoint directory; inputs are the source's file, directory (every
// file created in it is read) or glob (every matching file), the contract
// and the reference file. Two sqlite sinks may share a database when
// their tables differ. The null device may be written by any number of
// outputs. It returns the outputs found.
func checkOutputPaths(p *spec.Pipeline, specSource bool) ([]*output, error) {
	ins, err := inputsOf(p, specSource)
	if err != nil {
		return nil, err
	}
	outs, err := outputsOf(p)
	if err != nil {
		return nil, err
	}
	for _, o := range outs {
		if o.typ == "jsonl" && o.exactlyOnce && o.id.fi != nil && !o.id.fi.Mode().IsRegular() && !o.id.fi.IsDir() {
			return nil, &ConfigError{Err: fmt.Errorf("%s: %s is %s, not a regular file: exactly-once delivery stages lines and publishes them at each checkpoint by truncating and fsyncing the file, which a device cannot do; set delivery: at_least_once on this sink to write its lines as they come (after a restore some are written again)", o.key, o.path, kindOf(o.id.fi))}
		}
		for _, in := range ins {
			if err := o.against(in); err != nil {
				return nil, err
			}
		}
	}
	for i, a := range outs {
		for _, b := range outs[i+1:] {
			if err := a.overlaps(b); err != nil {
				return nil, err
			}
		}
	}
	return outs, nil
}

// OutputOverlap is the refusal a run of p would meet because an output
// is, or would become, one of its inputs or another output (compared by
// file identity, as the run compares them; the first found), or nil. It
// only reads the file system (stat, readlink, glob). Paths that cannot be
// examined (a source directory that does not exist yet) are not an
// overlap: the run reports them itself. For tidemark check (TM404).
func OutputOverlap(p *spec.Pipeline) error {
	ins, err := inputsOf(p, true)
	if err != nil {
		return nil
	}
	outs, err := outputsOf(p)
	if err != nil {
		return nil
	}
	for _, o := range outs {
		for _, in := range ins {
			if err := o.against(in); err != nil {
				return err
			}
		}
	}
	for i, a := range outs {
		for _, b := range outs[i+1:] {
			if err := a.overlaps(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileID identifies a file by what it is, not by how its path is spelt.
type fileID struct {
	abs  string      // the path made absolute (lexically)
	real string      // the path with every symbolic link resolved
	fi   os.FileInfo // the file, when it exists
	dir  os.FileInfo // otherwise the deepest existing directory above it,
	rest string      // and the path below that directory
	null bool        // the null device, which any number may share
}

// same reports whether a and b are one file.
func (a fileID) same(b fileID) bool {
	switch {
	case a.null || b.null:
		return false
	case a.fi != nil && b.fi != nil:
		return os.SameFile(a.fi, b.fi)
	case a.fi == nil && b.fi == nil:
		return a.rest == b.rest && os.SameFile(a.dir, b.dir)
	}
	return false
}

// maxLinks bounds the symbolic links followed in one path (Linux's
// MAXSYMLINKS).
const maxLinks = 40

var devNull, _ = os.Stat(os.DevNull)

// resolve identifies the file at path.
func resolve(path string) (fileID, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fileID{}, err
	}
	id, err := resolveAbs(abs, 0)
	id.abs = abs
	return id, err
}

func resolveAbs(abs string, links int) (fileID, error) {
	fi, err := os.Stat(abs)
	if err == nil {
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			real = abs // e.g. /dev/stdout, a link to "pipe:[…]"
		}
		return fileID{abs: abs, real: real, fi: fi, null: devNull != nil && os.SameFile(fi, devNull)}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fileID{}, err
	}
	// Absent, or a dangling symbolic link: writing it creates its target.
	if li, lerr := os.Lstat(abs); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
		if links >= maxLinks {
			return fileID{}, &fs.PathError{Op: "resolve", Path: abs, Err: errors.New("too many levels of symbolic links")}
		}
		target, err := os.Readlink(abs)
		if err != nil {
			return fileID{}, err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		id, err := resolveAbs(filepath.Clean(target), links+1)
		id.abs = abs
		return id, err
	}
	parent, base := filepath.Dir(abs), filepath.Base(abs)
	if parent == abs {
		return fileID{}, err // the root is missing: nothing to compare
	}
	up, perr := resolveAbs(parent, links)
	if perr != nil {
		return fileID{}, perr
	}
	id := fileID{abs: abs, real: filepath.Join(up.real, base)}
	if up.fi != nil {
		id.dir, id.rest = up.fi, base
	} else {
		id.dir, id.rest = up.dir, filepath.Join(up.rest, base)
	}
	return id, nil
}

// inDir reports whether path is an entry of the existing directory dir.
func inDir(path string, dir os.FileInfo) bool {
	up, err := resolve(filepath.Dir(path))
	return err == nil && up.fi != nil && os.SameFile(up.fi, dir)
}

// under reports whether path lies somewhere below the existing directory
// dir.
func under(path string, dir os.FileInfo) bool {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, dir) {
			return true
		}
		if filepath.Dir(p) == p {
			return false
		}
	}
}

// within reports whether the file f lies somewhere below the directory
// dir, which may not exist yet.
func within(f, dir fileID) bool {
	if dir.fi != nil {
		return under(f.abs, dir.fi) || under(f.real, dir.fi)
	}
	return f.fi == nil && strings.HasPrefix(f.rest, dir.rest+string(filepath.Separator)) && os.SameFile(f.dir, dir.dir)
}

// kindOf names a file's type for messages.
func kindOf(fi os.FileInfo) string {
	m := fi.Mode()
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

// input is one thing the pipeline reads.
type input struct {
	key, path string
	files     []fileID    // the configured path and the files it names now
	dir       os.FileInfo // a directory source: every file created in it is read
	globDir   os.FileInfo // a glob's directory, when only its last element has wildcards,
	globBase  string      // and that element
	glob      string      // otherwise the absolute pattern
}

// reads reports why writing the file at path (its absolute or resolved
// path) would feed the input, or "".
func (in *input) reads(path string) string {
	switch {
	case in.dir != nil && inDir(path, in.dir):
		return "a file in that directory is read as input"
	case in.globDir != nil && inDir(path, in.globDir):
		if ok, _ := filepath.Match(in.globBase, filepath.Base(path)); ok {
			return "it matches that pattern"
		}
	case in.glob != "":
		if ok, _ := filepath.Match(in.glob, path); ok {
			return "it matches that pattern"
		}
	}
	return ""
}

// inputsOf lists the pipeline's file inputs.
func inputsOf(p *spec.Pipeline, specSource bool) ([]*input, error) {
	var ins []*input
	file := func(key, path string) error {
		id, err := resolve(path)
		if err != nil {
			return &ConfigError{Err: fmt.Errorf("%s: %s: %w", key, path, err)}
		}
		ins = append(ins, &input{key: key, path: path, files: []fileID{id}})
		return nil
	}
	if src := p.Source; specSource && src.Type == "file" && src.Path != "" {
		in, err := sourceInput(src.Path)
		if err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("source.path: %s: %w", src.Path, err)}
		}
		ins = append(ins, in)
	}
	for i, pi := range p.Inputs { // a join's inputs beside the source
		if src := pi.Source; specSource && src.Type == "file" && src.Path != "" {
			key := fmt.Sprintf("inputs[%d].source.path", i)
			in, err := sourceInput(src.Path)
			if err != nil {
				return nil, &ConfigError{Err: fmt.Errorf("%s: %s: %w", key, src.Path, err)}
			}
			in.key = key
			ins = append(ins, in)
		}
	}
	if p.Contract != "" {
		if err := file("contract", p.Contract); err != nil {
			return nil, err
		}
	}
	if r := p.Reference; r != nil && r.Path != "" {
		if err := file("reference.path", r.Path); err != nil {
			return nil, err
		}
	}
	return ins, nil
}

// sourceInput is the file source's path as an input: a file, a directory
// (its regular files, and any file created in it) or a glob (the regular
// files it matches, and any file created that would match), as
// source/file lists them; subdirectories are not read.
func sourceInput(path string) (*input, error) {
	in := &input{key: "source.path", path: path}
	id, err := resolve(path)
	if err != nil {
		return nil, err
	}
	in.files = append(in.files, id)
	switch {
	case id.fi != nil && id.fi.IsDir():
		in.dir = id.fi
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if f, err := resolve(filepath.Join(path, e.Name())); err == nil && f.fi != nil && f.fi.Mode().IsRegular() {
				in.files = append(in.files, f)
			}
		}
	case id.fi == nil && strings.ContainsAny(path, "*?["):
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		dir, base := filepath.Dir(abs), filepath.Base(abs)
		if !strings.ContainsAny(dir, "*?[") {
			if d, err := resolve(dir); err == nil && d.fi != nil && d.fi.IsDir() {
				in.globDir, in.globBase = d.fi, base
			}
		} else {
			in.glob = abs
		}
		matches, _ := filepath.Glob(path)
		for _, m := range matches {
			if f, err := resolve(m); err == nil && f.fi != nil && f.fi.Mode().IsRegular() {
				in.files = append(in.files, f)
			}
		}
	}
	return in, nil
}

// output is one thing the pipeline writes.
type output struct {
	key, path   string
	typ         string   // "jsonl", "sqlite", "parquet", "iceberg" or "checkpoint"
	table       string   // sqlite: the table, in lower case
	exactlyOnce bool     // jsonl: staged for checkpoints
	id          fileID   // the file (the directory, for checkpoints)
	files       []owned  // id and the files the sink writes beside it
	ckDir       *fileID  // checkpoint: the directory, once it exists
	dirs        []string // parquet, iceberg: the directories the sink makes when it opens
}

// isDir reports whether o is a directory the sink owns (parquet, iceberg):
// nothing else may be written inside it.
func (o *output) isDir() bool { return o.typ == "parquet" || o.typ == "iceberg" }

// owned is a file an output writes: the output itself or a file beside it.
type owned struct {
	path string // as the sink names it
	id   fileID
}

// name is how messages name the output: a sqlite sink by its table too.
func (o *output) name() string {
	if o.typ == "sqlite" {
		return o.path + " (table " + o.table + ")"
	}
	return o.path
}

// lockPath returns the output's lock file and what it guards, or "" when
// it takes none (a device, a named pipe, the null device).
func (o *output) lockPath() (path, what string) {
	switch o.typ {
	case "checkpoint":
		return filepath.Join(o.id.real, "LOCK"), "this checkpoint directory"
	case "jsonl":
		if o.id.null || o.id.fi != nil && !o.id.fi.Mode().IsRegular() {
			return "", ""
		}
		return o.id.real + ".lock", "this file"
	case "sqlite":
		if o.id.null || o.id.fi != nil && !o.id.fi.Mode().IsRegular() {
			return "", ""
		}
		return o.id.real + "." + o.table + ".lock", "this table"
	case "parquet":
		return parquet.LockFile(o.id.real), "this directory"
	case "iceberg":
		return iceberg.LockFile(o.id.real), "this table"
	}
	return "", ""
}

// sibling suffixes of the files each sink type writes beside its path.
var siblings = map[string][]string{
	"jsonl":  {".pending", ".commit", ".commit.tmp"},
	"sqlite": {"-journal", "-wal", "-shm"},
}

// outputsOf lists the pipeline's file outputs: the checkpoint directory
// first (its lock is the one a second run of the pipeline meets first),
// then the sinks in spec order.
func outputsOf(p *spec.Pipeline) ([]*output, error) {
	var outs []*output
	if c := p.Checkpoint; c != nil && c.Dir != "" {
		id, err := resolve(c.Dir)
		if err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("checkpoint.dir: %s: %w", c.Dir, err)}
		}
		if id.fi != nil && !id.fi.IsDir() {
			return nil, &ConfigError{Err: fmt.Errorf("checkpoint.dir: %s is %s, not a directory", c.Dir, kindOf(id.fi))}
		}
		o := &output{key: "checkpoint.dir", path: c.Dir, typ: "checkpoint", id: id, files: []owned{{c.Dir, id}}}
		if id.fi != nil {
			o.ckDir = &id
		}
		outs = append(outs, o)
	}
	lake := func(key string, s *spec.Sink) error {
		path, typ := s.Path, s.Type
		var dirs []string
		if typ == "iceberg" {
			ns, table, ok := strings.Cut(s.Table, ".")
			if !ok {
				ns, table = "", s.Table
			}
			path = iceberg.TableDir(s.Path, ns, table)
			dirs = []string{iceberg.DataDir(path)}
		} else {
			dirs = parquet.MetaDirs(path)
		}
		id, err := resolve(path)
		if err != nil {
			return &ConfigError{Err: fmt.Errorf("%s: %s: %w", key, path, err)}
		}
		if id.fi != nil && !id.fi.IsDir() {
			return &ConfigError{Err: fmt.Errorf("%s: %s is %s, not a directory: a %s sink writes a directory of files", key, path, kindOf(id.fi), typ)}
		}
		o := &output{key: key, path: path, typ: typ, id: id, files: []owned{{path, id}}, dirs: dirs}
		if lock, _ := o.lockPath(); lock != "" {
			if lid, err := resolve(lock); err == nil {
				o.files = append(o.files, owned{lock, lid})
			}
		}
		outs = append(outs, o)
		return nil
	}
	add := func(key string, s *spec.Sink) error {
		if s != nil && s.Path != "" && (s.Type == "parquet" || s.Type == "iceberg") {
			return lake(key, s)
		}
		if s == nil || s.Path == "" || (s.Type != "jsonl" && s.Type != "sqlite") {
			return nil
		}
		o := &output{key: key, path: s.Path, typ: s.Type, exactlyOnce: p.Checkpoint != nil && s.Delivery != "at_least_once"}
		if s.Type == "sqlite" {
			o.table = strings.ToLower(s.Table)
		}
		var err error
		if o.id, err = resolve(s.Path); err != nil {
			return &ConfigError{Err: fmt.Errorf("%s: %s: %w", key, s.Path, err)}
		}
		o.files = append(o.files, owned{s.Path, o.id})
		if !o.id.null && (o.id.fi == nil || o.id.fi.Mode().IsRegular()) {
			for _, suf := range siblings[s.Type] {
				id, err := resolve(s.Path + suf)
				if err != nil {
					return &ConfigError{Err: fmt.Errorf("%s: %s: %w", key, s.Path+suf, err)}
				}
				o.files = append(o.files, owned{s.Path + suf, id})
			}
			if lock, _ := o.lockPath(); lock != "" {
				if id, err := resolve(lock); err == nil {
					o.files = append(o.files, owned{lock, id})
				}
			}
		}
		outs = append(outs, o)
		return nil
	}
	if err := add("quarantine.sink.path", p.Quarantine.Sink); err != nil {
		return nil, err
	}
	if err := add("conflicts.sink.path", p.Conflicts.Sink); err != nil {
		return nil, err
	}
	for i, st := range p.StageList() {
		prefix := ""
		if len(p.Stages) > 0 {
			prefix = fmt.Sprintf("stages[%d].", i)
		}
		for j := range st.Sinks {
			if err := add(fmt.Sprintf("%ssinks[%d].path", prefix, j), &st.Sinks[j]); err != nil {
				return nil, err
			}
		}
		if st.Late.Sink != nil && st.Late.Policy != "drop" {
			if err := add(prefix+"late.sink.path", st.Late.Sink); err != nil {
				return nil, err
			}
		}
		if c := st.Contributions; c != nil {
			if err := add(prefix+"contributions.sink.path", c.Sink); err != nil {
				return nil, err
			}
		}
	}
	return outs, nil
}

// against refuses o when it writes a file of in, or a file in would read.
func (o *output) against(in *input) error {
	refuse := func(file, why string) error {
		detail := ""
		if file != o.path {
			detail = fmt.Sprintf(" (%s, which it writes beside it)", file)
		}
		if why != "" {
			why = ": " + why
		}
		return &ConfigError{Err: fmt.Errorf("%s: %s%s is also an input of %s %s%s; writing it would destroy or re-read the input: choose an output path outside the inputs", o.key, o.path, detail, in.key, in.path, why)}
	}
	if o.typ == "checkpoint" {
		for _, f := range in.files {
			if f.same(o.id) {
				return refuse(o.path, "the same directory")
			}
			if o.ckDir != nil && (under(f.abs, o.ckDir.fi) || under(f.real, o.ckDir.fi)) {
				return &ConfigError{Err: fmt.Errorf("%s: %s holds %s %s: tidemark writes, renames and deletes files in its checkpoint directory: keep inputs elsewhere", o.key, o.path, in.key, f.abs)}
			}
		}
		if o.ckDir != nil && (in.dir != nil && os.SameFile(in.dir, o.ckDir.fi) || in.globDir != nil && os.SameFile(in.globDir, o.ckDir.fi)) {
			return refuse(o.path, "its checkpoint files would be read as input")
		}
		return nil
	}
	if o.isDir() {
		for _, g := range in.files {
			if !g.same(o.id) && within(g, o.id) {
				return &ConfigError{Err: fmt.Errorf("%s: %s holds %s %s: the %s sink writes, renames and deletes files in its directory: keep inputs elsewhere", o.key, o.path, in.key, g.abs, o.typ)}
			}
		}
	}
	for _, f := range o.files {
		for _, g := range in.files {
			if f.id.same(g) {
				why := ""
				switch {
				case g.fi != nil && g.fi.IsDir():
					why = "the same directory"
				case in.dir != nil:
					why = "a file in that directory is read as input"
				case f.id.abs != g.abs:
					why = "the same file, through a symbolic or hard link"
				}
				return refuse(f.path, why)
			}
		}
		if f.id.null {
			continue
		}
		for _, p := range []string{f.id.abs, f.id.real} {
			if why := in.reads(p); why != "" {
				return refuse(f.path, why)
			}
		}
	}
	return nil
}

// overlaps refuses two outputs that write one file (or one directory),
// except two sqlite sinks writing different tables of one database, and
// an output inside a directory another output owns (the checkpoint
// directory, a parquet directory, an iceberg table's directory).
func (a *output) overlaps(b *output) error {
	for _, pair := range [][2]*output{{a, b}, {b, a}} {
		d, o := pair[0], pair[1]
		if !d.isDir() {
			continue
		}
		for _, f := range o.files {
			if f.id.same(d.id) {
				return &ConfigError{Err: fmt.Errorf("%s: %s is also written by %s (%s): two writers of one directory would overwrite and delete each other's files: give each its own directory", b.key, b.path, a.key, a.path)}
			}
			if !f.id.null && within(f.id, d.id) {
				return &ConfigError{Err: fmt.Errorf("%s: %s is inside %s %s: the %s sink writes, renames and deletes files in its directory: put outputs elsewhere", o.key, f.path, d.key, d.path, d.typ)}
			}
		}
	}
	if a.typ == "checkpoint" || b.typ == "checkpoint" {
		ck, o := a, b
		if b.typ == "checkpoint" {
			ck, o = b, a
		}
		for _, f := range o.files {
			if f.id.same(ck.id) {
				return &ConfigError{Err: fmt.Errorf("%s: %s is also %s %s: give each its own path", o.key, f.path, ck.key, ck.path)}
			}
			if !f.id.null && within(f.id, ck.id) {
				return &ConfigError{Err: fmt.Errorf("%s: %s is inside %s %s: tidemark writes, renames and deletes files in its checkpoint directory: put outputs elsewhere", o.key, f.path, ck.key, ck.path)}
			}
		}
		return nil
	}
	if a.typ == "sqlite" && b.typ == "sqlite" && a.id.same(b.id) {
		if a.table != b.table {
			return nil // one database, two tables: SQLite serialises the writers
		}
		return &ConfigError{Err: fmt.Errorf("%s: table %s of %s is also written by %s (%s): rows of two outputs with the same (window_start, key) would overwrite each other: give each its own table", b.key, b.table, b.path, a.key, a.path)}
	}
	for _, f := range a.files {
		for _, g := range b.files {
			if !f.id.same(g.id) {
				continue
			}
			detail := ""
			switch {
			case f.path != a.path || g.path != b.path:
				detail = fmt.Sprintf(" (one file: %s writes %s, %s writes %s)", a.key, f.path, b.key, g.path)
			case f.id.abs != g.id.abs:
				detail = " (one file, through a symbolic or hard link)"
			}
			return &ConfigError{Err: fmt.Errorf("%s: %s is also written by %s (%s)%s: two writers would overwrite each other: give every output its own file", b.key, b.path, a.key, a.path, detail)}
		}
	}
	return nil
}

// ConfigError is a problem with the pipeline's configuration found when the
// run starts (before anything is read or written).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }
