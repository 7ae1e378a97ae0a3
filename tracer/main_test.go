package tracer

import (
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) {
	MaybeRunZygote()
	testutil.LeakCheckMain(m)
}
