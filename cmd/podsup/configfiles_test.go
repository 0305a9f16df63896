package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podsup/podsup/api"
)

// The secrets of these tests' env files: none may show in podsup's
// output, status, events or errors.
const (
	secretBefore = "s3cr3t-before-reload"
	secretAfter  = "s3cr3t-after-reload"
)

// TestUpConfDirEnvFilesAndVariables runs a conf.d directory of three files
// with two env files and a variable set by --var, then reloads: a changed
// env file restarts exactly the process that reads it, a new file in the
// directory adds its group, a removed one stops its group.
func TestUpConfDirEnvFilesAndVariables(t *testing.T) {
	t.Parallel() // its own directory and socket
	dir := t.TempDir()
	confd := filepath.Join(dir, "conf.d")
	socket := filepath.Join(dir, "podsup.sock")
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Each process writes what it got to a file: its own output is its
	// business, podsup's is what this test checks.
	report := func(name string) string {
		return fmt.Sprintf(`["sh", "-c", "printf '%%s %%s' \"$TOKEN\" \"$REGION\" > %s; exec sleep ${var.sleep}"]`, filepath.Join(dir, name+".got"))
	}
	write("conf.d/10-supervisor.hcl", fmt.Sprintf(`
supervisor {
  socket        = %q
  minimum_grace = "100ms"
}
variable "sleep" {}
`, socket))
	write("conf.d/20-app.hcl", `
group "app" {
  termination_grace_period = "2s"
  env_file = ["../app.env"]
  process "secret" {
    command  = `+report("secret")+`
    env_file = ["../secrets.env"]
  }
  process "plain" {
    command = `+report("plain")+`
  }
}
`)
	write("conf.d/30-other.hcl", `
group "other" {
  termination_grace_period = "2s"
  process "still" {
    command = ["sleep", "${var.sleep}"]
  }
}
`)
	write("conf.d/README", "not read: only *.hcl files are\n")
	write("app.env", "# shared\nexport REGION=eu\n")
	write("secrets.env", "TOKEN='"+secretBefore+"'\n")

	if code, out := runPodsup(t, "validate", "-f", confd, "--var", "sleep=1000"); code != 0 || !strings.Contains(out, "valid (2 groups, 3 processes)") {
		t.Fatalf("validate: %d\n%s", code, out)
	}
	if code, out := runPodsup(t, "validate", "-f", confd); code != 1 || !strings.Contains(out, `10-supervisor.hcl:6:1`) || !strings.Contains(out, `"sleep" has no default`) {
		t.Fatalf("validate without --var: %d, want 1 naming the variable and where it is declared:\n%s", code, out)
	}

	f := &upFixture{dir: dir, socket: socket}
	f.up = start(t, podsupCmd(t, "up", "-f", confd, "--var", "sleep=1000"))
	f.c = newClientWhenUp(t, f)
	secret := f.waitRunning(t, "app", "secret")
	plain := f.waitRunning(t, "app", "plain")
	still := f.waitRunning(t, "other", "still")
	waitFile(t, filepath.Join(dir, "secret.got"), secretBefore+" eu")
	waitFile(t, filepath.Join(dir, "plain.got"), " eu")

	write("secrets.env", "TOKEN=\""+secretAfter+"\"\n")
	if code, out := f.ctl(t, "reload"); code != 0 || !strings.Contains(out, "in app: restarted secret") || strings.Contains(out, "plain") {
		t.Fatalf("reload after changing secrets.env: %d %s", code, out)
	}
	if !eventually(func() bool { p := f.pid(t, "app", "secret"); return p > 0 && p != secret }) {
		t.Fatal("the process reading the changed env file was not restarted")
	}
	waitFile(t, filepath.Join(dir, "secret.got"), secretAfter+" eu")
	if p := f.pid(t, "app", "plain"); p != plain {
		t.Errorf("app/plain does not read secrets.env but was restarted: pid %d → %d", plain, p)
	}
	if p := f.pid(t, "other", "still"); p != still {
		t.Errorf("other/still was restarted: pid %d → %d", still, p)
	}

	// The directory is read again: a new file adds, a removed one stops.
	write("conf.d/40-new.hcl", "group \"new\" {\n  process \"n\" {\n    command = [\"sleep\", \"${var.sleep}\"]\n  }\n}\n")
	if err := os.Remove(filepath.Join(confd, "30-other.hcl")); err != nil {
		t.Fatal(err)
	}
	_ = f.up.p.Signal(syscall.SIGHUP)
	f.waitRunning(t, "new", "n")
	if !eventually(func() bool { return f.pid(t, "other", "still") == 0 }) {
		t.Error("the group of the removed file still runs")
	}

	// A broken env file: reload is refused with the file's line, the
	// running processes stay, and the value is not shown.
	write("secrets.env", "TOKEN="+secretAfter+"\nnot an assignment "+secretAfter+"\n")
	code, out := f.ctl(t, "reload")
	if code == 0 || !strings.Contains(out, "secrets.env:2: expected KEY=VALUE") || !strings.Contains(out, "20-app.hcl:7:") {
		t.Errorf("reload of a broken env file: %d, want an error at secrets.env:2 and 20-app.hcl:7:\n%s", code, out)
	}
	if strings.Contains(out, secretAfter) {
		t.Errorf("the reload error shows an env file's value:\n%s", out)
	}

	for _, args := range [][]string{{"status", "-o", "json"}, {"status"}, {"events", "-o", "json"}, {"events"},
		{"describe", "app"}, {"describe", "app/secret", "-o", "json"}} {
		code, out := f.ctl(t, args...)
		if code != 0 {
			t.Errorf("podsup %s: %d %s", strings.Join(args, " "), code, out)
		}
		if strings.Contains(out, secretBefore) || strings.Contains(out, secretAfter) {
			t.Errorf("podsup %s shows an env file's value:\n%s", strings.Join(args, " "), out)
		}
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after SIGTERM: %s", e)
	}
	if log := f.up.rest(t); strings.Contains(log, secretBefore) || strings.Contains(log, secretAfter) {
		t.Errorf("podsup's log shows an env file's value:\n%s", log)
	}
}

// TestValidateSeveralFilesNamesBothPlacesOfADuplicate: validate takes -f
// more than once; a group in two files is an error at both.
func TestValidateSeveralFilesNamesBothPlacesOfADuplicate(t *testing.T) {
	t.Parallel() // its own directory and socket
	dir := t.TempDir()
	a, b := filepath.Join(dir, "base.hcl"), filepath.Join(dir, "site.hcl")
	group := "group \"web\" {\n  process \"p\" {\n    command = [\"sleep\", \"1\"]\n  }\n}\n"
	os.WriteFile(a, []byte(group), 0o644)
	os.WriteFile(b, []byte("\n"+group), 0o644)
	code, out := runPodsup(t, "validate", "-f", a, "-f", b)
	if code != 1 || !strings.Contains(out, "site.hcl:2:1") || !strings.Contains(out, "base.hcl:1:1") {
		t.Fatalf("validate -f base.hcl -f site.hcl with a group in both: %d\n%s", code, out)
	}
	os.WriteFile(b, []byte(strings.ReplaceAll(group, "web", "site")), 0o644)
	if code, out := runPodsup(t, "validate", "-f", a, "-f", b); code != 0 || !strings.Contains(out, "valid (2 groups, 2 processes)") {
		t.Fatalf("validate -f base.hcl -f site.hcl: %d\n%s", code, out)
	}
}

func newClientWhenUp(t *testing.T, f *upFixture) *api.Client {
	t.Helper()
	c := api.NewClient(f.socket)
	if !eventually(func() bool { _, err := c.Version(context.Background()); return err == nil }) {
		t.Fatalf("podsup up never answered on %s: %s", f.socket, f.up.rest(t))
	}
	return c
}

// waitFile waits until path holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	var got []byte
	if !eventually(func() bool { got, _ = os.ReadFile(path); return string(got) == want }) {
		t.Fatalf("%s holds %q, want %q", path, got, want)
	}
}
