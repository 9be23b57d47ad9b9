// Package perturb is a deterministic delivery simulator: given records (a
// JSON object, an event time, an optional partition key), it produces the
// seeded arrival order, with recorded arrival times, that a real transport
// between producers and a pipeline would: late and out-of-order records,
// stragglers, at-least-once redeliveries, conflicting redeliveries (the
// same event with a changed payload), partitions, and devices that go
// offline and send what they recorded in one burst.
//
// It is a pure core: no clock, no goroutines, no IO. The tidemark perturb
// command reads files and writes the result (docs/perturb.md); the file
// source's replay (package source/file) uses the same Scheduler and Queue
// on typed rows.
//
// # Model
//
// Records are scheduled one by one, in input order (Scheduler). Record i
// (0-based) with event time t:
//
//   - arrives at t + d, where d is its delay in whole milliseconds:
//     uniform in [0, Delay], or exponential with mean Delay capped at
//     MaxDelay; a straggler (probability StragglerFraction) draws d
//     uniformly from [0, MaxDelay] instead;
//   - is redelivered (probability RedeliverFraction): a byte-identical
//     copy arrives uniformly in [0, MaxDelay] after the first delivery;
//   - conflicts (probability ConflictFraction): a copy whose
//     ConflictField is changed arrives uniformly in [0, MaxDelay] after the
//     first delivery. A number gets one added, exactly and in its form
//     (19.99 → 20.99, 7 → 8, 1.5e3 → 1.501e3); a string gets "-x"
//     appended. A record whose field is missing, null, or another type is
//     not chosen (counted as skipped);
//   - goes to partition FNV-1a(key) mod Partitions when it has a key
//     (Event.Key, or the text of the PartitionBy field), else i mod
//     Partitions (round robin);
//   - is held in an offline burst when its key is an offline device and t
//     lies in the device's offline window (see Scheduler.Next): the
//     burst's records all arrive together at the window's end plus one
//     transport delay, so at most OfflineDelay + MaxDelay after their
//     event time.
//
// A record without an event time (NoTime) is delivered once, at the
// horizon (see Queue), on its partition. Copies are never offline on their
// own: they follow their record's first arrival.
//
// Invariants, for records with an event time: every record is delivered
// once, plus its copies; arrival ≥ event time; arrival − event time ≤
// MaxDelay, except in offline bursts (≤ OfflineDelay + MaxDelay); a copy
// arrives at or after its first delivery and at most MaxDelay later; a
// redelivered copy is byte-identical to the first delivery except for the
// arrival field; a conflicting copy differs from it only in the conflict
// field (by exactly +1 or "-x") and the arrival field.
//
// # Determinism
//
// The generator is PCG (math/rand/v2) seeded with Seed; conflicts draw
// from a second PCG stream, so turning them on moves no other delivery.
// Each record draws a fixed number of values whatever its content, so one
// record never shifts another's delays. Offline devices and their windows
// come from a hash of the seed and the key, not from the generator.
// Deliveries leave in (arrival, input position, kind) order, kinds in the
// order first, redelivery, conflict. So the same options and the same
// events in the same order give the same deliveries, byte for byte;
// another seed gives another order. Exponential delays use math.Log,
// whose last bit may differ between CPU architectures: in the rare case
// where that moves a delay across a millisecond boundary, the output
// differs between architectures (never between runs on one).
//
// # Memory
//
// The Simulator streams: it holds a delivery from Add until it is due,
// that is, until its arrival is at most the largest event time added
// minus Options.Disorder (Queue). For input in event-time order
// (Disorder 0) or within Disorder of it, the output order is exact and
// the memory bound is the records of the last MaxDelay + Disorder of
// event time (OfflineDelay + MaxDelay + Disorder with offline bursts),
// plus one entry per offline device. Input in any order is still exact
// when all of it is added before Close, at the cost of holding it all:
// the perturb command measures the input's disorder in a first pass and
// sets Disorder to it, so sorted files stream and shuffled ones are held.
// Stats.Unordered counts deliveries released out of order when the input
// breaks its Disorder.
package perturb
