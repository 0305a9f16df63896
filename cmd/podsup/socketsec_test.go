package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/testusers"
	"github.com/podsup/podsup/sandbox/proc"
)

// The control socket's tests of issue 25 (items 2, 5, 9, 10, 11): who
// may own the socket's directory, whom the client talks to, what podsup
// removes at the socket's path and beside it.

func init() {
	// fakeserver ARGS=PATH listens on PATH (mode 0777, so that any user
	// can connect), says "listening", and for each connection says how
	// many bytes it received before the client hung up (or 3s passed).
	helpers["fakeserver"] = func(args []string) int {
		l, err := net.Listen("unix", args[0])
		if err != nil {
			fmt.Println(err)
			return 1
		}
		if err := os.Chmod(args[0], 0o777); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("listening")
		for {
			c, err := l.Accept()
			if err != nil {
				return 1
			}
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			b, _ := io.ReadAll(c)
			fmt.Printf("received %d bytes\n", len(b))
			c.Close()
		}
	}
}

// smallConfig runs one process.
const smallConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "web" {
  termination_grace_period = "2s"
  process "api" {
    command = ["sleep", "1000"]
  }
}
`

// endsWithin waits up to d for s to exit; false if it still runs.
func endsWithin(s *started, d time.Duration) bool {
	select {
	case <-s.p.Done():
		return true
	case <-time.After(d):
		return false
	}
}

// sharedTmp is a /tmp of the test's own: root's, mode 1777.
func sharedTmp(t *testing.T) string {
	tmp := filepath.Join(testusers.SharedDir(t), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	return tmp
}

// TestClientRefusesAServerOfAnotherUser: another user listens at the
// path the client uses. Neither root's client nor a user's sends it a
// byte: each refuses, naming the server's uid (issue 25, item 2).
func TestClientRefusesAServerOfAnotherUser(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	user, attacker := testusers.NewUser(t), testusers.NewUser(t)
	exe := testusers.SharedExecutable(t)
	dir := filepath.Join(testusers.SharedDir(t), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, attacker.UID, attacker.GID); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "podsup.sock")
	srv := start(t, &proc.Cmd{Path: exe, Args: []string{"fakeserver", path}, RunAs: proc.RunAs{Env: []string{helperEnv + "=fakeserver"}, User: attacker.Name}})
	if l := srv.line(t); !strings.Contains(l, "listening") {
		t.Fatalf("the other user's server: %q", l)
	}
	for _, client := range []testusers.User{{}, user} {
		name, uid := "root", 0
		if client.Name != "" {
			name, uid = "a user", client.UID
		}
		out, code := testusers.Run(t, client, []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin"}, exe, "--socket", path, "status")
		want := fmt.Sprintf("refusing to talk to the server on %s: it runs as uid %d, not root or you (uid %d)", path, attacker.UID, uid)
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("status as %s against another user's server: exit %d\n%s\nwant it refused: %q", name, code, out, want)
		}
		if got := srv.line(t); !strings.Contains(got, "received 0 bytes") {
			t.Errorf("status as %s sent the other user's server something: %q", name, got)
		}
	}
}

// TestClientRequestTimeout: a podsup that accepts and never answers makes
// a short request fail, saying so, within --request-timeout; a stream
// that runs longer than it is not cut (issue 25, item 5).
func TestClientRequestTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	silent := filepath.Join(dir, "silent.sock")
	l, err := net.Listen("unix", silent)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept and hold every connection, answering nothing
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	begin := time.Now()
	code, out := runPodsup(t, "--socket", silent, "--request-timeout", "1s", "status")
	if code == 0 || !strings.Contains(out, "did not answer within 1s") {
		t.Fatalf("status against a podsup that never answers: exit %d\n%s", code, out)
	}
	if took := time.Since(begin); took > 20*time.Second {
		t.Fatalf("status took %s to give up with --request-timeout 1s", took)
	}

	// A stream: three events 700ms apart, 2.1s in all, twice the timeout.
	streaming := filepath.Join(dir, "stream.sock")
	sl, err := net.Listen("unix", streaming)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i := 0; i < 3; i++ {
			time.Sleep(700 * time.Millisecond)
			b, _ := json.Marshal(api.Event{Time: time.Now(), Type: "Normal", Reason: "Tick" + strconv.Itoa(i), Group: "g"})
			fmt.Fprintf(w, "%s\n", b)
			w.(http.Flusher).Flush()
		}
	})}
	go func() { _ = hs.Serve(sl) }()
	defer hs.Close()
	code, out = runPodsup(t, "--socket", streaming, "--request-timeout", "1s", "events", "-f")
	if code != 0 || !strings.Contains(out, "Tick2") {
		t.Fatalf("events -f, a stream longer than --request-timeout: exit %d\n%s", code, out)
	}
}

// TestUpRefusesAHostileSocketDirectory: without XDG_RUNTIME_DIR a user's
// podsup puts its socket in $TMPDIR/podsup-UID. Another user made that
// directory first, mode 0777: podsup must refuse it, saying whose it is
// (issue 25, item 2).
func TestUpRefusesAHostileSocketDirectory(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	user, attacker := testusers.NewUser(t), testusers.NewUser(t)
	exe := testusers.SharedExecutable(t)
	tmp := sharedTmp(t)
	hostile := filepath.Join(tmp, "podsup-"+strconv.Itoa(user.UID))
	if out, code := testusers.Run(t, attacker, []string{"PATH=/usr/bin:/bin"}, "mkdir", "-m", "0777", hostile); code != 0 {
		t.Fatalf("mkdir as the attacker: %s", out)
	}
	cfg := filepath.Join(filepath.Dir(exe), "podsup.hcl")
	if err := os.WriteFile(cfg, []byte("group \"web\" {\n  process \"api\" {\n    command = [\"sleep\", \"1000\"]\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := start(t, &proc.Cmd{Path: exe, Args: []string{"podsup", "up", "-f", cfg},
		RunAs: proc.RunAs{Env: []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin", "TMPDIR=" + tmp}, User: user.Name}})
	if !endsWithin(up, 30*time.Second) {
		t.Fatalf("podsup up runs with its socket in %s, a directory another user made 0777:\n%s", hostile, up.sofar(t))
	}
	out := up.rest(t)
	want := fmt.Sprintf("the socket's directory %s belongs to uid %d, not to you (uid %d) or root", hostile, attacker.UID, user.UID)
	if up.p.Exit().Code() == 0 || !strings.Contains(out, want) {
		t.Fatalf("podsup up in a hostile socket directory: exit %d\n%s\nwant: %s", up.p.Exit().Code(), out, want)
	}
	if _, err := os.Lstat(filepath.Join(hostile, "podsup.sock")); !os.IsNotExist(err) {
		t.Fatalf("a socket was made in the hostile directory (%v)", err)
	}
}

// TestUpMakesAPrivateSocketDirectory: a user's podsup makes its
// $TMPDIR/podsup-UID 0700, and its own user reaches it there (issue 25,
// item 2).
func TestUpMakesAPrivateSocketDirectory(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	user := testusers.NewUser(t)
	exe := testusers.SharedExecutable(t)
	tmp := sharedTmp(t)
	dir := filepath.Join(tmp, "podsup-"+strconv.Itoa(user.UID))
	cfg := filepath.Join(filepath.Dir(exe), "podsup.hcl")
	if err := os.WriteFile(cfg, []byte("group \"web\" {\n  process \"api\" {\n    command = [\"sleep\", \"1000\"]\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin", "TMPDIR=" + tmp}
	up := start(t, &proc.Cmd{Path: exe, Args: []string{"podsup", "up", "-f", cfg}, RunAs: proc.RunAs{Env: env, User: user.Name}})
	if !eventually(func() bool { _, err := os.Lstat(filepath.Join(dir, "podsup.sock")); return err == nil }) {
		t.Fatalf("podsup up as a user never made its socket in %s:\n%s", dir, up.sofar(t))
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o700 || int(st.Uid) != user.UID {
		t.Fatalf("%s: mode %04o owner %d, want 0700 and the user's, %d", dir, st.Mode&0o7777, st.Uid, user.UID)
	}
	out, code := testusers.Run(t, user, env, exe, "status")
	if code != 0 || !strings.Contains(out, "web") {
		t.Fatalf("status as the podsup's own user: exit %d\n%s", code, out)
	}
}

// TestUpRemovesOnlyTheSocketItBound: the socket at podsup's path is no
// longer the one it bound when it stops; it must leave it (issue 25,
// item 2).
func TestUpRemovesOnlyTheSocketItBound(t *testing.T) {
	t.Parallel()
	f := startUp(t, smallConfig)
	if err := os.Rename(f.socket, f.socket+".moved"); err != nil {
		t.Fatal(err)
	}
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: f.socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	other.SetUnlinkOnClose(false)
	defer other.Close()
	var want syscall.Stat_t
	if err := syscall.Lstat(f.socket, &want); err != nil {
		t.Fatal(err)
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up: %v\n%s", e, f.up.rest(t))
	}
	var got syscall.Stat_t
	if err := syscall.Lstat(f.socket, &got); err != nil || got.Ino != want.Ino {
		t.Fatalf("podsup removed a socket it did not bind at %s (%v)", f.socket, err)
	}
}

// TestUpRefusesAFileAtItsSocketPath: `podsup up --socket
// DIR/important.txt` must not delete the file (issue 25, item 11).
func TestUpRefusesAFileAtItsSocketPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "podsup.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(smallConfig, filepath.Join(dir, "unused.sock"))), 0o644); err != nil {
		t.Fatal(err)
	}
	important := filepath.Join(dir, "important.txt")
	if err := os.WriteFile(important, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := start(t, podsupCmd(t, "up", "-f", cfg, "--socket", important))
	if !endsWithin(up, 30*time.Second) {
		t.Fatalf("podsup up runs on a regular file's path:\n%s", up.sofar(t))
	}
	out := up.rest(t)
	if up.p.Exit().Code() == 0 || !strings.Contains(out, important+": a regular file is there, not a stale socket") {
		t.Fatalf("podsup up --socket important.txt: exit %d\n%s", up.p.Exit().Code(), out)
	}
	if b, err := os.ReadFile(important); err != nil || string(b) != "keep me\n" {
		t.Fatalf("important.txt after podsup up: %q %v", b, err)
	}
}

// TestUpRemovesTheNotifyDirectoryOfAKilledPodsup: a podsup SIGKILLed
// leaves its notify-N directory beside the socket; the next one started
// there removes it (issue 25, item 9).
func TestUpRemovesTheNotifyDirectoryOfAKilledPodsup(t *testing.T) {
	t.Parallel()
	f := startUp(t, smallConfig)
	f.waitRunning(t, "web", "api")
	first, _ := filepath.Glob(filepath.Join(f.dir, "notify-*"))
	if len(first) != 1 {
		t.Fatalf("podsup up made %d notify directories beside its socket: %q", len(first), first)
	}
	_ = f.up.p.Signal(syscall.SIGKILL)
	f.up.wait(t)
	if _, err := os.Stat(first[0]); err != nil {
		t.Fatalf("a SIGKILLed podsup left no notify directory: %v (the test tests nothing)", err)
	}
	// The next podsup on the same socket: it sweeps the first one's
	// processes and its directory.
	second := start(t, podsupCmd(t, "up", "-f", f.cfg))
	c := api.NewClient(f.socket)
	if !eventually(func() bool { _, err := c.Version(context.Background()); return err == nil }) {
		t.Fatalf("the second podsup up never answered: %s", second.sofar(t))
	}
	f.up = second
	f.waitRunning(t, "web", "api")
	if _, err := os.Lstat(first[0]); !os.IsNotExist(err) {
		t.Fatalf("the SIGKILLed podsup's %s is still there after the next start (%v)", first[0], err)
	}
	now, _ := filepath.Glob(filepath.Join(f.dir, "notify-*"))
	if len(now) != 1 {
		t.Fatalf("notify directories beside the socket: %q, want the second podsup's alone", now)
	}
}
