package core

import (
	"github.com/podsup/podsup/supervisor/lifecycle"
	"time"
)

// probeKill reports whether r is a probe-triggered kill (R4, B8).
func probeKill(r lifecycle.KillReason) bool {
	return r == lifecycle.KillLiveness || r == lifecycle.KillStartup
}

// SelectGrace is K1 with K2 applied: a request's override wins; otherwise a
// probe-level grace when the kill reason is that probe and it is set;
// otherwise the group's grace. (K1.1, the pod deletion grace, is the
// override in podsup: a stop or shutdown request carries it.)
func SelectGrace(reason lifecycle.KillReason, group time.Duration, probe, override *time.Duration) time.Duration {
	switch {
	case override != nil:
		return *override
	case probeKill(reason) && probe != nil:
		return *probe
	default:
		return group
	}
}

// ChargePreStop is K3: the time a pre_stop hook took, truncated to whole
// seconds (D7 keeps kubelet's truncation), is subtracted from the grace.
// The result may be zero or negative; MinimumGrace lifts it (K5).
func ChargePreStop(grace, elapsed time.Duration) time.Duration {
	return grace - elapsed.Truncate(time.Second)
}

// MinimumGrace is K5 with X12's configurable floor: whatever K1–K3 left,
// the stop signal is followed by SIGKILL no sooner than minimum later,
// even for an override of 0.
func MinimumGrace(grace, minimum time.Duration) time.Duration {
	return max(grace, minimum)
}
