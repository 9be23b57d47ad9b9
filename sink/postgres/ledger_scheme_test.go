package postgres

import (
	"context"
	"strings"
	"testing"
)

// TestLedgerHashScheme: a new ledger records the payload hash scheme on
// its payload_hash column and opens again; a ledger holding events whose
// column names no scheme (an earlier build's, scheme 1) or another one is
// refused by name; an empty ledger without the record gets it.
func TestLedgerHashScheme(t *testing.T) {
	dsn, schema := testSchema(t)
	cfg := revenueLedger(schema)
	l := newLedger(t, dsn, cfg)
	comment := "SELECT col_description('" + cfg.Table + "'::regclass, attnum) FROM pg_attribute WHERE attrelid = '" + cfg.Table + "'::regclass AND attname = 'payload_hash'"
	check(t, dsn, comment, "tidemark event payload hashes, scheme 2\n")
	apply(t, l, payment(t, "e100", "PAYMENT", "2026-09-01T10:02:00+09:00", "25000"))
	l.Close(context.Background())
	newLedger(t, dsn, cfg).Close(context.Background())

	exec(t, dsn, "COMMENT ON COLUMN "+cfg.Table+".payload_hash IS NULL")
	_, err := NewLedger(context.Background(), dsn, cfg)
	if err == nil || !strings.Contains(err.Error(), `holds event payload hashes of another scheme ("scheme 1"; this build computes scheme 2)`) {
		t.Errorf("a ledger of scheme 1: %v", err)
	}
	exec(t, dsn, "COMMENT ON COLUMN "+cfg.Table+".payload_hash IS 'tidemark event payload hashes, scheme 3'")
	if _, err := NewLedger(context.Background(), dsn, cfg); err == nil || !strings.Contains(err.Error(), `("tidemark event payload hashes, scheme 3"; this build computes scheme 2)`) {
		t.Errorf("a ledger of scheme 3: %v", err)
	}
	exec(t, dsn, "DELETE FROM "+cfg.Table, "COMMENT ON COLUMN "+cfg.Table+".payload_hash IS NULL")
	newLedger(t, dsn, cfg).Close(context.Background())
	check(t, dsn, comment, "tidemark event payload hashes, scheme 2\n")
}
