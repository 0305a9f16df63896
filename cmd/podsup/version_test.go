package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

func TestVersionLineAndJSON(t *testing.T) {
	b := buildInfo{Version: "v1.2.3", Revision: "0123456789abcdef0123", Time: "2026-11-25T03:00:00Z",
		GoVersion: "go1.26.8", OS: "linux", Arch: "arm", ARM: "7"}
	if got, want := b.String(), "podsup v1.2.3 (0123456789ab, 2026-11-25T03:00:00Z) go1.26.8 linux/arm/v7"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	b.Modified = true
	if got := b.String(); !strings.Contains(got, "(0123456789ab+modified, ") {
		t.Errorf("a modified checkout's build is not marked: %q", got)
	}
	var out bytes.Buffer
	if err := printVersion(&out, b, true); err != nil {
		t.Fatal(err)
	}
	var back buildInfo
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back != b {
		t.Errorf("-o json gave %s (%v), want %+v", out.String(), err, b)
	}
}

// TestVersionCommand runs `podsup version` and `--version` as a user
// would: both say the same, and -o json is one object with the Go version.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	code, line := runPodsup(t, "version")
	if code != 0 || !strings.HasPrefix(line, "podsup ") || !strings.Contains(line, " linux/") {
		t.Fatalf("podsup version: %d %q", code, line)
	}
	if code, flag := runPodsup(t, "--version"); code != 0 || flag != line {
		t.Errorf("podsup --version: %d %q, want %q", code, flag, line)
	}
	code, js := runPodsup(t, "version", "-o", "json")
	var b buildInfo
	if err := json.Unmarshal([]byte(js), &b); code != 0 || err != nil || b.GoVersion == "" || b.OS != "linux" {
		t.Fatalf("podsup version -o json: %d %q (%v)", code, js, err)
	}
}

// TestReadyCommand: `podsup ready` exits 0 for what is ready and 1, naming
// it, for what is not, and 1 when no podsup answers.
func TestReadyCommand(t *testing.T) {
	t.Parallel()
	f := startUp(t, `
supervisor {
  socket = "%s"
}
group "up" {
  process "sleeper" {
    command = ["sleep", "1000"]
  }
}
group "down" {
  process "never" {
    command = ["sleep", "1000"]
    readiness_probe {
      exec {
        command = ["false"]
      }
      period = "100ms"
    }
  }
}
`)
	if !eventually(func() bool { c, _ := f.ctl(t, "ready", "up"); return c == 0 }) {
		_, out := f.ctl(t, "status")
		t.Fatalf("podsup ready up never exited 0:\n%s", out)
	}
	if code, out := f.ctl(t, "ready", "up/sleeper"); code != 0 || out != "" {
		t.Errorf("ready up/sleeper: %d %q, want 0 and silence", code, out)
	}
	code, out := f.ctl(t, "ready")
	if code != 1 || !strings.Contains(out, "down (never: running") {
		t.Errorf("ready (all groups, one not ready): %d %q, want 1 naming down", code, out)
	}
	if code, out := f.ctl(t, "ready", "down/never"); code != 1 || !strings.Contains(out, "down/never") {
		t.Errorf("ready down/never: %d %q", code, out)
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	f.up.wait(t)
	if code, _ := runPodsup(t, "--socket", filepath.Join(f.dir, "podsup.sock"), "ready"); code != 1 {
		t.Errorf("ready with no podsup answering: exit %d, want 1", code)
	}
	_ = os.Remove(filepath.Join(f.dir, "podsup.sock"))
}

// TestReleaseModifiedStamp: scripts/release passes -X main.modified=true
// for a checkout with changes (untracked files included), and the version
// line shows it after the shortened revision, where a "+modified" glued to
// the revision itself would be cut off.
func TestReleaseModifiedStamp(t *testing.T) {
	saved := modified
	t.Cleanup(func() { modified = saved })
	modified = "true"
	if b := readBuildInfo(); !b.Modified {
		t.Errorf("-X main.modified=true: %+v is not marked modified", b)
	}
	modified = "false"
	if b := readBuildInfo(); b.Modified && !vcsModified() {
		t.Errorf("-X main.modified=false: %+v is marked modified", b)
	}
}

// vcsModified is the test binary's own vcs.modified stamp, which
// readBuildInfo also honours.
func vcsModified() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.modified" {
			return s.Value == "true"
		}
	}
	return false
}
