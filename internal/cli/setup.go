package cli

// The set-up every command shares: loading and compiling a pipeline file,
// usage errors (exit status 2), the --state-backend and --memory flags,
// the default brokers, reading a file line by line, RFC 3339 flags.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// compilePipeline loads the pipeline file at path, lets prepare change it
// (may be nil; e.g. backfill.Apply), and compiles it. A contract path, when
// not empty, replaces the pipeline's contract key. Errors are exit status 2
// (configuration), naming the file.
func compilePipeline(path, contract string, prepare func(*spec.Pipeline) error) (*spec.Pipeline, *plan.Plan, error) {
	p, err := tidemark.Load(path)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	if contract != "" {
		p.Contract = contract
	}
	if prepare != nil {
		if err := prepare(p); err != nil {
			return nil, nil, &exitError{code: 2, err: err}
		}
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: fmt.Errorf("%s: %w", path, err)}
	}
	return p, pl, nil
}

// usageErr is a usage or configuration error (exit status 2).
func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// maxLineBytes is the longest JSON line read (as the file source's).
const maxLineBytes = 64 << 20

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// defaultBrokers is the --brokers default: $KAFKA_BROKERS (comma
// separated) when set, else the address tidemark dev-kafka listens on.
func defaultBrokers() []string {
	if v := strings.TrimSpace(os.Getenv("KAFKA_BROKERS")); v != "" {
		return strings.Split(v, ",")
	}
	return []string{devKafkaDefaultAddr}
}

// eachLine calls fn for every non-blank line of the file at path, with
// its 1-based number; the bytes are valid until fn returns. A UTF-8
// byte-order mark at the start is dropped, and the line ending (\n or
// \r\n) is not part of the line.
func eachLine(ctx context.Context, path string, fn func(n int64, b []byte) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 256<<10), maxLineBytes+2)
	var n int64
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if n == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(n, b); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return nil
}

// plural is "1 record", "2 records".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// stateFlags applies run's --state-backend and --memory to the pipeline
// (nil when neither is given), checked as the pipeline's own keys are.
func stateFlags(backend, memory string) func(*spec.Pipeline) error {
	if backend == "" && memory == "" {
		return nil
	}
	return func(p *spec.Pipeline) error {
		if backend != "" {
			if backend != "memory" && backend != "disk" {
				return fmt.Errorf("--state-backend %q: want memory or disk", backend)
			}
			if backend != p.State.Backend {
				p.State.Backend, p.State.Memory = backend, 0
				if backend == "memory" {
					p.State.Dir = ""
				}
			}
		}
		if memory != "" {
			if p.State.Backend != "disk" {
				return fmt.Errorf("--memory %s: only with the disk backend (state.backend: disk, or --state-backend disk)", memory)
			}
			m, err := spec.ParseBytes(memory)
			if err != nil {
				return fmt.Errorf("--memory: %w", err)
			}
			p.State.Memory = m
		}
		if p.State.Backend == "disk" && p.State.Memory == 0 {
			p.State.Memory = spec.DefaultStateMemory
		}
		if err := p.State.Validate(); err != nil {
			return fmt.Errorf("--state-backend/--memory: %w", err)
		}
		return nil
	}
}

// parseInstant parses a flag's RFC 3339 instant with an offset.
func parseInstant(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, usageErr("--%s %q: want an RFC 3339 instant with an offset, such as 2026-10-01T00:00:00+09:00", flag, s)
	}
	return t, nil
}
