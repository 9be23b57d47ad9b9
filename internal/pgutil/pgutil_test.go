package pgutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRetryWaits checks the defaults and the waits by hand: 250 ms
// doubling to the 8 s cap, six retries.
func TestRetryWaits(t *testing.T) {
	r := Retry{}.WithDefaults()
	if r.Retries != 6 || r.Backoff != 250*time.Millisecond || r.MaxBackoff != 8*time.Second {
		t.Fatalf("defaults: %+v", r)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for n, w := range want {
		if got := r.Wait(n); got != w {
			t.Errorf("Wait(%d) = %s, want %s", n, got, w)
		}
	}
	if got := (Retry{Off: true, Retries: 4}).WithDefaults().Retries; got != 0 {
		t.Errorf("Off: %d retries, want 0", got)
	}
	if got := RetryCount(0); !got.Off {
		t.Errorf("RetryCount(0) = %+v, want Off", got)
	}
	if got := RetryCount(3).WithDefaults(); got.Retries != 3 || got.Backoff != DefaultBackoff {
		t.Errorf("RetryCount(3) = %+v", got)
	}
	if got := (Retry{Backoff: 3 * time.Second, MaxBackoff: 5 * time.Second}).WithDefaults().Wait(1); got != 5*time.Second {
		t.Errorf("capped wait = %s, want 5s", got)
	}
}

// TestTransient: the errors a retry can cure, and those it cannot.
func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{&pgconn.PgError{Code: "40001"}, true},
		{&pgconn.PgError{Code: "40P01"}, true},
		{&pgconn.PgError{Code: "57P01"}, true},  // admin_shutdown (pg_terminate_backend)
		{&pgconn.PgError{Code: "57P03"}, true},  // cannot_connect_now
		{&pgconn.PgError{Code: "22003"}, false}, // numeric_value_out_of_range
		{&pgconn.PgError{Code: "53300"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "42P01"}, false},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{errors.New("conn closed"), true},
		{errors.New("syntax"), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestSleepCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
