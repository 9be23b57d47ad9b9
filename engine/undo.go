package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/tidemark/tidemark/checkpoint"
)

// startFiles is what a run's start may create at its outputs: the files
// (an output, the files beside it, its lock file; the checkpoint
// directory's LOCK) and the directories above them that did not exist
// when the run began. A start that is refused (a lock another run holds,
// a checkpoint it will not restore, a sink that refuses its table or its
// file) removes them again (undo), so that the refusal leaves the file
// system as it found it: no new empty database, JSONL file, staging file,
// lock file or directory at the user's paths.
//
// Only what did not exist before is removed; an output's files are
// noted once the run holds the output's lock, so that nothing of another
// run's is touched. A directory is removed only when empty.
type startFiles struct {
	files []string // absolute paths, absent at the start
	dirs  []string // absolute paths, absent at the start, deepest first
	// held are the lock files of the parquet and iceberg outputs the run
	// holds (their sinks then take none: Env.holds).
	held []string
}

// absentDirs records the directories above path (path itself too, when
// self) that do not exist yet; called before they are made.
func (sf *startFiles) absentDirs(path string, self bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	d := filepath.Dir(abs)
	if self {
		d = abs
	}
	for ; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		if !slices.Contains(sf.dirs, d) {
			sf.dirs = append(sf.dirs, d)
		}
	}
	// Deepest first, so that a directory is empty when its turn comes.
	sort.SliceStable(sf.dirs, func(i, j int) bool { return len(sf.dirs[i]) > len(sf.dirs[j]) })
}

// absentFile records path when it does not exist.
func (sf *startFiles) absentFile(path string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) && !slices.Contains(sf.files, abs) {
		sf.files = append(sf.files, abs)
	}
}

// absentOutput records the files of output o that do not exist: called
// once the run holds o's lock, so that no other run can create them
// until the run ends (and undo never removes another run's file).
func (sf *startFiles) absentOutput(o *output) {
	if o.id.null || o.typ == "checkpoint" {
		return
	}
	for _, f := range o.files {
		sf.absentFile(f.path)
	}
	for _, d := range o.dirs {
		sf.absentDirs(d, true)
	}
}

// undo removes the files and then the (empty) directories of sf that
// exist now. Errors are ignored: a file that cannot be removed stays, as
// it would have without undo.
func (sf *startFiles) undo() {
	if sf == nil {
		return
	}
	for _, f := range sf.files {
		os.Remove(f)
	}
	for _, d := range sf.dirs {
		os.Remove(d) // fails, and keeps it, unless empty
	}
}

// StartInterruptedError is returned by Run when its context was cancelled
// (SIGINT, SIGTERM) while the run was still starting — opening the source
// and the sinks, or restoring a checkpoint — so that it stopped before
// reading any record: no row or record was written, and the files the
// start created were removed (startFiles). The next run starts where this
// one would have: from Checkpoint, or from the start of the input.
type StartInterruptedError struct {
	// Phase is what the run was doing: "opening the source and the sinks"
	// or "restoring checkpoint N".
	Phase string
	// Dir is the checkpoint directory ("" without checkpoints), Checkpoint
	// the newest checkpoint in it (0: none, the next run starts from the
	// start of the input).
	Dir        string
	Checkpoint int64
	// Group is the consumer group of a group run (docs/scale-out.md),
	// whose committed offsets and task checkpoints hold the position; ""
	// otherwise.
	Group string
	// Err is what the interrupted step returned.
	Err error
}

// Error implements error, e.g. "interrupted while restoring checkpoint 7
// in out/ck: stopped before reading any record, no row or record of this
// run was written; checkpoint 7 in out/ck holds the position: run again to
// resume from it".
func (e *StartInterruptedError) Error() string {
	resume := "run again to start from the beginning of the input"
	switch {
	case e.Group != "":
		resume = fmt.Sprintf("the offsets group %s committed and its tasks' checkpoints hold the position: run again to resume", e.Group)
	case e.Dir == "":
		resume = "the pipeline takes no checkpoints: a new run starts from the beginning of the input"
	case e.Checkpoint > 0:
		resume = fmt.Sprintf("checkpoint %d in %s holds the position: run again to resume from it", e.Checkpoint, e.Dir)
	}
	return fmt.Sprintf("interrupted while %s: stopped before reading any record, no row or record of this run was written; %s", e.Phase, resume)
}

// Unwrap returns the interrupted step's error.
func (e *StartInterruptedError) Unwrap() error { return e.Err }

// startError is err of a start step (phase), as a *StartInterruptedError
// when ctx was cancelled.
// startRefusal marks an error that refuses the run before it wrote
// anything, once it has read its first records (a key field null in every
// record of the first batch): Run then undoes its start as for a refusal
// while opening — the sinks aborted (a table a sink created, still empty,
// dropped), the files and directories the start created removed — so
// that the corrected pipeline starts on what was there before.
type startRefusal struct{ error }

func (r *startRefusal) Unwrap() error { return r.error }

func (rt *runtime) startError(ctx context.Context, phase string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	e := &StartInterruptedError{Phase: phase, Err: err}
	if c := rt.plan.Spec.Checkpoint; c != nil {
		e.Dir = c.Dir
		if ids, lerr := checkpoint.List(c.Dir); lerr == nil && len(ids) > 0 {
			e.Checkpoint = slices.Max(ids)
		}
	}
	return e
}
