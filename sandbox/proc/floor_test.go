package proc

import (
	"errors"
	"testing"
	"time"
)

// The floor waits with wait4(pid); beside the reaper's wait4(-1) one of
// them would lose the exit, so it must refuse.
func TestForkExecFloorRefusesBesideTheReaper(t *testing.T) {
	StartReaper()
	if _, err := ForkExecFloor([]string{"/bin/true"}, 10*time.Millisecond); !errors.Is(err, ErrReaperRunning) {
		t.Fatalf("ForkExecFloor beside the reaper: %v, want ErrReaperRunning", err)
	}
}
