package spec

import "time"

// sleepHooks refuses a sleep action in post_start or pre_stop that is
// longer than the group's grace period, as Kubernetes' validation does
// (pkg/apis/core/validation validateSleepAction: "must be non-negative and
// less than terminationGracePeriodSeconds"; it refuses a sleep above the
// grace and takes one equal to it). A pre_stop sleep past the grace is cut
// short by the SIGKILL (K9) and a post_start one holds the start and then
// the stop: either way the configuration does not do what it says (D6).
// pre_start and post_stop, which Kubernetes does not have, are bounded by
// their timeouts instead (X5).
func (ch *checker) sleepHooks(g *Group) {
	grace := g.Grace()
	if grace < 0 {
		return // refused already; one error is enough
	}
	check := func(kind string, pr *Process) {
		for _, h := range []struct {
			point HookPoint
			hook  *Hook
		}{{PostStart, pr.PostStart}, {PreStop, pr.PreStop}} {
			if h.hook == nil || h.hook.Sleep == nil || h.hook.Sleep.Duration <= grace {
				continue
			}
			ch.add([]string{"group", g.Name, kind, pr.Name, string(h.point), "sleep", "duration"},
				"a %s sleep of %s is longer than the group's termination_grace_period (%s): it must be non-negative and no longer than the grace, as in Kubernetes; shorten the sleep or raise termination_grace_period",
				h.point, h.hook.Sleep.Duration, fmtGrace(grace, g.TerminationGracePeriod == nil))
		}
	}
	for i := range g.Init {
		check("init", &g.Init[i])
	}
	for i := range g.Processes {
		check("process", &g.Processes[i])
	}
}

func fmtGrace(d time.Duration, isDefault bool) string {
	if isDefault {
		return d.String() + ", the default"
	}
	return d.String()
}
