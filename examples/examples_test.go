package examples

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/spec"
)

// TestExamplesParseAndValidate loads every examples/*.hcl through the real
// loader, checks each has a header saying how to run it, and that every
// program it runs exists on this machine (the examples must be runnable on
// a plain Debian system).
func TestExamplesParseAndValidate(t *testing.T) {
	files, err := filepath.Glob("*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d examples, want at least 4: %v", len(files), files)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			cfg, err := config.Load(f)
			if err != nil {
				var ce *config.Error
				if errors.As(err, &ce) {
					var b bytes.Buffer
					_ = ce.WriteText(&b, false) // only for the failure message
					t.Fatalf("%s:\n%s", f, b.String())
				}
				t.Fatal(err)
			}
			src, err := fs.ReadFile(FS, f)
			if err != nil {
				t.Fatalf("not embedded: %v", err)
			}
			if !strings.HasPrefix(string(src), "# "+f+":") {
				t.Errorf("%s does not start with a header comment \"# %s: ...\"", f, f)
			}
			if !strings.Contains(string(src), "podsup up -f examples/"+f) {
				t.Errorf("%s does not say how to run it (podsup up -f examples/%s)", f, f)
			}
			for _, g := range cfg.Groups {
				for _, p := range append(append([]spec.Process(nil), g.Init...), g.Processes...) {
					lookPath(t, g.Name+"/"+p.Name, p.Command)
					for _, h := range []*spec.Hook{p.PreStart, p.PostStart, p.PreStop, p.PostStop} {
						if h != nil && h.Exec != nil {
							lookPath(t, g.Name+"/"+p.Name+" hook", h.Exec.Command)
						}
					}
					for _, pr := range []*spec.Probe{p.StartupProbe, p.LivenessProbe, p.ReadinessProbe} {
						if pr != nil && pr.Exec != nil {
							lookPath(t, g.Name+"/"+p.Name+" probe", pr.Exec.Command)
						}
					}
				}
			}
		})
	}
}

func lookPath(t *testing.T, what string, command []string) {
	t.Helper()
	if _, err := exec.LookPath(command[0]); err != nil {
		t.Errorf("%s runs %q, which is not on this machine: %v", what, command[0], err)
	}
}

// TestInitSidecarShape pins what the example shows and the recreate
// tests rely on (`podsup recreate web app`): an init step, then a sidecar
// (O1), then the app.
func TestInitSidecarShape(t *testing.T) {
	cfg, err := config.Load("init-sidecar.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Groups) != 1 || cfg.Groups[0].Name != "web" || len(cfg.Groups[0].Init) != 2 {
		t.Fatalf("want one group \"web\" with two inits, got %+v", cfg.Groups)
	}
	g := cfg.Groups[0]
	if spec.IsSidecar(&g.Init[0]) || !spec.IsSidecar(&g.Init[1]) || g.Init[1].StartupProbe == nil {
		t.Errorf("want a plain init, then a sidecar with a startup probe: %+v", g.Init)
	}
	var names []string
	for _, p := range g.Processes {
		names = append(names, p.Name)
		if p.Name == "app" && (p.ReadinessProbe == nil || p.PreStop == nil) {
			t.Errorf("app needs a readiness probe and a pre_stop hook")
		}
	}
	if strings.Join(names, ",") != "app" {
		t.Errorf("processes = %v, want app", names)
	}
}

// TestPID1HasCriticalProcess pins X11's example.
func TestPID1HasCriticalProcess(t *testing.T) {
	cfg, err := config.Load("pid1.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range cfg.Groups {
		for _, p := range g.Processes {
			if p.Critical {
				return
			}
		}
	}
	t.Error("pid1.hcl has no critical process")
}

// TestConfDirExample loads examples/conf.d as podsup up -f examples/conf.d/
// does: three files as one configuration, the worker's environment from
// app.env, and a variable's default overridden by --var.
func TestConfDirExample(t *testing.T) {
	files, err := filepath.Glob("conf.d/*.hcl")
	if err != nil || len(files) != 3 {
		t.Fatalf("conf.d holds %v (%v), want three files", files, err)
	}
	src, err := fs.ReadFile(FS, "conf.d/00-base.hcl")
	if err != nil {
		t.Fatalf("not embedded: %v", err)
	}
	if !strings.Contains(string(src), "podsup up -f examples/conf.d/") {
		t.Error("conf.d/00-base.hcl does not say how to run it (podsup up -f examples/conf.d/)")
	}
	cfg, err := config.Options{Vars: []string{"http_port=8091"}, LookupEnv: func(string) (string, bool) { return "", false }}.Load("conf.d")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Groups) != 2 || cfg.Groups[0].Name != "web" || cfg.Groups[1].Name != "worker" {
		t.Fatalf("groups = %+v, want web then worker", cfg.Groups)
	}
	http := cfg.Groups[0].Processes[0]
	if got := http.Command[len(http.Command)-1]; got != "8091" || http.ReadinessProbe.TCPSocket.Port != 8091 {
		t.Errorf("--var http_port=8091 did not reach the command (%q) and the probe (%v)", got, http.ReadinessProbe.TCPSocket.Port)
	}
	greeter := cfg.Groups[1].Processes[0]
	want := map[string]string{"APP_NAME": "podsup-example", "INTERVAL": "5", "GREETING": "hello"}
	if !maps.Equal(greeter.Env, want) {
		t.Errorf("worker/greeter env = %q, want %q", greeter.Env, want)
	}
	for _, p := range []spec.Process{http, greeter} {
		lookPath(t, p.Name, p.Command)
	}
}
