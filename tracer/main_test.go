package tracer

import (
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) {
	MaybeRunHelper()
	testutil.LeakCheckMain(m)
}
