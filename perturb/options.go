package perturb

import (
	"errors"
	"fmt"
	"time"
)

// Distribution is the distribution of the usual transport delay.
type Distribution uint8

// The distributions.
const (
	// Uniform delays are whole milliseconds drawn uniformly in [0, Delay].
	Uniform Distribution = iota
	// Exponential delays have mean Delay (rounded to whole milliseconds)
	// and are capped at MaxDelay: most records arrive quickly, a few much
	// later.
	Exponential
)

// String returns "uniform" or "exponential".
func (d Distribution) String() string {
	switch d {
	case Uniform:
		return "uniform"
	case Exponential:
		return "exponential"
	}
	return fmt.Sprintf("Distribution(%d)", uint8(d))
}

// ParseDistribution parses "uniform" or "exponential" ("" is uniform).
func ParseDistribution(s string) (Distribution, error) {
	switch s {
	case "", "uniform":
		return Uniform, nil
	case "exponential":
		return Exponential, nil
	}
	return 0, &OptionError{Key: "distribution", Reason: fmt.Sprintf("%q is neither uniform nor exponential", s)}
}

// MaxPartitions is the largest number of simulated partitions.
const MaxPartitions = 4096

// Defaults of the options whose zero value means "default".
const (
	DefaultArrivalField   = "ingested_at"
	DefaultPartitionField = "partition"
	DefaultOfflineDelay   = time.Hour
	// NoField as PartitionField leaves the partition out of the output.
	NoField = "-"
)

// Options configure a Scheduler and a Simulator. Durations are used in
// whole milliseconds (truncated). The zero Options is valid: every record
// arrives at its event time, once, on one partition.
type Options struct {
	// Seed seeds the generator (PCG, math/rand/v2). The same seed and the
	// same input in the same order give the same output. Default 0, a
	// seed like any other.
	Seed int64
	// Distribution of the usual delay. Default Uniform.
	Distribution Distribution
	// Delay is the usual delay: the bound of a uniform delay, the mean of
	// an exponential one. Default 0 (no delay).
	Delay time.Duration
	// MaxDelay bounds stragglers' delays, exponential delays and the
	// extra delay of a redelivered or conflicting copy; at least Delay.
	// Default (when 0): Delay for Uniform, 10 × Delay for Exponential.
	MaxDelay time.Duration
	// StragglerFraction of records (0..1) are delayed uniformly in
	// [0, MaxDelay] instead. Default 0.
	StragglerFraction float64
	// RedeliverFraction of records (0..1) are delivered a second time,
	// byte-identical, uniformly up to MaxDelay after the first delivery.
	// Default 0.
	RedeliverFraction float64
	// ConflictFraction of records (0..1) are delivered a second time with
	// ConflictField changed (a number plus one, a string plus "-x"),
	// uniformly up to MaxDelay after the first delivery; a record whose
	// field is missing, null or neither a number nor a string is not
	// chosen. Default 0.
	ConflictFraction float64
	// ConflictField is the field conflicting copies change (a dotted path
	// as in Lookup). Required with ConflictFraction.
	ConflictField string
	// ConflictChange says how the Simulator changes the field. Default
	// ByJSONType (a number plus one, a string plus "-x"); AsNumber also
	// adds one to a string holding a number, as CSV values are.
	ConflictChange Change
	// Partitions is the number of simulated partitions, named "p0" …
	// "pN-1" (1..4096). Default 1 (also for 0).
	Partitions int
	// PartitionBy names the field whose text (AppendFieldText) is an
	// event's partition key, when the event carries none itself: the
	// 32-bit FNV-1a hash of the key modulo Partitions picks the
	// partition; without a key, the record's 0-based input position
	// modulo Partitions (round robin). Default: none.
	PartitionBy string
	// OfflineFraction of partition-key values (devices, 0..1) go offline
	// once: the events of such a device whose event time falls in its
	// offline window, OfflineDelay long, are held and arrive together
	// when the window ends, plus one transport delay for the burst.
	// Records without a key are never offline. Default 0.
	OfflineFraction float64
	// OfflineDelay is how long an offline device stays offline (the
	// window's length). Default 1h (also for 0).
	OfflineDelay time.Duration
	// Disorder is how far an input event's time may lie behind the
	// largest event time added before it. A Simulator releases a delivery
	// once its arrival is at most that largest event time minus Disorder,
	// which makes its order exact for input that keeps the bound. Default
	// 0 (input in event-time order).
	Disorder time.Duration
	// ArrivalField is the member the Simulator sets to the arrival time
	// (RFC 3339 with milliseconds, in Zone). Default "ingested_at".
	ArrivalField string
	// PartitionField is the member the Simulator sets to the partition
	// name. Default "partition"; NoField ("-") leaves it out.
	PartitionField string
	// Zone is the time zone of arrival times. Default UTC.
	Zone *time.Location
}

// OptionError is an invalid option: Key is the option's name in snake
// case ("max_delay"), as in a pipeline's source.replay or the perturb
// command's flags (with dashes), or "" for a rule between options.
type OptionError struct {
	Key    string
	Reason string
}

// Error implements error: "max_delay: 1s is less than delay 2s".
func (e *OptionError) Error() string {
	if e.Key == "" {
		return e.Reason
	}
	return e.Key + ": " + e.Reason
}

// withDefaults returns o with the defaults of zero values filled in.
func (o Options) withDefaults() Options {
	if o.MaxDelay == 0 {
		o.MaxDelay = o.Delay
		if o.Distribution == Exponential {
			o.MaxDelay = 10 * o.Delay
		}
	}
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	if o.OfflineDelay == 0 {
		o.OfflineDelay = DefaultOfflineDelay
	}
	if o.ArrivalField == "" {
		o.ArrivalField = DefaultArrivalField
	}
	if o.PartitionField == "" {
		o.PartitionField = DefaultPartitionField
	}
	if o.Zone == nil {
		o.Zone = time.UTC
	}
	return o
}

// maxDuration bounds the delays (about 100 years), so that sums of
// delays and event times stay far from overflowing.
const maxDuration = 100 * 365 * 24 * time.Hour

// Validate checks the options after their defaults are filled in. Errors
// are *OptionError values, joined when there are several.
func (o Options) Validate() error {
	o = o.withDefaults()
	errs := o.validateSchedule()
	add := func(key, format string, args ...any) {
		errs = append(errs, &OptionError{Key: key, Reason: fmt.Sprintf(format, args...)})
	}
	if o.PartitionField == o.ArrivalField {
		add("partition_field", "%q is also the arrival field", o.PartitionField)
	}
	if o.ConflictField != "" && (o.ConflictField == o.ArrivalField || o.ConflictField == o.PartitionField) {
		add("conflict_field", "%q is a field the simulator sets", o.ConflictField)
	}
	return errors.Join(errs...)
}

// validateSchedule checks the options a Scheduler uses (o has its
// defaults).
func (o Options) validateSchedule() []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &OptionError{Key: key, Reason: fmt.Sprintf(format, args...)})
	}
	switch {
	case o.Delay < 0 || o.MaxDelay < 0 || o.OfflineDelay < 0 || o.Disorder < 0:
		add("", "delays must not be negative")
	case o.MaxDelay < o.Delay:
		add("max_delay", "%s is less than delay %s", o.MaxDelay, o.Delay)
	case o.MaxDelay > maxDuration || o.OfflineDelay > maxDuration || o.Disorder > maxDuration:
		add("", "delays must be at most %s", maxDuration)
	}
	if o.ConflictChange > AsString {
		add("conflict_change", "unknown change %d", o.ConflictChange)
	}
	if o.Distribution > Exponential {
		add("distribution", "unknown distribution %d", o.Distribution)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"straggler_fraction", o.StragglerFraction},
		{"redeliver_fraction", o.RedeliverFraction},
		{"conflict_fraction", o.ConflictFraction},
		{"offline_fraction", o.OfflineFraction},
	} {
		if !(f.v >= 0 && f.v <= 1) { // NaN fails too
			add(f.key, "must be between 0 and 1")
		}
	}
	if o.ConflictFraction > 0 && o.ConflictField == "" {
		add("conflict_field", "required with conflict_fraction")
	}
	if o.Partitions < 1 || o.Partitions > MaxPartitions {
		add("partitions", "must be between 1 and %d", MaxPartitions)
	}
	return errs
}
