package kube

import (
	"bytes"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/examples"
	"github.com/podsup/podsup/spec"
)

// groupsWithBackoff are cfg's groups, each with its effective back-off
// written out: a file's top-level backoff is every group's default, and a
// Pod carries it per group.
func groupsWithBackoff(cfg *spec.Config) []spec.Group {
	out := make([]spec.Group, len(cfg.Groups))
	for i, g := range cfg.Groups {
		b := g.EffectiveBackoff(cfg.Backoff)
		g.Backoff = &b
		out[i] = g
	}
	return out
}

// asConverted is groups as converting a Pod of them gives them back:
// every process has the HOSTNAME a Pod's containers get (standardEnv).
func asConverted(groups []spec.Group) []spec.Group {
	out := make([]spec.Group, len(groups))
	for i, g := range groups {
		hostname := g.Name
		if g.Sandbox != nil && slices.Contains(g.Sandbox.Namespaces, "uts") && g.Sandbox.Hostname != "" {
			hostname = g.Sandbox.Hostname
		}
		for _, list := range []*[]spec.Process{&g.Init, &g.Processes} {
			ps := slices.Clone(*list)
			for j := range ps {
				if _, ok := ps[j].Env["HOSTNAME"]; !ok {
					ps[j].Env = maps.Clone(ps[j].Env)
					if ps[j].Env == nil {
						ps[j].Env = map[string]string{}
					}
					ps[j].Env["HOSTNAME"] = hostname
				}
			}
			*list = ps
		}
		out[i] = g
	}
	return out
}

// testImage is the image roundTrip gives the processes that name none:
// a Pod's containers need one.
const testImage = "registry.example/podsup-test:1"

// giveImages gives every process of cfg without an image testImage, in
// place, so that cfg is what an export and convert give back.
func giveImages(cfg *spec.Config) {
	for i := range cfg.Groups {
		for _, ps := range [][]spec.Process{cfg.Groups[i].Init, cfg.Groups[i].Processes} {
			for j := range ps {
				if ps[j].Image == "" {
					ps[j].Image = testImage
				}
			}
		}
	}
}

// roundTrip exports cfg and converts it back, under Strict, after
// giveImages.
func roundTrip(t *testing.T, cfg *spec.Config, kind string) (*spec.Config, string) {
	t.Helper()
	giveImages(cfg)
	var yml bytes.Buffer
	if _, err := Export(&yml, cfg, ExportOptions{Kind: kind}); err != nil {
		t.Fatalf("Export: %v", err)
	}
	res, err := Convert(bytes.NewReader(yml.Bytes()), Options{Strict: true})
	if err != nil {
		t.Fatalf("Convert of the export: %v\n%s", err, yml.String())
	}
	return res.Config, yml.String()
}

// exampleConfigs loads every example configuration as podsup up would:
// each examples/*.hcl, and the examples/conf.d directory (three files, an
// env file and a variable, with its defaults) as one configuration.
func exampleConfigs(t *testing.T) map[string]*spec.Config {
	t.Helper()
	files, err := fs.Glob(examples.FS, "*.hcl")
	if err != nil || len(files) < 4 {
		t.Fatalf("examples: %v %v", files, err)
	}
	out := map[string]*spec.Config{}
	for _, f := range files {
		src, err := fs.ReadFile(examples.FS, f)
		if err != nil {
			t.Fatal(err)
		}
		if out[f], err = config.Parse(src, f); err != nil {
			t.Fatal(err)
		}
	}
	// No PODSUP_VAR_ or PODSUP_LOG_LEVEL from the environment: the
	// defaults, as podsup validate -f examples/conf.d/ reads them.
	noEnv := func(string) (string, bool) { return "", false }
	if out["conf.d"], err = (config.Options{LookupEnv: noEnv}).Load("../examples/conf.d"); err != nil {
		t.Fatal(err)
	}
	if n := len(out["conf.d"].Groups); n < 2 {
		t.Fatalf("examples/conf.d has %d groups, want its two", n)
	}
	return out
}

// convert(export(x)) == x for every example, compared as spec values,
// as Pods and as Deployments, under --strict: the export has no field
// that convert would drop.
func TestExportConvertRoundTripsEveryExample(t *testing.T) {
	for f, cfg := range exampleConfigs(t) {
		for _, kind := range []string{"pod", "deployment"} {
			t.Run(f+"/"+kind, func(t *testing.T) {
				back, yml := roundTrip(t, cfg, kind)
				want, got := asConverted(groupsWithBackoff(cfg)), groupsWithBackoff(back)
				if !equal(want, got) {
					t.Errorf("round trip changed the groups\nwant %s\ngot  %s\nYAML:\n%s", show(want), show(got), yml)
				}
			})
		}
	}
}

// What a Pod has, a Pod says: an export of a group that uses only
// Kubernetes' fields carries no podsup.dev/ annotation.
func TestExportUsesPodFieldsFirst(t *testing.T) {
	t.Parallel()
	cfg := &spec.Config{Backoff: spec.DefaultBackoff(), Groups: []spec.Group{{
		Name: "web", RestartPolicy: spec.RestartOnFailure, TerminationGracePeriod: spec.Durp(5 * time.Second),
		Sandbox: &spec.Sandbox{Namespaces: []string{"pid", "mount", "uts"}, Hostname: "web",
			Mounts:    []spec.Mount{{Type: "proc", Target: "/proc"}},
			Resources: spec.Resources{Memory: 64 << 20, CPU: 0.5, CPUWeight: cpuWeight(250), CPURequest: 0.25}},
		Processes: []spec.Process{{
			Name: "app", Command: []string{"sleep", "60"}, Env: map[string]string{"A": "1"}, User: "1000", Group: "1000",
			LivenessProbe: &spec.Probe{Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: 8080, Path: "/healthz"}}, Period: 5 * time.Second},
			PreStop:       &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: 2 * time.Second}}},
			StopSignal:    2,
		}},
	}}}
	back, yml := roundTrip(t, cfg, "pod")
	if strings.Contains(yml, "podsup.dev/") {
		t.Errorf("export used annotations for Kubernetes' own fields:\n%s", yml)
	}
	for _, want := range []string{"shareProcessNamespace: true", "hostname: web", "periodSeconds: 5", "stopSignal: SIGINT", "memory: 64Mi", "cpu: 500m", "cpu: 250m", "runAsUser: 1000"} {
		if !strings.Contains(yml, want) {
			t.Errorf("export lacks %q:\n%s", want, yml)
		}
	}
	if !equal(asConverted(groupsWithBackoff(cfg)), groupsWithBackoff(back)) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Groups))
	}
}

// O1: a sidecar is exported as a restartable init container, in the
// Pod's own fields, and comes back a sidecar.
func TestExportSidecarAsRestartableInitContainer(t *testing.T) {
	cfg := &spec.Config{Backoff: spec.DefaultBackoff(), Groups: []spec.Group{{
		Name: "job", RestartPolicy: spec.RestartNever,
		Init: []spec.Process{
			{Name: "migrate", Command: []string{"true"}},
			{Name: "shipper", Command: []string{"sleep", "60"}, RestartPolicy: spec.RestartAlways,
				StartupProbe: &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"true"}}}, Period: time.Second}},
		},
		Processes: []spec.Process{{Name: "work", Command: []string{"true"}}},
	}}}
	back, yml := roundTrip(t, cfg, "pod")
	if strings.Contains(yml, "podsup.dev/") {
		t.Errorf("a sidecar needs no annotation:\n%s", yml)
	}
	if strings.Count(yml, "restartPolicy: Always") != 1 || !strings.Contains(yml, "startupProbe:") {
		t.Errorf("the sidecar is not a restartable init container with its probe:\n%s", yml)
	}
	if !equal(asConverted(groupsWithBackoff(cfg)), groupsWithBackoff(back)) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Groups))
	}
}

// podsup-only fields go into annotations, with a warning naming them.
func TestExportAnnotatesPodsupOnlyFields(t *testing.T) {
	t.Parallel()
	cfg := &spec.Config{Backoff: spec.DefaultBackoff(), Groups: []spec.Group{{
		Name:    "g",
		Backoff: &spec.Backoff{Initial: time.Second, Max: time.Minute, Reset: 5 * time.Minute},
		Processes: []spec.Process{{
			Name: "p", Command: []string{"sleep", "60"}, Critical: true, User: "nobody",
			ReadinessProbe: &spec.Probe{Handler: spec.Handler{TCPSocket: &spec.TCPSocketAction{Port: 80}}, Period: 500 * time.Millisecond},
			PreStart:       &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"true"}}}},
		}},
	}}}
	var yml bytes.Buffer
	warns, err := Export(&yml, cfg, ExportOptions{DefaultImage: testImage})
	if err != nil {
		t.Fatal(err)
	}
	got := findingsText(warns)
	for _, want := range []string{
		"Pod/g: metadata.annotations[podsup.dev/group]: podsup-only fields, which Kubernetes ignores: backoff {",
		"Pod/g: metadata.annotations[podsup.dev/process.p]: podsup-only fields, which Kubernetes ignores: user = \"nobody\" critical = true readiness_probe {",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	back, _ := roundTrip(t, cfg, "pod")
	if !equal(asConverted(groupsWithBackoff(cfg)), groupsWithBackoff(back)) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Groups))
	}
}

// The example manifests convert, and what they run is on this machine.
func TestExampleManifestsConvert(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/kube/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example manifests: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := fs.ReadFile(osDirFS(filepath.Dir(f)), filepath.Base(f))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "podsup-kube play examples/kube/"+filepath.Base(f)) {
				t.Errorf("%s does not say how to run it", f)
			}
			cfg, _ := convertAndParse(t, string(src), Options{})
			for _, g := range cfg.Groups {
				for _, p := range append(append([]spec.Process(nil), g.Init...), g.Processes...) {
					lookPath(t, p.Command[0])
				}
			}
		})
	}
}

// O5: an annotation on a sidecar's init container may hold what only a
// sidecar may have (a readiness protocol here), and may also say
// restart_policy itself.
func TestSidecarAnnotations(t *testing.T) {
	for _, body := range []string{`readiness = "notify"`, "restart_policy = \"always\"\nreadiness = \"notify\""} {
		manifest := `apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    podsup.dev/init.shipper: '` + strings.ReplaceAll(body, "\n", "\n\n    ") + `'
spec:
  initContainers:
  - name: shipper
    command: [sleep, "60"]
    restartPolicy: Always
  containers:
  - name: app
    command: [sleep, "60"]
`
		cfg, _ := convertAndParse(t, manifest, Options{Strict: true})
		if sc := cfg.Groups[0].Init[0]; !spec.IsSidecar(&sc) || sc.Readiness != "notify" {
			t.Errorf("%q: init %+v", body, sc)
		}
	}
}

// depends_on has no Pod field: it travels in the annotations, for a
// group, a process and an init, and comes back the same (W1).
func TestDependsOnRoundTrips(t *testing.T) {
	cfg, err := config.Parse([]byte(`
group "db" {
  process "db" { command = ["db"] }
}
group "app" {
  depends_on "db" {
    condition = "ready"
    timeout   = "1m"
  }
  init "a" { command = ["a"] }
  init "b" {
    command = ["b"]
    depends_on "a" { condition = "completed" }
  }
  process "main" { command = ["m"] }
  process "api" {
    command = ["api"]
    depends_on "main" {
      condition = "started"
      restart   = true
    }
  }
}
`), "deps.hcl")
	if err != nil {
		t.Fatal(err)
	}
	back, yml := roundTrip(t, cfg, "pod")
	want, got := asConverted(groupsWithBackoff(cfg)), groupsWithBackoff(back)
	if !equal(want, got) {
		t.Errorf("round trip changed the groups\nwant %s\ngot  %s\nYAML:\n%s", show(want), show(got), yml)
	}
	if !strings.Contains(yml, "depends_on") {
		t.Errorf("no depends_on in the annotations:\n%s", yml)
	}
}

// The image is data the HCL keeps: convert writes it, podsup's loader
// reads it, export writes it back, and a process without one is refused
// unless a default is given (issue 31, item 1: the API server rejects a
// container without an image).
func TestImageIsKeptAndExported(t *testing.T) {
	t.Parallel()
	cfg, _ := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: "nginx:1.27", command: [nginx, -g, daemon off;]}
`, Options{})
	if got := cfg.Groups[0].Processes[0].Image; got != "nginx:1.27" {
		t.Fatalf("image = %q after convert and parse", got)
	}
	var yml bytes.Buffer
	if _, err := Export(&yml, cfg, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(yml.String(), "image: nginx:1.27") {
		t.Errorf("export lacks the image:\n%s", yml.String())
	}

	cfg.Groups[0].Init = []spec.Process{{Name: "setup", Command: []string{"true"}}}
	_, err := Export(&bytes.Buffer{}, cfg, ExportOptions{})
	if err == nil || !strings.Contains(err.Error(), `error: Pod/web: spec.initContainers[0].image: "setup" has none`) || !strings.Contains(err.Error(), "--default-image") {
		t.Errorf("export of an init without an image: err = %v", err)
	}
	yml.Reset()
	if _, err := Export(&yml, cfg, ExportOptions{DefaultImage: "busybox:1.37"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(yml.String(), "image: busybox:1.37") || !strings.Contains(yml.String(), "image: nginx:1.27") {
		t.Errorf("the default image is not the init's alone:\n%s", yml.String())
	}
	if cfg.Groups[0].Init[0].Image != "" {
		t.Errorf("export changed its input")
	}
}
