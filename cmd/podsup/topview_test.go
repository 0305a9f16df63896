package main

import (
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
)

func TestTopDecodesTerminalKeys(t *testing.T) {
	for in, want := range map[string][]string{
		"q":               {"q"},
		"/web\r":          {"/", "w", "e", "b", "enter"},
		"\x03":            {"ctrl-c"},
		"\x1b":            {"esc"},
		"\x1b[A\x1b[B":    {"up", "down"},
		"\x1bOA":          {"up"},
		"\x1b[5~\x1b[6~x": {"pgup", "pgdn", "x"},
		"\x1b[1;5Cz":      {"z"}, // ctrl-right: not bound, dropped whole
		"\x1b[":           nil,   // cut off
		"\x7fé":           {"backspace", "é"},
		"\x01":            nil,
	} {
		if got := decodeKeys([]byte(in)); !slices.Equal(got, want) {
			t.Errorf("decodeKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

func topSample() api.StatusResponse {
	return api.StatusResponse{Groups: []api.GroupStatus{
		{Name: "web", Processes: []api.ProcessStatus{
			{Name: "api", State: "running", Ready: true},
			{Name: "worker", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 3},
		}},
		{Name: "db", Init: []api.ProcessStatus{{Name: "migrate", Init: true, State: "terminated", Reason: "Completed"}},
			Processes: []api.ProcessStatus{{Name: "postgres", State: "running"}}},
	}}
}

func press(v *topView, keys ...string) topCmd {
	var last topCmd
	for _, k := range keys {
		last = v.key(k)
	}
	return last
}

func TestTopViewFiltersSelectsAndConfirms(t *testing.T) {
	v := newTopView(100, 10)
	v.setStatus(topSample(), true)
	if got := len(v.shown()); got != 4 {
		t.Fatalf("%d rows shown, want 4", got)
	}
	// Filter by state: the crash loop alone, and it is selected.
	press(v, "/", "C", "r", "a", "s", "h", "enter")
	if rows := v.shown(); len(rows) != 1 || rows[0].key != (topKey{"web", "worker"}) {
		t.Fatalf("filter Crash shows %v", rows)
	}
	// s asks; anything but y cancels; y stops.
	if cmd := press(v, "s"); cmd.kind != cmdNone || v.mode != modeConfirm || !strings.Contains(v.footer(), "stop web/worker? (y/n)") {
		t.Fatalf("s: %+v, mode %v, footer %q", cmd, v.mode, v.footer())
	}
	if cmd := press(v, "x"); cmd.kind != cmdNone || v.mode != modeTable {
		t.Fatalf("x after s: %+v", cmd)
	}
	press(v, "r")
	if cmd := press(v, "y"); cmd.kind != cmdAction || cmd.verb != "restart" || cmd.key != (topKey{"web", "worker"}) {
		t.Fatalf("r y: %+v", cmd)
	}
	// S starts without asking; l and d open views; q quits.
	if cmd := press(v, "S"); cmd.kind != cmdAction || cmd.verb != "start" {
		t.Fatalf("S: %+v", cmd)
	}
	if cmd := press(v, "d"); cmd.kind != cmdDescribe {
		t.Fatalf("d: %+v", cmd)
	}
	// esc clears the filter; down moves; the cursor stays within the rows.
	press(v, "esc", "down", "down", "down", "down", "down")
	if k, _ := v.selected(); k != (topKey{"db", "postgres"}) {
		t.Fatalf("after five downs of four rows: %v", k)
	}
	if cmd := press(v, "l"); cmd.kind != cmdLog || cmd.key != (topKey{"db", "postgres"}) {
		t.Fatalf("l: %+v", cmd)
	}
	if cmd := press(v, "q"); cmd.kind != cmdQuit {
		t.Fatalf("q: %+v", cmd)
	}
}

func TestTopViewMergesWatchAndUsage(t *testing.T) {
	v := newTopView(120, 10)
	v.setStatus(topSample(), true)
	// A watch update holds only what changed.
	v.setStatus(api.StatusResponse{Groups: []api.GroupStatus{{Name: "web", Processes: []api.ProcessStatus{
		{Name: "worker", State: "running", RestartCount: 4},
	}}}}, false)
	if r := v.rows[topKey{"web", "worker"}]; r.p.State != "running" || len(v.order) != 4 {
		t.Fatalf("after a change: %+v, %d rows", r.p, len(v.order))
	}
	// Usage: CPU as a share of one CPU between readings.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	withUsage := func(cpu float64) api.StatusResponse {
		st := topSample()
		st.Groups = st.Groups[:1] // db left the configuration
		st.Groups[0].Processes[0].Usage = &api.Usage{CPUSeconds: cpu, MemoryBytes: 3 << 20}
		return st
	}
	v.setUsage(withUsage(10), t0)
	if r := v.rows[topKey{"web", "api"}]; r.hasCPU {
		t.Fatal("a CPU share from one reading")
	}
	if _, ok := v.rows[topKey{"db", "postgres"}]; ok || len(v.order) != 2 {
		t.Fatalf("a group the usage no longer lists is still shown: %v", v.order)
	}
	v.setUsage(withUsage(11), t0.Add(2*time.Second))
	screen := strings.Join(v.render(t0), "\n")
	if !strings.Contains(screen, "50.0%") || !strings.Contains(screen, "3MiB") {
		t.Fatalf("screen lacks 50.0%% CPU and 3MiB:\n%s", screen)
	}
	if lines := v.render(t0); len(lines) != 10 {
		t.Fatalf("render gave %d lines for a 10-line terminal", len(lines))
	}
}

// A group the watch says was removed leaves the screen at once, without
// waiting for the next usage reading.
func TestTopViewDropsARemovedGroup(t *testing.T) {
	v := newTopView(120, 10)
	v.handle(topStatusMsg{st: topSample(), full: true})
	v.handle(topGroupGoneMsg("db"))
	for _, k := range v.order {
		if k.group == "db" {
			t.Fatalf("db's rows are still shown after DELETED: %v", v.order)
		}
	}
	if _, ok := v.rows[topKey{"db", "postgres"}]; ok || len(v.order) != 2 {
		t.Fatalf("after db was removed: %v", v.order)
	}
}

// podsup top is a client like any other: its files import the public API
// client and the terminal helpers (tty, termsafe), nothing of the runtime.
func TestTopUsesOnlyThePublicAPI(t *testing.T) {
	fset := token.NewFileSet()
	for _, file := range []string{"top.go", "topview.go", "logs.go"} {
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/podsup/podsup/") && path != "github.com/podsup/podsup/api" && path != "github.com/podsup/podsup/internal/tty" && path != "github.com/podsup/podsup/internal/termsafe" {
				t.Errorf("%s imports %s: top and logs use the API client (package api) alone", file, path)
			}
		}
	}
}
