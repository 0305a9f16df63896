package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/testusers"
)

// logfileAttack is a process, run as a real unprivileged user, that does
// what issue #25 item 3 did to a root podsup: it makes its group directory
// in log_dir if it can, replaces its log file with a link to a root-owned
// file, prints a shell command (which root would have appended there) and
// says it is done. %[1]s is the socket, %[2]s log_dir, %[3]s the user,
// %[4]s the root-owned file.
const logfileAttack = `
supervisor {
  socket        = "%[1]s"
  minimum_grace = "100ms"
  log_dir       = "%[2]s"
}
group "g" {
  termination_grace_period = "1s"
  process "p" {
    user    = "%[3]s"
    command = ["sh", "-c", "mkdir -p %[2]s/g; rm -f %[2]s/g/p.log; ln -s %[4]s %[2]s/g/p.log; echo 'id > /tmp/pwned'; sleep 0.2; echo again; sleep 0.2; echo and again; touch %[2]s/g/done; exec sleep 1000"]
  }
}
`

// A process running as another user cannot make a root podsup write to a
// file by linking its log file there: with a log_dir the user can write,
// podsup up refuses to start and says how to fix it; with a group
// directory the user owns, podsup runs the process, keeps its lines for
// `podsup logs`, writes no file there and says why once. The root-owned
// file keeps its content, size and mtime, and `podsup logs` serves none
// of it.
func TestSecurityLogFileSymlinkChangesNothing(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()

	// The root-owned file a process points its log at, in a directory
	// only root can enter.
	newVictim := func(t *testing.T) (string, func(t *testing.T)) {
		path := filepath.Join(t.TempDir(), "rc")
		want := []byte("root's own rc file\n")
		mtime := time.Unix(1_000_000_000, 0)
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return path, func(t *testing.T) {
			t.Helper()
			b, err := os.ReadFile(path)
			st, serr := os.Stat(path)
			if err != nil || serr != nil {
				t.Fatal(err, serr)
			}
			if !bytes.Equal(b, want) || st.Size() != int64(len(want)) || !st.ModTime().Equal(mtime) {
				t.Fatalf("root wrote to the file the process linked its log to: %s is now %q (mtime %v)", path, b, st.ModTime())
			}
		}
	}
	changed := func(path string) bool {
		b, _ := os.ReadFile(path)
		return !strings.HasPrefix(string(b), "root's own rc file\n") || len(b) != len("root's own rc file\n")
	}

	t.Run("log_dir writable by the process's user", func(t *testing.T) {
		t.Parallel()
		u := testusers.NewUser(t)
		victim, check := newVictim(t)
		logDir := filepath.Join(testusers.SharedDir(t), "logs")
		if err := os.Mkdir(logDir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(logDir, 0o777); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cfg := filepath.Join(dir, "podsup.hcl")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(logfileAttack, filepath.Join(dir, "s.sock"), logDir, u.Name, victim)), 0o644); err != nil {
			t.Fatal(err)
		}
		up := start(t, podsupCmd(t, "up", "-f", cfg))
		exited := func() bool {
			select {
			case <-up.p.Done():
				return true
			default:
				return false
			}
		}
		if !eventually(func() bool { return exited() || changed(victim) }) {
			t.Fatalf("podsup up neither refused the world-writable log_dir nor ran:\n%s", up.sofar(t))
		}
		check(t)
		out := up.rest(t)
		if code := up.wait(t).Code(); code == 0 {
			t.Errorf("podsup up with a world-writable log_dir exited 0:\n%s", out)
		}
		if !strings.Contains(out, logDir) || !strings.Contains(out, "chmod go-w") {
			t.Errorf("the refusal does not name log_dir and the fix:\n%s", out)
		}
	})

	t.Run("group directory owned by the process's user", func(t *testing.T) {
		t.Parallel()
		u := testusers.NewUser(t)
		victim, check := newVictim(t)
		logDir := filepath.Join(testusers.SharedDir(t), "logs")
		if err := os.Mkdir(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
		// An administrator who handed the group's directory to the
		// service's user.
		if err := os.Mkdir(filepath.Join(logDir, "g"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(logDir, "g"), u.UID, u.GID); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		socket := filepath.Join(dir, "s.sock")
		cfg := filepath.Join(dir, "podsup.hcl")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(logfileAttack, socket, logDir, u.Name, victim)), 0o644); err != nil {
			t.Fatal(err)
		}
		up := start(t, podsupCmd(t, "up", "-f", cfg))
		c := api.NewClient(socket)
		if !eventually(func() bool { _, err := c.Version(context.Background()); return err == nil }) {
			t.Fatalf("podsup up never answered:\n%s", up.sofar(t))
		}
		// The process has printed all three lines (root has tried to
		// write each) once `podsup logs` has the last one.
		var out string
		if !eventually(func() bool {
			_, out = runPodsup(t, "--socket", socket, "logs", "g/p")
			return strings.Contains(out, "and again") || changed(victim)
		}) {
			t.Fatalf("the process's lines never reached podsup logs:\n%s", out)
		}
		check(t)
		if !strings.Contains(out, "id > /tmp/pwned") || strings.Contains(out, "root's own rc file") {
			t.Errorf("podsup logs g/p: %q, want the process's own lines only", out)
		}
		if st, err := os.Lstat(filepath.Join(logDir, "g", "p.log")); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the process's link was replaced or removed: %v %v", st, err)
		}
		if err := up.p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		rest := up.rest(t)
		up.wait(t)
		if n := strings.Count(rest, "owned by uid"); n != 1 {
			t.Errorf("the refused group directory was reported %d times, want once:\n%s", n, rest)
		}
	})
}
