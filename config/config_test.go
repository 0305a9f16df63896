package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// noEnv is an empty environment, so tests do not depend on the caller's.
func noEnv(string) (string, bool) { return "", false }

func mustParse(t *testing.T, src string) *spec.Config {
	t.Helper()
	cfg, err := parse([]byte(src), "test.hcl", noEnv)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			var b bytes.Buffer
			_ = ce.WriteText(&b, false) // only for the failure message
			t.Fatalf("Parse failed:\n%s", b.String())
		}
		t.Fatalf("Parse failed: %v", err)
	}
	return cfg
}

func mustFail(t *testing.T, src string) *Error {
	t.Helper()
	_, err := parse([]byte(src), "test.hcl", noEnv)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Parse returned %v (%T), want *config.Error", err, err)
	}
	return ce
}

// at returns "line:col" of each diagnostic, for exact position checks.
func positions(e *Error) []string {
	var out []string
	for _, d := range e.Diagnostics {
		if d.Subject == nil {
			out = append(out, "?")
			continue
		}
		out = append(out, fmt.Sprintf("%d:%d", d.Subject.Start.Line, d.Subject.Start.Column))
	}
	return out
}

const minimal = `
group "web" {
  process "api" {
    command = ["/bin/true"]
  }
}
`

func TestParseMinimalFillsDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, minimal)
	// X2: an unset top-level backoff is kubelet's.
	if cfg.Backoff != spec.DefaultBackoff() {
		t.Errorf("Backoff = %+v, want %+v", cfg.Backoff, spec.DefaultBackoff())
	}
	want := []spec.Group{{Name: "web", Processes: []spec.Process{{Name: "api", Command: []string{"/bin/true"}}}}}
	if !reflect.DeepEqual(cfg.Groups, want) {
		t.Errorf("Groups = %+v, want %+v", cfg.Groups, want)
	}
}

func TestParseFullSchema(t *testing.T) {
	t.Parallel()
	src := `
supervisor {
  socket        = "/run/p.sock"
  socket_group  = "wheel"
  log_level     = "debug"
  log_format    = "json"
  log_dir       = "/var/log/podsup"
  minimum_grace = "250ms"
  notify_ready  = "started"
}
backoff {
  initial = "1s"
}
group "web" {
  restart_policy           = "on-failure"
  termination_grace_period = "0s"
  backoff {
    max = "30s"
  }
  sandbox {
    namespaces = ["pid", "mount", "uts"]
    hostname   = "web"
    rootfs     = "/srv/root"
    read_only_root_filesystem = true
    private_tmp               = true
    proc_mount                = "Unmasked"
    mount {
      type = "proc"
      target = "/proc"
    }
    mount {
      type     = "bind"
      source   = "/data"
      target   = "/data"
      readonly = true
      options  = "nosuid"
    }
    resources {
      memory     = "256MiB"
      cpu        = 0.5
      cpu_weight = 100
      pids       = 64
    }
  }
  init "migrate" {
    command = ["/bin/migrate", "--up"]
  }
  process "api" {
    command        = ["/bin/api", "--port", "8080"]
    env            = { LOG_LEVEL = "info", N = 3 }
    working_dir    = "/srv"
    user           = "www-data"
    group          = "www-data"
    stop_signal    = "SIGQUIT"
    restart_policy = "never"
    critical       = true
    readiness      = "notify"
    watchdog       = "30s"
    sockets        = ["http"]
    startup_probe {
      http_get {
        scheme  = "https"
        host    = "::1"
        port    = 8443
        path    = "/healthz"
        headers = { "X-A" = "b" }
      }
      period            = "100ms"
      failure_threshold = 30
    }
    liveness_probe {
      exec {
        command = ["/bin/check"]
      }
      initial_delay            = "1.5s"
      timeout                  = "500ms"
      termination_grace_period = "5s"
    }
    readiness_probe {
      tcp_socket {
        host = "127.0.0.1"
        port = 8080
      }
      success_threshold = 2
    }
    pre_start {
      exec { command = ["/bin/prep"] }
      timeout = "10s"
    }
    post_start {
      http_get { port = 8080 }
    }
    pre_stop {
      sleep { duration = "0s" } # not above the grace (D6)
    }
    post_stop {
      exec { command = ["/bin/deregister"] }
    }
    log {
      mode      = "passthrough"
      max_size  = "10MiB"
      max_files = 5
      journal   = true
      separate_streams = true
    }
  }
}
`
	cfg := mustParse(t, src)
	want := &spec.Config{
		Supervisor: spec.Supervisor{
			Socket: "/run/p.sock", SocketGroup: "wheel", LogLevel: "debug", LogFormat: "json",
			LogDir: "/var/log/podsup", MinimumGrace: spec.Durp(250 * time.Millisecond), NotifyReady: "started",
		},
		// X2: unset fields keep kubelet's defaults.
		Backoff: spec.Backoff{Initial: time.Second, Max: spec.DefaultBackoffMax, Reset: spec.DefaultBackoffReset},
		Groups: []spec.Group{{
			Name:                   "web",
			RestartPolicy:          spec.RestartOnFailure,
			TerminationGracePeriod: spec.Durp(0),
			// The group's backoff merges over the top-level one.
			Backoff: &spec.Backoff{Initial: time.Second, Max: 30 * time.Second, Reset: spec.DefaultBackoffReset},
			Sandbox: &spec.Sandbox{
				Namespaces:             []string{"pid", "mount", "uts"},
				Hostname:               "web",
				Rootfs:                 "/srv/root",
				ReadOnlyRootFilesystem: true,
				PrivateTmp:             true,
				ProcMount:              spec.ProcMountUnmasked,
				Mounts: []spec.Mount{
					{Type: "proc", Target: "/proc"},
					{Type: "bind", Source: "/data", Target: "/data", ReadOnly: true, Options: "nosuid"},
				},
				Resources: spec.Resources{Memory: 256 << 20, CPU: 0.5, CPUWeight: 100, Pids: 64},
			},
			Init: []spec.Process{{Name: "migrate", Command: []string{"/bin/migrate", "--up"}}},
			Processes: []spec.Process{{
				Name:          "api",
				Command:       []string{"/bin/api", "--port", "8080"},
				Env:           map[string]string{"LOG_LEVEL": "info", "N": "3"},
				WorkingDir:    "/srv",
				User:          "www-data",
				Group:         "www-data",
				StopSignal:    syscall.SIGQUIT,
				RestartPolicy: spec.RestartNever,
				Critical:      true,
				Readiness:     "notify",
				Watchdog:      30 * time.Second,
				Sockets:       []string{"http"},
				StartupProbe: &spec.Probe{
					Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{
						Scheme: "https", Host: "::1", Port: 8443, Path: "/healthz", Headers: map[string]string{"X-A": "b"},
					}},
					Period:           100 * time.Millisecond,
					FailureThreshold: 30,
				},
				LivenessProbe: &spec.Probe{
					Handler:                spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/check"}}},
					InitialDelay:           1500 * time.Millisecond,
					Timeout:                500 * time.Millisecond,
					TerminationGracePeriod: spec.Durp(5 * time.Second),
				},
				ReadinessProbe: &spec.Probe{
					Handler:          spec.Handler{TCPSocket: &spec.TCPSocketAction{Host: "127.0.0.1", Port: 8080}},
					SuccessThreshold: 2,
				},
				PreStart:  &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/prep"}}}, Timeout: 10 * time.Second},
				PostStart: &spec.Hook{Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: 8080}}},
				PreStop:   &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: 0}}},
				PostStop:  &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/deregister"}}}},
				Log:       spec.Log{Mode: "passthrough", MaxSize: 10 << 20, MaxFiles: 5, Journal: true, SeparateStreams: true},
			}},
		}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("decoded:\n%#v\nwant:\n%#v", cfg, want)
	}
}

// TestBadConfigs is the table of wrong files: each must fail with a message
// that says what is wrong, at the exact line:col of the culprit.
func TestBadConfigs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
		pos  string // line:col of the diagnostic
		want string // substring of "summary: detail"
	}{
		{"unknown attribute suggests the right one", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    liveness_probe {
      exec { command = ["x"] }
      perod = "1s"
    }
  }
}`, "7:7", `An argument named "perod" is not expected here. Did you mean "period"?`},
		{"unknown attribute lists what is allowed", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    colour = "red"
  }
}`, "5:5", `A process block takes arguments command, env, env_file, working_dir`},
		{"unknown block lists what is allowed", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    pre_stop {
      tcp_socket { port = 1 }
    }
  }
}`, "6:7", `Blocks of type "tcp_socket" are not expected here. A hook block takes arguments timeout; blocks exec, http_get, sleep.`},
		{"unknown top-level block", `
proces "api" {}
`, "2:1", `The top level of a file takes blocks supervisor, backoff, variable, group.`},
		{"bad duration", `
group "web" {
  termination_grace_period = "ten seconds"
  process "api" { command = ["/bin/true"] }
}`, "3:30", `"ten seconds" is not a duration: write a Go duration such as "10s"`},
		{"bare number duration", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    readiness_probe {
      tcp_socket { port = 80 }
      period = 10
    }
  }
}`, "7:16", `period must be a duration string with a unit, e.g. period = "10s"`},
		{"number in a string duration", `
backoff {
  initial = "10"
}
` + minimal, "3:13", `"10" has no unit: write a duration such as "10s"`},
		{"negative duration", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    liveness_probe {
      exec { command = ["x"] }
      period = "-1s"
    }
  }
}`, "7:16", "period must not be negative"},
		{"D4 success_threshold on liveness", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    liveness_probe {
      exec { command = ["x"] }
      success_threshold = 2
    }
  }
}`, "7:27", "success_threshold must be 1 for a liveness probe"},
		{"duplicate group at the second one", `
group "web" {
  process "api" { command = ["/bin/true"] }
}
group "web" {
  process "api" { command = ["/bin/true"] }
}`, "5:1", `duplicate group "web": group names must be unique. The first is at test.hcl:2:1.`},
		{"duplicate process at the second one", `
group "web" {
  process "api" { command = ["/bin/true"] }
  process "api" { command = ["/bin/true"] }
}`, "4:3", `duplicate name "api"`},
		{"empty command", `
group "web" {
  process "api" {
    command = []
  }
}`, "4:15", "command is empty: give the program and its arguments"},
		{"missing command points at the process", `
group "web" {
  process "api" {
    env = { A = "b" }
  }
}`, "3:3", "command is empty"},
		{"command is a string", `
group "web" {
  process "api" {
    command = "/bin/true --x"
  }
}`, "4:15", `command must be a list of strings, e.g. command = ["/bin/sh", "-c", "exec my-server"]; got string`},
		{"unknown signal", `
group "web" {
  process "api" {
    command     = ["/bin/true"]
    stop_signal = "SIGFOO"
  }
}`, "5:19", `unknown signal "SIGFOO": use a name such as SIGTERM`},
		{"probe with two handlers", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    readiness_probe {
      exec { command = ["x"] }
      tcp_socket { port = 80 }
    }
  }
}`, "5:5", "a probe needs exactly one of exec, http_get, tcp_socket, grpc; it has 2"},
		{"probe with no handler", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    startup_probe {
      period = "1s"
    }
  }
}`, "5:5", "it has 0"},
		{"hook with no handler", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    post_stop {}
  }
}`, "5:5", "a hook needs exactly one of exec, http_get, sleep; it has 0"},
		{"bad restart_policy", `
group "web" {
  restart_policy = "sometimes"
  process "api" { command = ["/bin/true"] }
}`, "3:20", `restart_policy "sometimes" is not one of "always", "on-failure", "never"`},
		{"O1 an init's restart_policy other than always", `
group "web" {
  init "migrate" {
    command        = ["/bin/true"]
    restart_policy = "on-failure"
  }
  process "api" { command = ["/bin/true"] }
}`, "5:22", `an init takes only restart_policy = "always", which makes it a sidecar`},
		{"O5 a probe on a plain init", `
group "web" {
  init "migrate" {
    command = ["/bin/true"]
    startup_probe {
      exec { command = ["x"] }
    }
  }
  process "api" { command = ["/bin/true"] }
}`, "5:5", `init processes run to completion and cannot have a startup_probe (a sidecar, restart_policy = "always", can)`},
		{"two probe blocks of one kind", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    liveness_probe {
      exec { command = ["x"] }
    }
    liveness_probe {
      exec { command = ["x"] }
    }
  }
}`, "8:5", "A process block takes one liveness_probe block; another was defined at test.hcl:5:5."},
		{"missing required port", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    readiness_probe {
      tcp_socket {}
    }
  }
}`, "6:18", `The argument "port" is required`},
		{"port not whole", `
group "web" {
  process "api" {
    command = ["/bin/true"]
    readiness_probe {
      tcp_socket { port = 80.5 }
    }
  }
}`, "6:27", "port must be a whole number; got 80.5"},
		{"bad size", `
group "web" {
  sandbox {
    resources { memory = "256 potatoes" }
  }
  process "api" { command = ["/bin/true"] }
}`, "4:26", `has an unknown unit "potatoes"`},
		{"bad bool", `
group "web" {
  process "api" {
    command  = ["/bin/true"]
    critical = "very"
  }
}`, "5:16", "critical must be true or false"},
		{"group without processes", `
group "web" {
}`, "2:1", `group "web" has no process`},
		{"mount error points at its field", `
group "web" {
  sandbox {
    namespaces = ["mount"]
    mount {
      type   = "proc"
      target = "/proc"
    }
    mount {
      type   = "nfs"
      target = "/mnt"
    }
  }
  process "api" { command = ["/bin/true"] }
}`, "6:16", `a proc mount needs the "pid" namespace`},
		{"second mount's error points at the second mount", `
group "web" {
  sandbox {
    namespaces = ["mount", "pid"]
    mount {
      type   = "proc"
      target = "/proc"
    }
    mount {
      type   = "nfs"
      target = "/mnt"
    }
  }
  process "api" { command = ["/bin/true"] }
}`, "10:16", `mount type "nfs" is not one of "proc", "tmpfs", "bind"`},
		{"missing group label", `
group {
  process "api" { command = ["/bin/true"] }
}`, "2:7", "Missing name for group"},
		{"syntax error", `
group "web" {
  process "api" {
`, "3:17", "Unclosed configuration block"},
		{"unknown function", `
group "web" {
  process "api" { command = [envv("X")] }
}`, "3:30", `There is no function named "envv". Did you mean "env"?`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustFail(t, tc.src)
			ps := positions(e)
			lines := strings.Split(e.Error(), "\n")
			for i, l := range lines {
				if ps[i] == tc.pos && strings.Contains(l, tc.want) {
					return
				}
			}
			t.Fatalf("want an error at %s containing %q, got:\n%s", tc.pos, tc.want, e.Error())
		})
	}
}

func TestManyErrorsReportedTogetherInFileOrder(t *testing.T) {
	t.Parallel()
	src := `
supervisor {
  log_format = "xml"
}
group "web" {
  process "api" {
    command     = ["/bin/true"]
    stop_signal = "SIGNOPE"
    liveness_probe {
      exec { command = ["x"] }
      success_threshold = 3
      perod = "1s"
    }
  }
  process "api" {
    command = []
  }
}
group "web" {
  process "w" { command = ["/bin/true"] }
}
`
	e := mustFail(t, src)
	got := positions(e)
	// One per problem, sorted by position: log_format, stop_signal, perod,
	// success_threshold, the second api (duplicate) and its empty command,
	// the second group.
	want := []string{"3:16", "8:19", "11:27", "12:7", "15:3", "16:15", "19:1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("positions = %v, want %v\n%s", got, want, e.Error())
	}
	// The empty command of the *second* api is reported at its own line,
	// not at the first api's command.
	if !strings.Contains(strings.Split(e.Error(), "\n")[5], "command is empty") {
		t.Errorf("line 6 of the error is %q, want the empty command", strings.Split(e.Error(), "\n")[5])
	}
}

func TestErrorsInsideDuplicateGroupsPointAtTheirOwnBlock(t *testing.T) {
	t.Parallel()
	src := `
group "web" {
  process "a" { command = ["/bin/true"] }
}
group "web" {
  process "a" {
    command = ["/bin/true"]
    stop_signal = 99
  }
}
`
	e := mustFail(t, src)
	got := positions(e)
	want := []string{"5:1", "8:19"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("positions = %v, want %v\n%s", got, want, e.Error())
	}
}

// A value the decoder rejected is not reported a second time, in vaguer
// words, by spec's validation (no "port must be 1-65535, got 0" after
// "port is required", no "command is empty" after "must be a list").
func TestDecodeErrorsAreNotRepeatedByValidation(t *testing.T) {
	t.Parallel()
	e := mustFail(t, `
group "web" {
  process "api" {
    command = "/bin/true"
    readiness_probe {
      tcp_socket {}
    }
    pre_stop {
      sleep {}
    }
  }
  process {
  }
  process "a" "b" { command = ["x"] }
}`)
	want := []string{"4:15", "6:18", "9:13", "12:11", "14:15"}
	if got := positions(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("positions = %v, want %v\n%s", got, want, e)
	}
	for i, sub := range []string{"must be a list of strings", `"port" is required`, `"duration" is required`, "Missing name for process", "Extraneous label for process"} {
		if l := strings.Split(e.Error(), "\n")[i]; !strings.Contains(l, sub) {
			t.Errorf("error %d = %q, want …%s…", i, l, sub)
		}
	}
}

func TestWriteTextShowsPositionSnippetAndHint(t *testing.T) {
	t.Parallel()
	e := mustFail(t, `
group "web" {
  process "api" {
    command = ["/bin/true"]
    readiness_probe {
      tcp_socket { port = 80 }
      timeout = 2
    }
  }
}`)
	var b bytes.Buffer
	if err := e.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"test.hcl:7:17:",
		"Error: Invalid timeout",
		`   7:       timeout = 2`,
		`timeout must be a duration string with a unit, e.g. timeout = "2s"`,
		"1 problem found.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("color escapes with color off:\n%q", out)
	}
	// Print to a non-terminal writes no color either.
	b.Reset()
	if err := e.Print(&b); err != nil || strings.Contains(b.String(), "\x1b[") {
		t.Errorf("Print to a buffer: err %v, output %q", err, b.String())
	}
}

func TestEnvFunction(t *testing.T) {
	t.Parallel()
	src := `
supervisor {
  socket = env("PODSUP_TEST_SOCK", "/run/default.sock")
}
group "web" {
  process "api" {
    command = ["/bin/echo", env("PODSUP_TEST_GREETING")]
    readiness_probe {
      tcp_socket { port = env("PODSUP_TEST_PORT", "8080") }
    }
  }
}`
	env := map[string]string{"PODSUP_TEST_GREETING": "hello"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := parse([]byte(src), "test.hcl", lookup)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Supervisor.Socket != "/run/default.sock" {
		t.Errorf("default not used: socket = %q", cfg.Supervisor.Socket)
	}
	if got := cfg.Groups[0].Processes[0].Command; !reflect.DeepEqual(got, []string{"/bin/echo", "hello"}) {
		t.Errorf("command = %q", got)
	}
	// A string from env() converts to a number where one is expected.
	if got := cfg.Groups[0].Processes[0].ReadinessProbe.TCPSocket.Port; got != 8080 {
		t.Errorf("port = %d, want 8080", got)
	}

	env["PODSUP_TEST_SOCK"] = "/run/set.sock"
	cfg, err = parse([]byte(src), "test.hcl", lookup)
	if err != nil || cfg.Supervisor.Socket != "/run/set.sock" {
		t.Errorf("set variable not used: %v, %+v", err, cfg)
	}

	// Unset and no default: an error at the argument that names the variable.
	delete(env, "PODSUP_TEST_GREETING")
	_, err = parse([]byte(src), "test.hcl", lookup)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if got := positions(ce); !reflect.DeepEqual(got, []string{"7:34"}) {
		t.Errorf("positions = %v, want [7:34]\n%s", got, ce)
	}
	if !strings.Contains(ce.Error(), `environment variable "PODSUP_TEST_GREETING" is not set and no default was given`) {
		t.Errorf("message does not name the variable: %s", ce)
	}
	// The failed value does not turn into a second "command is empty" error.
	if len(ce.Diagnostics) != 1 {
		t.Errorf("want 1 diagnostic, got:\n%s", ce)
	}

	_, err = parse([]byte(`supervisor { socket = env("A", "b", "c") }`), "test.hcl", lookup)
	if err == nil || !strings.Contains(err.Error(), "at most one default") {
		t.Errorf("env with two defaults: %v", err)
	}
}

func TestParseUsesTheRealEnvironment(t *testing.T) {
	// Not parallel: it sets an environment variable (process-wide).
	t.Setenv("PODSUP_TEST_CMD", "/bin/sleep")
	cfg, err := Parse([]byte(`group "g" {
  process "p" { command = [env("PODSUP_TEST_CMD"), "1"] }
}`), "env.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Groups[0].Processes[0].Command[0] != "/bin/sleep" {
		t.Errorf("command = %q", cfg.Groups[0].Processes[0].Command)
	}
}

func TestSubSecondDurations(t *testing.T) {
	t.Parallel()
	// D7: durations finer than a second are kept as written.
	cfg := mustParse(t, `
supervisor { minimum_grace = "0s" }
backoff {
  initial = "100ms"
  max     = "1.5s"
  reset   = "750us"
}
group "web" {
  termination_grace_period = "250ms"
  process "api" {
    command = ["/bin/true"]
    readiness_probe {
      tcp_socket { port = 80 }
      initial_delay = "10ms"
      period        = "200ms"
      timeout       = "50ms"
    }
    pre_stop {
      sleep { duration = "1ms" }
      timeout = "1m30s"
    }
  }
}`)
	if got := cfg.Backoff; got != (spec.Backoff{Initial: 100 * time.Millisecond, Max: 1500 * time.Millisecond, Reset: 750 * time.Microsecond}) {
		t.Errorf("backoff = %+v", got)
	}
	if *cfg.Supervisor.MinimumGrace != 0 {
		t.Errorf("minimum_grace = %v", *cfg.Supervisor.MinimumGrace)
	}
	g := cfg.Groups[0]
	if *g.TerminationGracePeriod != 250*time.Millisecond {
		t.Errorf("grace = %v", *g.TerminationGracePeriod)
	}
	rp := g.Processes[0].ReadinessProbe
	if rp.InitialDelay != 10*time.Millisecond || rp.Period != 200*time.Millisecond || rp.Timeout != 50*time.Millisecond {
		t.Errorf("probe = %+v", rp)
	}
	ps := g.Processes[0].PreStop
	if ps.Sleep.Duration != time.Millisecond || ps.Timeout != 90*time.Second {
		t.Errorf("pre_stop = %+v %+v", ps, ps.Sleep)
	}
}

func TestSizes(t *testing.T) {
	t.Parallel()
	good := map[string]int64{
		"0": 0, "4096": 4096, "1B": 1, "1K": 1000, "1KB": 1000, "1Ki": 1024, "1KiB": 1024,
		"256MiB": 256 << 20, "256mib": 256 << 20, "1G": 1e9, "1GB": 1e9, "1Gi": 1 << 30,
		"1.5GiB": 3 << 29, "2T": 2e12, "1TiB": 1 << 40, " 10 MiB ": 10 << 20,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "ten", "1XB", "0.5B", "1e400G"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
	// In a file: a plain number is bytes, a string may have a unit.
	cfg := mustParse(t, `
group "web" {
  sandbox {
    resources {
      memory = 1048576
      pids   = 10
    }
  }
  process "api" {
    command = ["/bin/true"]
    log { max_size = "1G" }
  }
}`)
	if m := cfg.Groups[0].Sandbox.Resources.Memory; m != 1<<20 {
		t.Errorf("memory = %d", m)
	}
	if s := cfg.Groups[0].Processes[0].Log.MaxSize; s != 1e9 {
		t.Errorf("max_size = %d", s)
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"10s": 10 * time.Second, "100ms": 100 * time.Millisecond, "1m30s": 90 * time.Second, "0": 0, "-2s": -2 * time.Second} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"10": `"10" has no unit: write a duration such as "10s"`, "soon": `"soon" is not a duration`, "": `is not a duration`} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDuration(%q) error = %v, want …%s…", in, err, want)
		}
	}
}

func TestSignalNames(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
group "web" {
  process "a" {
    command     = ["/bin/true"]
    stop_signal = "INT"
  }
  process "b" {
    command     = ["/bin/true"]
    stop_signal = 10
  }
}`)
	if s := cfg.Groups[0].Processes[0].StopSignal; s != syscall.SIGINT {
		t.Errorf("a: %v", s)
	}
	if s := cfg.Groups[0].Processes[1].StopSignal; s != syscall.SIGUSR1 {
		t.Errorf("b: %v", s)
	}
}

func TestGroupBackoffUsesTopLevelWhenUnset(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
backoff { max = "1m" }
group "a" {
  process "p" { command = ["/bin/true"] }
}
group "b" {
  backoff { reset = "1h" }
  process "p" { command = ["/bin/true"] }
}`)
	if cfg.Groups[0].Backoff != nil {
		t.Errorf("group a has its own backoff %+v; want nil (inherit)", cfg.Groups[0].Backoff)
	}
	if got := cfg.Groups[0].EffectiveBackoff(cfg.Backoff); got.Max != time.Minute || got.Initial != spec.DefaultBackoffInitial {
		t.Errorf("group a effective backoff = %+v", got)
	}
	want := spec.Backoff{Initial: spec.DefaultBackoffInitial, Max: time.Minute, Reset: time.Hour}
	if got := *cfg.Groups[1].Backoff; got != want {
		t.Errorf("group b backoff = %+v, want %+v", got, want)
	}
}

func TestLoadAndFind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "podsup.hcl")
	if err := os.WriteFile(path, []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil || len(cfg.Groups) != 1 {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.hcl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
	// Errors from Load name the file as given.
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("group \"g\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":1:1: ") {
		t.Errorf("Load(bad) = %v, want an error at %s:1:1", err, bad)
	}

	if got, err := Find(path); err != nil || got != path {
		t.Errorf("Find(explicit) = %q, %v", got, err)
	}
	if _, err := Find(filepath.Join(dir, "nope.hcl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Find(missing explicit) = %v, want ErrNotExist", err)
	}

	saved := DefaultPaths
	defer func() { DefaultPaths = saved }()
	DefaultPaths = []string{filepath.Join(dir, "first.hcl"), path}
	if got, err := Find(""); err != nil || got != path {
		t.Errorf("Find(\"\") = %q, %v; want %q", got, err, path)
	}
	DefaultPaths = []string{filepath.Join(dir, "first.hcl")}
	if _, err := Find(""); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "first.hcl") {
		t.Errorf("Find(\"\") with nothing there = %v, want ErrNotFound naming the places", err)
	}
}

// cpu_request sets cpu_weight as kubelet does; a cpu_weight that is not
// its weight is an error naming both.
func TestCPURequestSetsTheWeight(t *testing.T) {
	cfg, err := Parse([]byte("group \"g\" {\n  sandbox {\n    resources {\n      cpu_request = 0.2\n    }\n  }\n  process \"p\" { command = [\"x\"] }\n}\n"), "r.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Groups[0].Sandbox.Resources; r.CPURequest != 0.2 || r.CPUWeight != spec.CPUWeightForRequest(200) {
		t.Errorf("resources = %+v", r)
	}
	_, err = Parse([]byte("group \"g\" {\n  sandbox {\n    resources {\n      cpu_request = 0.2\n      cpu_weight  = 100\n    }\n  }\n  process \"p\" { command = [\"x\"] }\n}\n"), "r.hcl")
	if err == nil || !strings.Contains(err.Error(), "cpu_weight 100 is not the weight of cpu_request 0.2") {
		t.Errorf("err = %v", err)
	}
}

// backoff_limit is a run-to-completion group's (R7): a number of 0 or
// more, under on-failure or never.
func TestBackoffLimit(t *testing.T) {
	group := func(attrs string) []byte {
		return []byte("group \"g\" {\n" + attrs + "\n  process \"p\" { command = [\"x\"] }\n}\n")
	}
	cfg, err := Parse(group("  restart_policy = \"on-failure\"\n  backoff_limit  = 0"), "b.hcl")
	if err != nil || cfg.Groups[0].BackoffLimit == nil || *cfg.Groups[0].BackoffLimit != 0 {
		t.Fatalf("backoff_limit = 0: %v %+v", err, cfg)
	}
	for attrs, want := range map[string]string{
		"  restart_policy = \"never\"\n  backoff_limit  = -1": "b.hcl:3:20: Invalid backoff_limit: backoff_limit must not be negative, got -1",
		"  backoff_limit = 3": `backoff_limit is for a run-to-completion group, restart_policy "on-failure" or "never" (a Job's), not "always"`,
	} {
		if _, err := Parse(group(attrs), "b.hcl"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", attrs, err, want)
		}
	}
}
