// Package nexmark is the Nexmark source: it generates the event stream of
// the Nexmark benchmark (people, auctions and bids of an online auction
// site) as Apache Beam's reference generator does
// (sdks/java/testing/nexmark: GeneratorConfig, Generator and the model
// generators), with the bid channels and URLs of Flink's nexmark. See
// docs/nexmark.md for every constant and its source.
//
// # Events
//
// Event ids run from 0. Id % 50 gives the type: 0 a person, 1 to 3 an
// auction, 4 to 49 a bid. Event n happens at BaseTime + n·1000/Rate ms.
// Each event's content is drawn from its own generator, seeded with its
// id as Beam seeds java.util.Random; the generator is a port of
// java.util.Random, so with Seed 0 every field Beam has equals Beam's
// output for the same id and time. Any event can therefore be generated
// alone, which makes Seek and EventJSON cheap.
//
// # Records
//
// One flat record per event, with the fields of Fields(): event_type,
// the person.*, auction.* and bid.* fields (null for the other types)
// and date_time, the event time of any type. Only the fields of
// Config.Fields are filled, and the draws after the last field needed
// are not made: a bid-only schema never builds a string.
//
// # Delivery order and out-of-orderness
//
// A seeded 10% of the events (Delay) arrive 1 ms to 3 s after their
// event time, behind later events, as in Beam's unbounded source. The
// stream is every event sorted by delivery time (event time plus delay),
// then id. So no event is delivered more than Delay.MaxMs behind the
// largest event time delivered before it: a watermark of event time − 4
// s (the pipeline's out_of_orderness, as in Flink's nexmark DDL) makes
// no event late. Meta.Arrival is the delivery time, so processing time
// follows the simulated clock and runs are deterministic.
//
// # Speed
//
// Next allocates nothing in steady state: strings go to the arena of the
// batch being filled (source.Batch.Arena, valid until that batch is
// Reset, reused by it afterwards), names, cities, channels and URLs come
// from tables.
package nexmark
