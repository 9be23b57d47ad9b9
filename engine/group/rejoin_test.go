package group

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupRejoinable: which errors of a group session make the instance
// leave and join its group again (a broker pause, an expired member)
// and which stop it. A fenced producer is a rejoin only when its
// transaction was open longer than source.transaction_timeout (the
// broker aborted it and bumped the epoch); within it, it is another
// process with the same --instance-id (FencedError, exit status 3).
// internal/scaletest's TestBrokerPauses is the end-to-end test: before
// rejoining, 12 of its 20 seeds ended with an instance failing
// (UNKNOWN_MEMBER_ID, a dead connection, PRODUCER_FENCED after a pause).
func TestGroupRejoinable(t *testing.T) {
	gr := setupGroupRun(t, []string{"127.0.0.1:1"}, 0)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	gr.opts.WallClock = func() time.Time { return now }
	timeout := gr.sp.TransactionTimeout.D()
	if timeout <= 0 {
		t.Fatalf("transaction timeout %v", timeout)
	}
	fenced := fmt.Errorf("committing the transaction: unable to commit transaction offsets: topic t partition 0: %w", kerr.ProducerFenced)
	for _, c := range []struct {
		what  string
		err   error
		begun time.Duration // the open transaction's age
		want  bool
	}{
		{"expired member in a poll", fmt.Errorf("kafka: topic  partition 0: %w", &kgo.ErrGroupSession{Err: kerr.UnknownMemberID}), 0, true},
		{"expired member in a commit", fmt.Errorf("committing the transaction: %w", kerr.UnknownMemberID), 0, true},
		{"older generation", fmt.Errorf("committing the transaction: %w", kerr.IllegalGeneration), 0, true},
		{"request timed out", fmt.Errorf("group g: fetching committed offsets: %w", kerr.RequestTimedOut), 0, true},
		{"fenced after a pause", fenced, timeout + time.Second, true},
		{"fenced within the timeout", fenced, timeout / 2, false},
		{"epoch within the timeout", fmt.Errorf("committing: %w", kerr.InvalidProducerEpoch), timeout / 2, false},
		{"static member replaced", fmt.Errorf("kafka: %w", &kgo.ErrGroupSession{Err: kerr.FencedInstanceID}), timeout / 2, false},
		{"static member replaced in a commit", fmt.Errorf("committing the transaction: %w", kerr.FencedInstanceID), timeout / 2, false},
		// After a pause, franz-go joined again under a new member id while
		// the commit named the old one (TestBrokerPauses seed 17 of -long).
		{"own rejoin after a pause", fmt.Errorf("committing the transaction: %w", kerr.FencedInstanceID), timeout + time.Second, true},
		{"a decoding error", errors.New("topic t partition 0 offset 7: field price: not a number"), 0, false},
		{"topic gone", fmt.Errorf("kafka: topic t partition 0: %w", kerr.TopicAuthorizationFailed), 0, false},
	} {
		gr.txnBegun = now.Add(-c.begun)
		if got := gr.rejoinable(c.err); got != c.want {
			t.Errorf("%s: rejoinable(%v) = %v, want %v", c.what, c.err, got, c.want)
		}
	}
}
