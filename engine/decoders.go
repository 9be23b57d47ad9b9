package engine

import (
	"context"
	"sync"

	"github.com/tidemark/tidemark/source"
)

// decoders read a splitting source (source.Splitter) ahead of the
// router: the router claims the next batches in order (Claim: the
// records' order, positions and partitions, which depend on the records
// before) and hands each to a pool of decoder goroutines (Decode: the
// rows, which do not), then routes the batches in claim order once each
// is decoded. The batches, their records and everything the router
// learns from the source per batch (the partitions it knows, its
// position) are what Next would have given, batch by batch, so the run
// is the same as one that reads with Next: the same rounds, steps,
// watermarks and outputs.
//
// A source.Finisher (a file with partition_field, arrival_time_field or
// ordinal) completes each batch's metas from its decoded rows in claim
// order on the router (Finish) before the batch is routed; the
// partitions it knows and its position are then taken after Finish, the
// position from the part of it Claim moved (ClaimPosition, right after
// the claim) and the part Finish moved.
type decoders struct {
	src source.Splitter
	fin source.Finisher // src, when it finishes its batches
	// reo is src when it reorders its input (a file's replay): the
	// claimed batches are its input, fed to it in order (deliver).
	reo source.Reorderer
	fed *source.Batch // the batch fed to reo last
	// res is the source's Resumable when checkpoints are on: each
	// batch's position is taken right after its claim.
	res   source.Resumable
	free  chan *source.Batch // the pipeline's free batches
	work  chan *claim
	wg    sync.WaitGroup
	queue []*claim // claimed, in order, not yet routed
	spare []*claim
	depth int  // the most batches claimed ahead
	ended bool // a claim returned End or an error: claim no more
	// pres holds, per batch, the front the decoders compute of its
	// records (preBatch; nil when they compute none):
	// touched by the router only, when it claims the batch.
	pres   map[*source.Batch]*preBatch
	stride int // a preBatch's stride
}

// claim is one claimed batch.
type claim struct {
	b     *source.Batch
	st    source.Status // what Claim returned
	err   error
	known int       // len(Partitions()) after the claim (a Finisher's: after Finish)
	pos   []byte    // Position() after the claim (res set; a Finisher's: ClaimPosition, then FinishedPosition)
	pre   *preBatch // the batch's front, computed by its decoder (nil: the router's)
	done  chan struct{}
}

// newDecoders starts n decoder goroutines for src, claiming at most
// depth batches ahead, taking batches from pl.batchFree (which holds
// depth more than the rounds in flight need).
func (rt *runtime) newDecoders(src source.Splitter, pl *pipeline, n, depth int) *decoders {
	d := &decoders{src: src, free: pl.batchFree, work: make(chan *claim, depth), depth: depth}
	d.fin, _ = src.(source.Finisher)
	if reo, ok := src.(source.Reorderer); ok && reo.Reorders() {
		d.reo = reo
		d.fin = nil // its Finish does nothing; its Position is its own
	}
	if res, ok := rt.src.(source.Resumable); ok && rt.ck != nil {
		d.res = res
	}
	fronts, stride := rt.preFronts(d, n)
	if fronts != nil {
		d.pres, d.stride = map[*source.Batch]*preBatch{}, stride
	}
	for i := range n {
		var pf *preFront
		if fronts != nil {
			pf = fronts[i]
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			labelled(rt.wctx, "decoder", func() {
				for c := range d.work {
					pl.guard(func() error {
						src.Decode(c.b)
						if c.pre != nil {
							c.pre.fill(pf, c.b)
						}
						return nil
					})
					c.done <- struct{}{}
				}
			})
		}()
	}
	return d
}

// stop ends the decoder goroutines once they have decoded what was
// claimed.
func (d *decoders) stop() {
	close(d.work)
	d.wg.Wait()
}

// next returns the next claimed batch, decoded, claiming more first
// while fewer than depth are ahead. It returns nil once ctx is
// cancelled (the router's graceful stop: the batches claimed ahead are
// dropped), and errStopped when the pipeline failed.
func (d *decoders) next(ctx context.Context, pl *pipeline, max int) (*claim, error) {
	if ctx.Err() != nil {
		// The graceful stop: the batches claimed ahead are not routed, so
		// the run stops after the records it was asked to, as one reading
		// with Next does; the checkpoint's position is after the last batch
		// routed, and a restart reads the rest again.
		return nil, nil
	}
	for !d.ended && len(d.queue) < d.depth && ctx.Err() == nil {
		var b *source.Batch
		if len(d.queue) == 0 {
			select {
			case b = <-d.free:
			case <-pl.done:
				return nil, errStopped
			}
		} else {
			// Claim more only with a batch to spare: the claimed ones go
			// on meanwhile.
			select {
			case b = <-d.free:
			default:
			}
			if b == nil {
				break
			}
		}
		c := d.claim()
		c.b = b
		if d.pres != nil {
			c.pre = d.pres[b]
			if c.pre == nil {
				c.pre = &preBatch{stride: d.stride}
				d.pres[b] = c.pre
			}
		}
		b.Reset()
		c.st, c.err = d.src.Claim(ctx, b, max)
		if d.fin == nil {
			c.known = len(d.src.Partitions())
		}
		if d.res != nil && d.reo == nil {
			if d.fin != nil {
				c.pos = d.fin.ClaimPosition()
			} else {
				c.pos = d.res.Position()
			}
		}
		if c.err != nil || c.st == source.End {
			d.ended = true
		}
		d.queue = append(d.queue, c)
		d.work <- c
	}
	if len(d.queue) == 0 {
		return nil, nil
	}
	c := d.queue[0]
	d.queue = d.queue[1:]
	select {
	case <-c.done:
	case <-pl.done:
		return nil, errStopped
	}
	if d.fin != nil {
		select {
		case <-pl.done:
			// A decoder failed (it may have left the batch half made).
			return nil, errStopped
		default:
		}
		d.fin.Finish(c.b)
		c.known = len(d.src.Partitions())
		if d.res != nil {
			c.pos = d.fin.FinishedPosition(c.pos)
		}
	}
	return c, nil
}

// deliver fills b with up to max deliveries of a source that reorders
// its input (reo), feeding it the claimed batches, decoded, in claim
// order as it asks for them; a batch it has used up goes back to the
// free batches. It returns what Next would have (the source's status,
// or a claim's error), ctx's error when ctx was cancelled before a
// batch it needed could be claimed, and errStopped when the pipeline
// failed.
func (d *decoders) deliver(ctx context.Context, pl *pipeline, b *source.Batch, max int) (source.Status, error) {
	for {
		st, hungry := d.reo.Deliver(b, max-b.Len())
		if !hungry {
			return st, nil
		}
		if d.fed != nil {
			d.fed.Reset()
			d.free <- d.fed // room for it: it came from there
			d.fed = nil
		}
		c, err := d.next(ctx, pl, max)
		if err != nil {
			return source.More, err
		}
		if c == nil {
			return source.More, ctx.Err()
		}
		if c.err != nil {
			err := c.err
			d.release(c)
			return source.More, err
		}
		d.fed = c.b
		d.reo.Feed(c.b, c.st == source.End)
		d.release(c)
	}
}

// claim returns a claim to fill (its done channel reused).
func (d *decoders) claim() *claim {
	if n := len(d.spare); n > 0 {
		c := d.spare[n-1]
		d.spare = d.spare[:n-1]
		return c
	}
	return &claim{done: make(chan struct{}, 1)}
}

// release hands a routed claim back (its batch belongs to its round).
func (d *decoders) release(c *claim) {
	c.b, c.st, c.err, c.pos, c.pre = nil, source.More, nil, nil, nil
	d.spare = append(d.spare, c)
}
