package group

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FencedError is returned by Run in a group run (docs/scale-out.md) when
// the instance was fenced: another process registered the instance's
// transactional id (its producer is then PRODUCER_FENCED or has an
// INVALID_PRODUCER_EPOCH; the development broker answers
// INVALID_TXN_STATE) or its static group.instance.id (FENCED_INSTANCE_ID)
// — a process started with the same --instance-id, a replacement of this
// one. The broker aborted the instance's open transaction, so nothing it
// produced since its last commit is visible, and its offsets and
// checkpoints stay those of its last commit; the other process owns its
// partitions now.
//
// Kafka Streams treats a fenced producer as a task migration (close the
// tasks, rejoin, continue) because its transactional ids are unique per
// process; here the id is the instance's, shared with the process that
// fenced it, so rejoining would fence that one in turn. The instance
// stops instead: the CLI exits with status 3 (not 1), so that a
// supervisor can tell a fenced instance, which must not be restarted
// while its replacement runs, from a failure.
type FencedError struct {
	Group, Instance string
	// TransactionalID is the instance's transactional id
	// ("tidemark-<pipeline>-<instance>").
	TransactionalID string
	// Partitions are the partitions the instance held when fenced
	// ("topic/N": input and repartition partitions), sorted.
	Partitions []string
	// Static is true when the instance had an --instance-id.
	Static bool
	// Err is the broker's answer.
	Err error
}

// Error implements error, naming the fencing, the partitions and what to
// do.
func (e *FencedError) Error() string {
	held := "no partitions"
	if len(e.Partitions) > 0 {
		held = "partitions " + strings.Join(e.Partitions, ", ")
	}
	who := fmt.Sprintf("a newer producer registered its transactional id %s", e.TransactionalID)
	if e.Static {
		who = fmt.Sprintf("another process started with the same --instance-id %s registered its transactional id %s or its group.instance.id", e.Instance, e.TransactionalID)
	}
	return fmt.Sprintf("group %s: instance %s was fenced: %s (%v). It held %s; the broker aborted its open transaction, so nothing since its last commit is visible, and the other process owns those partitions now. "+
		"The instance stops (exit status 3): do not restart it with the same --instance-id while the other one runs, which would fence that one in turn",
		e.Group, e.Instance, who, e.Err, held)
}

// Unwrap returns the broker's answer.
func (e *FencedError) Unwrap() error { return e.Err }

// fencedError returns err as a *FencedError when the broker's answer in
// it says the instance was fenced, else err.
func (gr *groupRun) fencedError(err error) error {
	if err == nil {
		return nil
	}
	static := gr.opts.InstanceID != ""
	fenced := errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.FencedInstanceID) ||
		// kfake (tidemark dev-kafka) answers a transaction of a fenced
		// epoch with INVALID_TXN_STATE; only a process with the same
		// --instance-id shares the transactional id.
		static && errors.Is(err, kerr.InvalidTxnState)
	if !fenced {
		return err
	}
	e := &FencedError{Group: gr.group, Instance: gr.sum.Instance, TransactionalID: gr.txnID, Static: static, Err: err}
	for k := range gr.owned {
		t, p := gr.tp(k)
		e.Partitions = append(e.Partitions, fmt.Sprintf("%s/%d", t, p))
	}
	slices.Sort(e.Partitions)
	return e
}
