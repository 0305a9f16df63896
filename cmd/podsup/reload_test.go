package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

func TestDescribeChangesSaysWhatTookEffectAndWhatWaits(t *testing.T) {
	cases := []struct {
		ch   spec.Changes
		want string
	}{
		{spec.Changes{}, "no change"},
		{spec.Changes{Supervisor: []string{"socket", "log_level", "minimum_grace"}, UnchangedGroups: []string{"web"}},
			"no group or process restarted; applied now: supervisor.log_level, supervisor.minimum_grace (for stops that begin from now on); " +
				"takes effect when podsup restarts: supervisor.socket"},
		{spec.Changes{ChangedGroups: []string{"web"}, Groups: map[string]spec.GroupChanges{"db": {Changed: []string{"pg"}}}, Supervisor: []string{"log_dir"}},
			"restarted groups web; in db: restarted pg; takes effect when podsup restarts: supervisor.log_dir"},
	}
	for _, tc := range cases {
		if got := describeChanges(tc.ch); got != tc.want {
			t.Errorf("describeChanges(%+v) =\n%q\nwant\n%q", tc.ch, got, tc.want)
		}
	}
}

func TestLogLevelChangesEveryCopyOfTheLogger(t *testing.T) {
	var out bytes.Buffer
	log, level := newLogger(spec.Supervisor{LogLevel: "warn", LogFormat: "json"}, &out)
	copied := log.With().Str("group", "web").Logger() // as the supervisor holds it
	copied.Info().Msg("hidden")
	level.set("debug")
	copied.Debug().Msg("shown")
	level.set("")
	copied.Debug().Msg("hidden again")
	copied.Info().Msg("info is the default")
	got := out.String()
	if strings.Contains(got, "hidden") || !strings.Contains(got, "shown") || !strings.Contains(got, "info is the default") {
		t.Errorf("log output:\n%s", got)
	}
}
