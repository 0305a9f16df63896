package spec_test

import (
	"reflect"
	"testing"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/spec"
)

// mustParse decodes a configuration with the HCL loader, so that Diff is
// tested on what a reload compares.
func mustParse(t *testing.T, src string) *spec.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(src), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const diffBase = `
group "web" {
  init "migrate" { command = ["/bin/migrate"] }
  process "api"     { command = ["/bin/api"] }
  process "sidecar" { command = ["/bin/sidecar"] }
}
group "db" {
  process "pg" { command = ["/bin/pg"] }
}
`

func TestDiff(t *testing.T) {
	cases := []struct {
		name string
		new  string
		want spec.Changes
	}{
		{"identical", diffBase, spec.Changes{
			UnchangedGroups: []string{"web", "db"},
			Groups: map[string]spec.GroupChanges{
				"web": {Unchanged: []string{"api", "sidecar"}},
				"db":  {Unchanged: []string{"pg"}},
			},
		}},
		{"process order does not count", `
group "db" {
  process "pg" { command = ["/bin/pg"] }
}
group "web" {
  init "migrate" { command = ["/bin/migrate"] }
  process "sidecar" { command = ["/bin/sidecar"] }
  process "api"     { command = ["/bin/api"] }
}`, spec.Changes{
			UnchangedGroups: []string{"db", "web"},
			Groups: map[string]spec.GroupChanges{
				"web": {Unchanged: []string{"sidecar", "api"}},
				"db":  {Unchanged: []string{"pg"}},
			},
		}},
		{"group added and removed", `
group "web" {
  init "migrate" { command = ["/bin/migrate"] }
  process "api"     { command = ["/bin/api"] }
  process "sidecar" { command = ["/bin/sidecar"] }
}
group "cache" {
  process "redis" { command = ["/bin/redis"] }
}`, spec.Changes{
			AddedGroups:     []string{"cache"},
			RemovedGroups:   []string{"db"},
			UnchangedGroups: []string{"web"},
			Groups:          map[string]spec.GroupChanges{"web": {Unchanged: []string{"api", "sidecar"}}},
		}},
		{"process added, removed and changed", `
group "web" {
  init "migrate" { command = ["/bin/migrate"] }
  process "api"     { command = ["/bin/api", "--v2"] }
  process "metrics" { command = ["/bin/metrics"] }
}
group "db" {
  process "pg" {
    command = ["/bin/pg"]
    env     = {}
  }
}`, spec.Changes{
			UnchangedGroups: []string{"db"},
			Groups: map[string]spec.GroupChanges{
				"web": {Added: []string{"metrics"}, Removed: []string{"sidecar"}, Changed: []string{"api"}},
				// env = {} is no change from no env at all.
				"db": {Unchanged: []string{"pg"}},
			},
		}},
		{"probe change is a process change", `
group "web" {
  init "migrate" { command = ["/bin/migrate"] }
  process "api" {
    command = ["/bin/api"]
    readiness_probe {
      tcp_socket { port = 80 }
    }
  }
  process "sidecar" { command = ["/bin/sidecar"] }
}
group "db" {
  process "pg" { command = ["/bin/pg"] }
}`, spec.Changes{
			UnchangedGroups: []string{"db"},
			Groups: map[string]spec.GroupChanges{
				"web": {Changed: []string{"api"}, Unchanged: []string{"sidecar"}},
				"db":  {Unchanged: []string{"pg"}},
			},
		}},
		{"group-level: restart policy, init, sandbox", `
group "web" {
  restart_policy = "on-failure"
  init "migrate" { command = ["/bin/migrate"] }
  process "api"     { command = ["/bin/api"] }
  process "sidecar" { command = ["/bin/sidecar"] }
}
group "db" {
  init "check" { command = ["/bin/check"] }
  process "pg" { command = ["/bin/pg"] }
}`, spec.Changes{
			ChangedGroups: []string{"web", "db"},
			Groups: map[string]spec.GroupChanges{
				"web": {Unchanged: []string{"api", "sidecar"}},
				"db":  {Unchanged: []string{"pg"}},
			},
		}},
		{"top-level backoff changes groups that inherit it", `
backoff { initial = "1s" }
group "web" {
  backoff { initial = "10s" }
  init "migrate" { command = ["/bin/migrate"] }
  process "api"     { command = ["/bin/api"] }
  process "sidecar" { command = ["/bin/sidecar"] }
}
group "db" {
  process "pg" { command = ["/bin/pg"] }
}`, spec.Changes{
			// web's own backoff equals the old default: the effective
			// back-off is what counts.
			ChangedGroups:   []string{"db"},
			UnchangedGroups: []string{"web"},
			Groups: map[string]spec.GroupChanges{
				"web": {Unchanged: []string{"api", "sidecar"}},
				"db":  {Unchanged: []string{"pg"}},
			},
		}},
		{"supervisor change", `
supervisor { log_level = "debug" }
` + diffBase, spec.Changes{
			Supervisor:      []string{"log_level"},
			UnchangedGroups: []string{"web", "db"},
			Groups: map[string]spec.GroupChanges{
				"web": {Unchanged: []string{"api", "sidecar"}},
				"db":  {Unchanged: []string{"pg"}},
			},
		}},
	}
	old := mustParse(t, diffBase)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := spec.Diff(old, mustParse(t, tc.new))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff =\n%+v\nwant\n%+v", got, tc.want)
			}
			if got.Empty() != (tc.name == "identical" || tc.name == "process order does not count") {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
}

func TestDiffGoBuiltConfigs(t *testing.T) {
	// A library user's config: empty and nil collections compare equal.
	a := &spec.Config{Backoff: spec.DefaultBackoff(), Groups: []spec.Group{{
		Name: "g", Processes: []spec.Process{{Name: "p", Command: []string{"x"}, Env: map[string]string{}, Sockets: []string{}}},
	}}}
	b := &spec.Config{Backoff: spec.DefaultBackoff(), Groups: []spec.Group{{
		Name: "g", Init: []spec.Process{}, Processes: []spec.Process{{Name: "p", Command: []string{"x"}}},
	}}}
	if d := spec.Diff(a, b); !d.Empty() {
		t.Errorf("Diff = %+v, want empty", d)
	}
	b.Groups[0].Processes[0].Env = map[string]string{"A": "1"}
	if d := spec.Diff(a, b); !reflect.DeepEqual(d.Groups["g"].Changed, []string{"p"}) {
		t.Errorf("Diff = %+v, want p changed", d)
	}
}

func TestDiffSupervisorBlockIsNoGroupChange(t *testing.T) {
	// Every setting of the supervisor block is named when it changes, and
	// none of them changes a group: a group's spec does not hold them.
	old := mustParse(t, diffBase)
	next := mustParse(t, `
supervisor {
  socket        = "/tmp/other.sock"
  socket_group  = "wheel"
  socket_group_roles = ["read", "exec"]
  log_level     = "debug"
  log_format    = "json"
  log_dir       = "/tmp/logs"
  minimum_grace = "100ms"
  notify_ready  = "started"
  metrics_listen = "0.0.0.0:9310"
  metrics_allow_remote = true
  stop_order = "parallel"
}
`+diffBase)
	got := spec.Diff(old, next)
	want := []string{"socket", "socket_group", "socket_group_roles", "log_level", "log_format", "log_dir", "minimum_grace", "notify_ready", "metrics_listen", "metrics_allow_remote", "stop_order"}
	if !reflect.DeepEqual(got.Supervisor, want) {
		t.Errorf("Supervisor = %v, want %v", got.Supervisor, want)
	}
	if len(got.ChangedGroups) != 0 || !reflect.DeepEqual(got.UnchangedGroups, []string{"web", "db"}) {
		t.Errorf("a supervisor-block change changed groups: %+v", got)
	}
	// Every field of spec.Supervisor is compared: one added to the struct
	// without a name here would go unreported.
	if n := reflect.TypeOf(spec.Supervisor{}).NumField(); n != len(want) {
		t.Errorf("spec.Supervisor has %d fields, SupervisorChanges compares %d", n, len(want))
	}
	// Unset and the default are the same minimum grace.
	d := spec.DefaultMinimumGrace
	if c := spec.SupervisorChanges(spec.Supervisor{}, spec.Supervisor{MinimumGrace: &d}); len(c) != 0 {
		t.Errorf("unset vs default minimum_grace: %v", c)
	}
}
