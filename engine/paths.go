package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark/spec"
)

// checkOutputPaths refuses outputs that are, or would become, inputs: a
// sink file that is the source file truncates the input, and one inside the
// source's directory or matching its glob is read back as input — by this
// run, or by the next.
func checkOutputPaths(p *spec.Pipeline) error {
	src := p.Source
	if src.Type != "file" || src.Path == "" {
		return nil
	}
	pattern, err := filepath.Abs(src.Path)
	if err != nil {
		return nil
	}
	isDir := false
	if st, err := os.Stat(pattern); err == nil && st.IsDir() {
		isDir = true
	}
	isGlob := strings.ContainsAny(src.Path, `*?[`)
	check := func(key, path string) error {
		if path == "" {
			return nil
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil
		}
		var hit bool
		switch {
		case isDir:
			hit = filepath.Dir(abs) == pattern
		case isGlob:
			hit, _ = filepath.Match(pattern, abs)
		default:
			hit = abs == pattern
		}
		if hit {
			return &ConfigError{Err: fmt.Errorf("%s: %s is also an input of source.path %s: writing it would destroy or re-read the input; choose an output path outside the source", key, path, src.Path)}
		}
		return nil
	}
	if q := p.Quarantine.Sink; q != nil {
		if err := check("quarantine.sink.path", q.Path); err != nil {
			return err
		}
	}
	for i, st := range p.StageList() {
		prefix := ""
		if len(p.Stages) > 0 {
			prefix = fmt.Sprintf("stages[%d].", i)
		}
		for j, s := range st.Sinks {
			if err := check(fmt.Sprintf("%ssinks[%d].path", prefix, j), s.Path); err != nil {
				return err
			}
		}
		if st.Late.Sink != nil {
			if err := check(prefix+"late.sink.path", st.Late.Sink.Path); err != nil {
				return err
			}
		}
		if c := st.Contributions; c != nil && c.Sink != nil {
			if err := check(prefix+"contributions.sink.path", c.Sink.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// ConfigError is a problem with the pipeline's configuration found when the
// run starts (before anything is read or written).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }
