package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// End-to-end tests of configuration faults: a reload of the supervisor
// block, probe periods below the floor, and a storm of identical events.

// quietConfig has long-running processes only, so that any restart shows
// as a new pid.
const quietConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
  log_level     = "warn"
}
group "web" {
  termination_grace_period = "2s"
  process "api" {
    command = ["sleep", "1000"]
  }
  process "sidecar" {
    command = ["sleep", "1001"]
  }
}
group "batch" {
  process "worker" {
    command = ["sleep", "1002"]
  }
}
`

func TestUpSupervisorBlockReloadRestartsNothing(t *testing.T) {
	t.Parallel()
	f := startUp(t, quietConfig)
	targets := [][2]string{{"web", "api"}, {"web", "sidecar"}, {"batch", "worker"}}
	before := map[[2]string]int{}
	for _, tg := range targets {
		before[tg] = f.waitRunning(t, tg[0], tg[1])
	}

	// Only the supervisor block changes: two settings that apply live, two
	// that cannot until podsup restarts (the socket is bound, the log
	// format is the output hub's).
	next := strings.NewReplacer(
		`minimum_grace = "100ms"`, `minimum_grace = "300ms"`,
		`log_level     = "warn"`, `log_level     = "info"
  log_format    = "json"`,
		`socket        = "`+f.socket+`"`, `socket        = "`+filepath.Join(f.dir, "other.sock")+`"`,
	).Replace(fmt.Sprintf(quietConfig, f.socket))
	f.write(t, next)
	code, out := f.ctl(t, "reload")
	if code != 0 {
		t.Fatalf("reload: %d %s", code, out)
	}
	for _, want := range []string{
		"no group or process restarted",
		"applied now: supervisor.log_level, supervisor.minimum_grace",
		"takes effect when podsup restarts: supervisor.socket, supervisor.log_format",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("reload's message does not say %q:\n%s", want, out)
		}
	}

	// No process was stopped: same pids, no Killing event, a while later.
	time.Sleep(time.Second)
	for _, tg := range targets {
		if p := f.pid(t, tg[0], tg[1]); p != before[tg] {
			t.Errorf("%s/%s was restarted by a supervisor-block reload: pid %d → %d", tg[0], tg[1], before[tg], p)
		}
	}
	if _, out := f.ctl(t, "events"); strings.Contains(out, "Killing") {
		t.Errorf("a supervisor-block reload stopped something:\n%s", out)
	}

	// log_level took effect: the reload's own info line is logged, which
	// at warn it would not be.
	deadline := time.Now().Add(30 * time.Second)
	for line := ""; !strings.Contains(line, "reloaded:"); line = f.up.line(t) {
		if time.Now().After(deadline) {
			t.Fatal("no \"reloaded:\" line in podsup's log: log_level = \"info\" was not applied")
		}
	}

	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after SIGTERM: %s", e)
	}
}

func TestValidateRefusesProbePeriodAndTimeoutBelowTheFloor(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "spin.hcl")
	src := `group "g" {
  process "p" {
    command = ["sleep", "1000"]
    liveness_probe {
      exec {
        command = ["true"]
      }
      period  = "1ns"
      timeout = "1us"
    }
  }
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runPodsup(t, "validate", "-f", file)
	if code != 1 {
		t.Fatalf("validate of a 1ns probe period: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		file + ":8:17", "period must be at least 100ms", `got 1ns`,
		file + ":9:17", "timeout must be at least 10ms", `got 1µs`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}
}

// stormConfig has a readiness probe that fails at every period: an
// Unhealthy event each time, and nothing is killed.
const stormConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "web" {
  process "api" {
    command = ["sleep", "1000"]
    readiness_probe {
      exec {
        command = ["false"]
      }
      period = "100ms"
    }
  }
  process "sidecar" {
    command = ["sleep", "1001"]
  }
}
`

func TestUpFoldsRepeatedUnhealthyEventsIntoOne(t *testing.T) {
	t.Parallel()
	f := startUp(t, stormConfig)
	f.waitRunning(t, "web", "api")

	// The failures pile up into one line whose count grows.
	count := regexp.MustCompile(`x(\d+) over `)
	var out string
	if !eventually(func() bool {
		_, out = f.ctl(t, "events")
		for _, l := range strings.Split(out, "\n") {
			if m := count.FindStringSubmatch(l); m != nil && strings.Contains(l, "Unhealthy") {
				n, _ := strconv.Atoi(m[1])
				return n >= 20
			}
		}
		return false
	}) {
		t.Fatalf("no Unhealthy line with a count of 20 or more:\n%s", out)
	}
	if n := strings.Count(out, "Unhealthy"); n != 1 {
		t.Errorf("%d Unhealthy lines, want one with a count:\n%s", n, out)
	}
	// The storm did not push the start-up events out.
	if !strings.Contains(out, "Started") {
		t.Errorf("the Started events are gone from the history:\n%s", out)
	}

	// The API's JSON has the count and the first and last times.
	code, js := f.ctl(t, "events", "-o", "json")
	if code != 0 {
		t.Fatalf("events -o json: %d %s", code, js)
	}
	found := false
	for _, l := range strings.Split(strings.TrimSpace(js), "\n") {
		var e struct {
			Reason    string    `json:"reason"`
			Count     *int      `json:"count"`
			FirstTime time.Time `json:"first_time"`
			LastTime  time.Time `json:"last_time"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("events -o json: %v in %q", err, l)
		}
		if e.Count == nil {
			t.Fatalf("an event without a count: %s", l)
		}
		if e.Reason == "Unhealthy" {
			found = true
			if *e.Count < 20 || !e.FirstTime.Before(e.LastTime) {
				t.Errorf("the Unhealthy event: count %d, first %s, last %s", *e.Count, e.FirstTime, e.LastTime)
			}
		}
	}
	if !found {
		t.Errorf("no Unhealthy event in the JSON:\n%s", js)
	}

	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after SIGTERM: %s", e)
	}
}
