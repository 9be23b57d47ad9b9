package sqlite

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine (database/sql's
// connection opener) outlives the sinks and databases the tests close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
