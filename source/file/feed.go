package file

import (
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
)

// feed is the input of a replay read by Claim (source.Reorderer): the
// claimed batches, decoded elsewhere, handed over in claim order.
type feed struct {
	on   bool          // Feed was called: Position and conflicting copies read the fed input
	in   *source.Batch // the batch fed last; nil before the first
	next int           // its records the replay has taken
	end  bool          // in holds the input's last records
	// start is where reading stood when in's claim began
	// (readState, positionV3): Position names the record the replay
	// reached as start and next.
	start []byte
	// starts holds readState at the beginning of each claim not fed
	// yet, in claim order.
	starts [][]byte
	// decs are the CSV decoders of conflicting copies, by file path.
	decs map[string]*format.CSV
}

// Reorders implements source.Reorderer: with replay.
func (s *Source) Reorders() bool { return s.rp != nil }

// Feed implements source.Reorderer: in, claimed and decoded, is the
// replay's next input.
func (s *Source) Feed(in *source.Batch, end bool) {
	f := &s.feed
	f.on, f.in, f.next, f.end = true, in, 0, end
	if len(f.starts) > 0 {
		f.start = f.starts[0]
		f.starts = f.starts[1:]
	}
}

// Deliver implements source.Reorderer: Next's replay (replayer.next)
// reading its input from the batches fed. Each record is numbered
// (ordinal) as the replay takes it, in input order, as Next numbers it
// when it reads it.
func (s *Source) Deliver(b *source.Batch, max int) (source.Status, bool) {
	rp := s.rp
	if max < 1 {
		max = 1
	}
	start := b.Len()
	f := &s.feed
	for b.Len()-start < max {
		if rp.q.Due() {
			rp.deliver(b)
			continue
		}
		if rp.inputDone {
			return source.End, false
		}
		if f.in == nil || f.next == f.in.Len() {
			if !f.end {
				return source.More, true
			}
			// The input ended: Next opened the files after the last
			// record too (empty ones).
			for len(s.starts) > 0 {
				s.starts = s.starts[1:]
				s.d.newFile()
			}
			rp.inputDone = true
			rp.q.Close()
			continue
		}
		r, m := &f.in.Rows[f.next], &f.in.Meta[f.next]
		f.next++
		for len(s.starts) > 0 && s.starts[0].rec <= s.finished {
			s.starts = s.starts[1:]
			s.d.newFile()
		}
		s.d.number(r, m)
		s.finished++
		rp.add(s, r, m)
	}
	if rp.inputDone && rp.q.Len() == 0 {
		return source.End, false
	}
	return source.More, false
}

// feedPosition is Position for a replay fed by Claim: where reading
// stood when the fed batch's claim began, the derived state now, the
// records of the fed batch the replay has taken (positionV3: Seek reads
// them again without delivering them) and the replay's state.
func (s *Source) feedPosition() []byte {
	f := &s.feed
	var e state.Encoder
	s.d.appendState(&e)
	e.Uint(uint64(f.next))
	e.Bool(true)
	s.rp.appendState(&e)
	return append(append(make([]byte, 0, len(f.start)+e.Len()), f.start...), e.Bytes()...)
}

// conflictCSV returns the decoder of the file at path, for a
// conflicting copy of one of its records (a fed replay: the open file
// is another's, claimed ahead).
func (s *Source) conflictCSV(path string) *format.CSV {
	f := &s.feed
	if dec, ok := f.decs[path]; ok {
		return dec
	}
	dec, err := format.NewCSV(s.fields, s.heads[path])
	if err != nil { // New built one for this header
		dec = nil
	}
	if f.decs == nil {
		f.decs = map[string]*format.CSV{}
	}
	f.decs[path] = dec
	return dec
}
