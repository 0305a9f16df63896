package spec

import (
	"strings"
	"testing"
	"time"
)

// TestSleepHookLongerThanTheGraceIsRefused: Kubernetes' validateSleepAction
// refuses a sleep above terminationGracePeriodSeconds (and takes one equal
// to it); podsup accepted any (D6).
func TestSleepHookLongerThanTheGraceIsRefused(t *testing.T) {
	sleep := func(d time.Duration) *Hook { return &Hook{Handler: Handler{Sleep: &SleepAction{Duration: d}}} }
	cases := []struct {
		name    string
		mutate  func(g *Group)
		wantErr string // "" for valid
	}{
		{"pre_stop above the set grace", func(g *Group) {
			g.TerminationGracePeriod = Durp(5 * time.Second)
			g.Processes[0].PreStop = sleep(6 * time.Second)
		}, "group.web.process.api.pre_stop.sleep.duration: a pre_stop sleep of 6s is longer than the group's termination_grace_period (5s)"},
		{"post_start above the default grace", func(g *Group) {
			g.Processes[0].PostStart = sleep(31 * time.Second)
		}, "group.web.process.api.post_start.sleep.duration: a post_start sleep of 31s is longer than the group's termination_grace_period (30s, the default)"},
		{"a sidecar's pre_stop", func(g *Group) {
			g.TerminationGracePeriod = Durp(0)
			g.Init = []Process{{Name: "side", Command: []string{"x"}, RestartPolicy: RestartAlways, PreStop: sleep(time.Millisecond)}}
		}, "group.web.init.side.pre_stop.sleep.duration"},
		{"equal to the grace", func(g *Group) {
			g.TerminationGracePeriod = Durp(5 * time.Second)
			g.Processes[0].PreStop = sleep(5 * time.Second)
		}, ""},
		{"pre_start and post_stop are bounded by their timeouts", func(g *Group) {
			g.TerminationGracePeriod = Durp(time.Second)
			g.Processes[0].PreStart = sleep(time.Minute)
			g.Processes[0].PostStop = sleep(time.Minute)
		}, ""},
	}
	for _, tc := range cases {
		g := validGroup()
		tc.mutate(&g)
		err := (&Config{Groups: []Group{g}}).Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
