package supervisor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

// demand is a setting that needs a capability of the runtime.
type demand struct {
	name string
	// lack takes the capability away.
	lack func(*Capabilities)
	// ask makes the group "web" (process "api") ask for it.
	ask func(*spec.Group)
	// path is the refused setting's, says what the message names missing.
	path, says string
}

func apiOf(g *spec.Group) *spec.Process { return &g.Processes[0] }

var demands = []demand{
	{"sandbox", func(c *Capabilities) { c.Sandboxes = false },
		func(g *spec.Group) { g.Sandbox = &spec.Sandbox{Namespaces: []string{"pid"}} },
		"group.web.sandbox", "needs a runtime with sandboxes"},
	{"readiness notify", func(c *Capabilities) { c.ReadinessProtocols = false },
		func(g *spec.Group) { apiOf(g).Readiness = "notify" },
		"group.web.process.api.readiness", `readiness = "notify" needs a runtime that serves readiness protocols`},
	{"readiness fd", func(c *Capabilities) { c.ReadinessProtocols = false },
		func(g *spec.Group) { apiOf(g).Readiness = "fd:3" },
		"group.web.process.api.readiness", `readiness = "fd:3" needs a runtime that serves readiness protocols`},
	{"watchdog", func(c *Capabilities) { c.ReadinessProtocols = false },
		func(g *spec.Group) { apiOf(g).Readiness, apiOf(g).Watchdog = "notify", 10*time.Second },
		"group.web.process.api.readiness", "serves readiness protocols"},
	{"sockets", func(c *Capabilities) { c.SocketActivation = false },
		func(g *spec.Group) { apiOf(g).Sockets = []string{"web"} },
		"group.web.process.api.sockets", `sockets = ["web"] need a runtime that hands out activation sockets`},
	{"log rotation", func(c *Capabilities) { c.OutputCapture = false },
		func(g *spec.Group) { apiOf(g).Log = spec.Log{MaxSize: 1 << 20, MaxFiles: 3} },
		"group.web.process.api.log", "log settings (max_size, max_files) need a runtime that captures output"},
	{"log mode", func(c *Capabilities) { c.OutputCapture = false },
		func(g *spec.Group) { apiOf(g).Log.Mode = "passthrough" },
		"group.web.process.api.log", `log settings (mode = "passthrough") need a runtime that captures output`},
	{"separate streams", func(c *Capabilities) { c.OutputCapture = false },
		func(g *spec.Group) { apiOf(g).Log.SeparateStreams = true },
		"group.web.process.api.log", "log settings (separate_streams) need a runtime that captures output"},
	{"an init's log", func(c *Capabilities) { c.OutputCapture = false },
		func(g *spec.Group) {
			g.Init = []spec.Process{{Name: "setup", Command: []string{"/bin/true"}, Log: spec.Log{MaxFiles: 2}}}
		},
		"group.web.init.setup.log", "log settings (max_files) need a runtime that captures output"},
	{"journal", func(c *Capabilities) { c.Journal, c.OutputCapture = false, false },
		func(g *spec.Group) { apiOf(g).Log.Journal = true },
		"group.web.process.api.log.journal", "journal = true needs a journal layer (systemd.JournalRuntime) or output capture"},
}

// webGroup is the group every demand is made of: "api", which runs.
func webGroup() spec.Group {
	return spec.Group{Name: "web", RestartPolicy: spec.RestartAlways,
		Processes: []spec.Process{{Name: "api", Command: []string{"/bin/true"}}}}
}

func (d demand) config() spec.Config {
	g := webGroup()
	d.ask(&g)
	return configOf(g)
}

func (d demand) runtime() *fakeRuntime {
	rt := newFakeRuntime(clock.NewFake(clock.Epoch), constant(simRun{RunFor: -1}))
	d.lack(&rt.caps)
	return rt
}

// assertRefused checks that err refuses exactly d's setting, saying what
// is missing.
func assertRefused(t *testing.T, d demand, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want one wrapping ErrUnsupported", err)
	}
	fes, ok := spec.AsErrors(err)
	if !ok || len(fes) != 1 {
		t.Fatalf("field errors in %q: %v, want exactly one", err, fes)
	}
	if got := strings.Join(fes[0].Path, "."); got != d.path {
		t.Errorf("refused %s, want %s", got, d.path)
	}
	if !strings.Contains(fes[0].Msg, d.says) {
		t.Errorf("message %q does not say %q", fes[0].Msg, d.says)
	}
	if !strings.Contains(err.Error(), d.path+": ") {
		t.Errorf("error %q does not name %s", err, d.path)
	}
}

// New refuses a setting its runtime cannot honour, naming it; the same
// runtime takes the configuration without the setting, and a runtime with
// the capability takes it with.
func TestNewRefusesWhatTheRuntimeCannotHonour(t *testing.T) {
	t.Parallel()
	for _, d := range demands {
		t.Run(d.name, func(t *testing.T) {
			rt := d.runtime()
			_, err := New(d.config(), Options{Clock: rt.clock, Runtime: rt})
			assertRefused(t, d, err)
			if _, err := New(configOf(webGroup()), Options{Clock: rt.clock, Runtime: rt}); err != nil {
				t.Errorf("without the setting: %v", err)
			}
			full := newFakeRuntime(rt.clock, constant(simRun{RunFor: -1}))
			if _, err := New(d.config(), Options{Clock: rt.clock, Runtime: full}); err != nil {
				t.Errorf("on a runtime with every capability: %v", err)
			}
		})
	}
}

// A reload that asks for what the runtime cannot honour is refused as a
// whole: the configuration in force stays, and nothing is restarted.
func TestReloadRefusesWhatTheRuntimeCannotHonourAndKeepsTheRunningConfig(t *testing.T) {
	t.Parallel()
	for _, d := range demands {
		t.Run(d.name, func(t *testing.T) {
			running := configOf(webGroup())
			f := startFakeOn(t, running, d.runtime())
			f.advanceTo(time.Second)
			if got := len(f.rt.startsOf("api")); got != 1 {
				t.Fatalf("api started %d times before the reload, want 1", got)
			}

			// The refused configuration also adds a group, which must not start.
			next := d.config()
			next.Groups = append(next.Groups, spec.Group{Name: "other",
				Processes: []spec.Process{{Name: "worker", Command: []string{"/bin/true"}}}})
			ch, err := f.sup.Reload(next)
			assertRefused(t, d, err)
			if !ch.Empty() {
				t.Errorf("a refused reload reports changes: %+v", ch)
			}
			f.advanceTo(2 * time.Second)
			if got := len(f.rt.startsOf("api")); got != 1 {
				t.Errorf("api started %d times after the refused reload, want still 1", got)
			}
			if got := f.rt.startsOf("worker"); len(got) != 0 {
				t.Errorf("the refused reload's new group started: %v", got)
			}
			if _, ok := f.sup.Status().Group("other"); ok {
				t.Error("the refused reload's new group is in the status")
			}
			// Against the configuration in force, the running one is no change.
			if ch, err := f.sup.Reload(running); err != nil || !ch.Empty() {
				t.Errorf("reload of the running configuration: %+v, %v; want no change: the refused one replaced it", ch, err)
			}
			f.shutdown()
		})
	}
}

// journal = true is honoured by a journal layer, or by capture, which it
// falls back to outside journald.
func TestJournalNeedsTheJournalOrCapture(t *testing.T) {
	t.Parallel()
	g := webGroup()
	apiOf(&g).Log.Journal = true
	for _, caps := range []Capabilities{{Journal: true}, {OutputCapture: true}} {
		if err := caps.Check(&spec.Config{Groups: []spec.Group{g}}); err != nil {
			t.Errorf("%+v: %v", caps, err)
		}
	}
	// Other log settings need capture even with the journal.
	apiOf(&g).Log.MaxFiles = 2
	err := Capabilities{Journal: true}.Check(&spec.Config{Groups: []spec.Group{g}})
	if fes, _ := spec.AsErrors(err); len(fes) != 1 || strings.Join(fes[0].Path, ".") != "group.web.process.api.log" {
		t.Errorf("journal and max_files without capture: %v, want group.web.process.api.log refused", err)
	}
}

// Over a runtime with no capability (as hostrt.Runtime) New refuses every
// setting that needs one, all in one error.
func TestRuntimeWithoutCapabilitiesRefusesEveryDemand(t *testing.T) {
	t.Parallel()
	g := webGroup()
	for _, d := range demands {
		d.ask(&g)
	}
	none := newFakeRuntime(clock.NewFake(clock.Epoch), constant(simRun{RunFor: -1}))
	none.caps = Capabilities{}
	_, err := New(configOf(g), Options{Runtime: none})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want one wrapping ErrUnsupported", err)
	}
	fes, _ := spec.AsErrors(err)
	refused := map[string]bool{}
	for _, fe := range fes {
		refused[strings.Join(fe.Path, ".")] = true
	}
	for _, d := range demands {
		if !refused[d.path] {
			t.Errorf("%s (%s) not refused: %v", d.path, d.name, err)
		}
	}
}

// The supervisor reaches the kernel only through its Runtime and has no
// default one: New without one says so.
func TestNewWithoutRuntimeIsRefused(t *testing.T) {
	t.Parallel()
	if _, err := New(configOf(webGroup()), Options{}); !errors.Is(err, ErrNoRuntime) {
		t.Errorf("New without a Runtime: %v, want ErrNoRuntime", err)
	}
}
