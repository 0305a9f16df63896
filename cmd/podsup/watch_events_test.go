package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
)

// watchConfig has a group a reload removes ("gone") and a process a
// reload removes from a group that stays (web/extra).
const watchConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "web" {
  termination_grace_period = "1s"
  process "api" {
    command = ["sleep", "1000"]
  }
  process "extra" {
    command = ["sleep", "1001"]
  }
}
group "gone" {
  termination_grace_period = "1s"
  process "q" {
    command = ["sleep", "1002"]
  }
}
`

const watchConfigAfter = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "web" {
  termination_grace_period = "1s"
  process "api" {
    command = ["sleep", "1000"]
  }
}
`

// status -w says when a reload removed a group or a process: -o json with
// a DELETED line (the group's last state) and MODIFIED lines that hold the
// whole group, the table with a "removed" line. Before, the stream never
// mentioned a removed group, so a reader kept it forever.
func TestStatusWatchSaysRemoved(t *testing.T) {
	t.Parallel()
	f := startUp(t, watchConfig)
	f.waitRunning(t, "web", "extra")
	f.waitRunning(t, "gone", "q")

	js := start(t, podsupCmd(t, "--socket", f.socket, "status", "-w", "-o", "json"))
	tab := start(t, podsupCmd(t, "--socket", f.socket, "status", "-w"))
	// The initial state: an ADDED line per group, then a BOOKMARK.
	added := map[string]bool{}
	for {
		l := js.lineOr(t, "status -w -o json started")
		var e api.WatchEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Type == "" {
			t.Fatalf("status -w -o json line %q is no watch event (type ADDED, MODIFIED, DELETED or BOOKMARK): %v", l, err)
		}
		if e.Type == api.WatchBookmark {
			break
		}
		if e.Type != api.WatchAdded || e.Group == nil {
			t.Fatalf("initial line %q, want ADDED with a group", l)
		}
		added[e.Group.Name] = true
	}
	if !added["web"] || !added["gone"] {
		t.Fatalf("initial state had %v, want web and gone", added)
	}
	if h := tab.lineOr(t, "status -w started"); !strings.HasPrefix(h, "GROUP") {
		t.Fatalf("status -w header: %q", h)
	}
	for range 3 { // web/api, web/extra, gone/q
		tab.lineOr(t, "status -w printed its header")
	}

	f.write(t, strings.Replace(watchConfigAfter, "%s", f.socket, 1))
	if code, out := f.ctl(t, "reload"); code != 0 {
		t.Fatalf("reload: %d %s", code, out)
	}

	// -o json: DELETED gone, and web MODIFIED without extra once it is gone.
	deadline := time.Now().Add(30 * time.Second)
	var deleted, webWithoutExtra bool
	for !(deleted && webWithoutExtra) {
		l, ok := js.lineWithin(t, time.Until(deadline))
		if !ok {
			t.Fatalf("after the reload status -w -o json never said gone was DELETED (%v) and web lost extra (%v)", deleted, webWithoutExtra)
		}
		var e api.WatchEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Group == nil {
			t.Fatalf("line %q: %v", l, err)
		}
		switch {
		case e.Type == api.WatchDeleted && e.Group.Name == "gone":
			deleted = true
			if len(e.Group.Processes) != 1 || e.Group.Processes[0].Name != "q" {
				t.Errorf("DELETED gone holds %s, want its last state with q", l)
			}
		case e.Type == api.WatchDeleted:
			t.Fatalf("DELETED of a group that stays: %s", l)
		case e.Group.Name == "web":
			if len(e.Group.Processes) == 0 {
				t.Fatalf("MODIFIED web with no process: %s", l)
			}
			webWithoutExtra = len(e.Group.Processes) == 1 && e.Group.Processes[0].Name == "api"
		}
	}

	// The table: a line for the removed group and one for the process.
	groupGone := regexp.MustCompile(`^gone\s+-\s+group removed\b`)
	processGone := regexp.MustCompile(`^web\s+extra\s+removed\b`)
	var sawGroup, sawProcess bool
	for !(sawGroup && sawProcess) {
		l, ok := tab.lineWithin(t, time.Until(deadline))
		if !ok {
			t.Fatalf("after the reload status -w never printed that gone (%v) and web/extra (%v) were removed", sawGroup, sawProcess)
		}
		sawGroup = sawGroup || groupGone.MatchString(l)
		sawProcess = sawProcess || processGone.MatchString(l)
	}
}

// ageColumn is the AGE cell of the first row of `podsup status` for
// group/process.
func ageColumn(t *testing.T, f *upFixture, target string) string {
	t.Helper()
	code, out := f.ctl(t, "status", target)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 2 {
		t.Fatalf("status %s: %d %s", target, code, out)
	}
	cols := regexp.MustCompile(`\s{2,}`)
	head, row := cols.Split(lines[0], -1), cols.Split(lines[1], -1)
	for i, h := range head {
		if h == "AGE" && i < len(row) {
			return row[i]
		}
	}
	t.Fatalf("no AGE in\n%s", out)
	return ""
}

// AGE is the process's age, as kubectl's is the pod's: a restart does not
// reset it, and a process that does not run has one. Before, AGE was the
// running instance's, "-" while none ran.
func TestStatusAgeIsTheProcesss(t *testing.T) {
	t.Parallel()
	f := startUp(t, upConfig)
	pid := f.waitRunning(t, "web", "api")
	created := func() *time.Time {
		st, err := f.c.Status(context.Background(), "web", "api")
		if err != nil || len(st.Groups) != 1 || len(st.Groups[0].Processes) != 1 {
			t.Fatalf("status web/api: %v %+v", err, st)
		}
		return st.Groups[0].Processes[0].CreatedAt
	}
	first := created()
	if first == nil {
		t.Fatal("status -o json has no created_at for web/api")
	}
	if code, out := f.ctl(t, "restart", "web/api"); code != 0 {
		t.Fatalf("restart: %d %s", code, out)
	}
	if !eventually(func() bool { p := f.pid(t, "web", "api"); return p > 0 && p != pid }) {
		t.Fatal("web/api was not restarted")
	}
	if again := created(); again == nil || !again.Equal(*first) {
		t.Errorf("created_at went from %v to %v with a restart", first, again)
	}
	// The crash loop waits most of the time: it has an age all the same.
	if !eventually(func() bool {
		_, out := f.ctl(t, "status", "batch/crash")
		return strings.Contains(out, "CrashLoopBackOff")
	}) {
		t.Fatal("batch/crash never waited in CrashLoopBackOff")
	}
	if code, out := f.ctl(t, "stop", "web/api"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	if !eventually(func() bool { return f.pid(t, "web", "api") == 0 }) {
		t.Fatal("web/api did not stop")
	}
	for _, target := range []string{"web/api", "batch/crash"} {
		if age := ageColumn(t, f, target); age == "-" || !regexp.MustCompile(`^\d+[smhdy]`).MatchString(age) {
			t.Errorf("AGE of %s while it does not run: %q, want the process's age", target, age)
		}
	}
}

// podsup events takes GROUP, GROUP/PROCESS, --for and --types, as kubectl
// events --for and --types; before, any argument was refused.
func TestEventsFilters(t *testing.T) {
	t.Parallel()
	f := startUp(t, upConfig)
	f.waitRunning(t, "web", "api")
	if !eventually(func() bool {
		_, out := f.ctl(t, "events")
		return strings.Contains(out, "BackOff") && strings.Contains(out, "web/sidecar")
	}) {
		t.Fatal("no BackOff event, or none of web/sidecar")
	}
	// rows are the lines after the header, split into TIME, TYPE, REASON,
	// OBJECT and the message.
	rows := func(args ...string) [][]string {
		t.Helper()
		code, out := f.ctl(t, append([]string{"events"}, args...)...)
		if code != 0 {
			t.Fatalf("events %v: %d %s", args, code, out)
		}
		var rs [][]string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			rs = append(rs, strings.Fields(l))
		}
		if len(rs) == 0 {
			t.Fatalf("events %v printed no event:\n%s", args, out)
		}
		return rs
	}
	for _, args := range [][]string{{"web/api"}, {"--for", "web/api"}} {
		for _, r := range rows(args...) {
			if r[3] != "web/api" {
				t.Errorf("events %v printed an event of %s", args, r[3])
			}
		}
	}
	for _, r := range rows("web") {
		if r[3] != "web" && !strings.HasPrefix(r[3], "web/") {
			t.Errorf("events web printed an event of %s", r[3])
		}
	}
	for _, r := range rows("--types", "warning") {
		if r[1] != "Warning" {
			t.Errorf("events --types warning printed a %s event: %v", r[1], r)
		}
	}
	for _, r := range rows("--types", "Normal", "--for", "batch") {
		if r[1] != "Normal" || !strings.HasPrefix(r[3], "batch") {
			t.Errorf("events --types Normal --for batch printed %v", r)
		}
	}
	if code, out := f.ctl(t, "events", "--types", "Error"); code == 0 || !strings.Contains(out, "Warning, Normal") {
		t.Errorf("events --types Error: %d %s, want a refusal naming the types", code, out)
	}
	if code, out := f.ctl(t, "events", "web", "--for", "batch"); code == 0 {
		t.Errorf("events web --for batch: %d %s, want a refusal", code, out)
	}
	// The crash loop's BackOff events are one series, "(xN over D)", and
	// its TIME has no date today.
	if !eventually(func() bool {
		_, out := f.ctl(t, "events", "batch/crash", "--types", "Warning")
		return regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3}\s+Warning\s+BackOff\s+batch/crash\s+Back-off restarting failed process crash \(x\d+ over \S+\)$`).MatchString(out)
	}) {
		_, out := f.ctl(t, "events", "batch/crash")
		t.Fatalf("the BackOff events of batch/crash never folded into one line:\n%s", out)
	}
}

// TIME carries the date when the event is not from today: a time of day
// alone would pass for today's.
func TestEventTimeHasTheDateWhenNotToday(t *testing.T) {
	old := time.Now().Add(-72 * time.Hour)
	var b bytes.Buffer
	if err := printEvent(&b, api.Event{Time: old, Type: "Normal", Reason: "Started", Group: "web", Process: "api", Count: 1}, false); err != nil {
		t.Fatal(err)
	}
	if want := old.Local().Format("2006-01-02 15:04:05"); !strings.HasPrefix(b.String(), want) {
		t.Errorf("an event of three days ago prints %q, want it to begin with %q", b.String(), want)
	}
	b.Reset()
	now := time.Now()
	if err := printEvent(&b, api.Event{Time: now, Type: "Normal", Reason: "Started", Group: "web", Count: 1}, false); err != nil {
		t.Fatal(err)
	}
	if want := now.Local().Format("15:04:05.000") + " "; !strings.HasPrefix(b.String(), want) && now.Local().Day() == time.Now().Local().Day() {
		t.Errorf("an event of now prints %q, want it to begin with %q", b.String(), want)
	}
}
