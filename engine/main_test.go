package engine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine outlives them:
// every goroutine a run starts stops before Run returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
