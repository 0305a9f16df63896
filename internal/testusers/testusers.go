// Package testusers makes real, throw-away users and groups for the
// security tests: a peer on the control socket, a supervised process or a
// local attacker is only believable as a uid the kernel knows. Each user
// and group is created with useradd/groupadd and removed when the test
// ends. The tests that use it need root (CI is root); without root they
// skip and say so. Tests only.
package testusers

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

// User is a real account made for one test.
type User struct {
	Name string
	UID  int
	// GID is the user's primary group, made with it and named like it.
	GID int
}

// Group is a real group made for one test.
type Group struct {
	Name string
	GID  int
}

// RequireRoot skips t, saying why, unless the test runs as root: only root
// can make users, and only a root podsup has a boundary to test.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes real users and groups with useradd (CI runs as root)")
	}
	for _, tool := range []string{"useradd", "userdel", "groupadd", "groupdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (package passwd) to make real users", tool)
		}
	}
}

// NewGroup makes a group, removed when t ends.
func NewGroup(t testing.TB) Group {
	t.Helper()
	RequireRoot(t)
	name := newName()
	shadowTool(t, "groupadd", name)
	t.Cleanup(func() { shadowTool(t, "groupdel", name) })
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatalf("looking up the group just made: %v", err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	return Group{Name: name, GID: gid}
}

// NewUser makes a user with a primary group of its own and, as
// supplementary groups, the given ones; removed when t ends. It has no
// home directory and no password: it exists to be a uid.
func NewUser(t testing.TB, groups ...Group) User {
	t.Helper()
	RequireRoot(t)
	name := newName()
	args := []string{"--no-create-home", "--user-group", "--shell", "/bin/sh"}
	if len(groups) > 0 {
		var names []string
		for _, g := range groups {
			names = append(names, g.Name)
		}
		args = append(args, "--groups", strings.Join(names, ","))
	}
	shadowTool(t, "useradd", append(args, name)...)
	t.Cleanup(func() { shadowTool(t, "userdel", name) })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("looking up the user just made: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return User{Name: name, UID: uid, GID: gid}
}

// shadowTool runs useradd and its kin, retrying while another test
// process holds /etc/passwd's lock (exit 10 for user*, 10 for group*).
func shadowTool(t testing.TB, tool string, args ...string) {
	t.Helper()
	var out []byte
	var err error
	for try := 0; try < 50; try++ {
		var code int
		out, code, err = run(proc.Cmd{Path: tool, Args: append([]string{tool}, args...)})
		if err == nil && code == 0 {
			return
		}
		if err == nil {
			err = fmt.Errorf("exit code %d", code)
		}
		if !strings.Contains(string(out), "lock") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s %s: %v: %s", tool, strings.Join(args, " "), err, out)
}

// Run runs argv as u (its primary and supplementary groups too; root when
// u is the zero User) with env as its whole environment, and returns what
// it printed on stdout and stderr together and its exit code. It gives up
// after a minute.
func Run(t testing.TB, u User, env []string, argv ...string) (string, int) {
	t.Helper()
	c := proc.Cmd{Path: argv[0], Args: argv, RunAs: proc.RunAs{Env: env}}
	if u.Name != "" {
		c.User = u.Name
	}
	out, code, err := run(c)
	if err != nil {
		t.Fatalf("running %q as %q: %v", argv, u.Name, err)
	}
	return string(out), code
}

// run starts c through package proc, the one reaper, with stdout and
// stderr on one pipe, and waits for it for at most a minute.
func run(c proc.Cmd) ([]byte, int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	c.Stdout, c.Stderr = w, w
	p, err := proc.Start(&c)
	w.Close()
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	read := make(chan error, 1)
	go func() { _, err := buf.ReadFrom(r); read <- err }()
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		_ = p.KillTree(syscall.SIGKILL)
		<-p.Done()
		return buf.Bytes(), 0, fmt.Errorf("%s did not end within a minute", c.Path)
	}
	if err := <-read; err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), p.Exit().Code(), nil
}

func newName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "podsupt" + hex.EncodeToString(b)
}

// SharedExecutable returns a copy of the running test binary that every
// user may run: the original sits in the go command's private work
// directory (mode 0700), out of a test user's reach.
func SharedExecutable(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := SharedDir(t)
	dst := filepath.Join(dir, filepath.Base(self))
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// SharedDir returns a new root-owned directory that every user may enter
// and read but not write (0755), removed when t ends: t.TempDir is 0700.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "podsup-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// AddSubIDs gives name the range start..start+count-1 in /etc/subuid and
// /etc/subgid (creating them if needed) until the test ends, then takes
// the lines out again (and a file it created). It edits under the lock
// shadow-utils' tools take (FILE.lock, made by link), so a useradd
// running meanwhile waits for it.
func AddSubIDs(t testing.TB, name string, start, count int) {
	t.Helper()
	line := fmt.Sprintf("%s:%d:%d\n", name, start, count)
	for _, file := range []string{"/etc/subuid", "/etc/subgid"} {
		created := false
		editLocked(t, file, func(b []byte, existed bool) []byte {
			created = !existed
			return append(b, line...)
		})
		t.Cleanup(func() {
			editLocked(t, file, func(b []byte, _ bool) []byte {
				return bytes.Replace(b, []byte(line), nil, 1)
			})
			if created {
				if b, err := os.ReadFile(file); err == nil && len(bytes.TrimSpace(b)) == 0 {
					_ = os.Remove(file)
				}
			}
		})
	}
}

// editLocked replaces file's content with edit's result, under file.lock.
func editLocked(t testing.TB, file string, edit func(b []byte, existed bool) []byte) {
	t.Helper()
	mine := fmt.Sprintf("%s.%d", file, os.Getpid())
	if err := os.WriteFile(mine, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(mine)
	deadline := time.Now().Add(30 * time.Second)
	for os.Link(mine, file+".lock") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s.lock is held by another tool", file)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer os.Remove(file + ".lock")
	b, err := os.ReadFile(file)
	existed := err == nil
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	tmp := file + ".podsup-test"
	if err := os.WriteFile(tmp, edit(b, existed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
		t.Fatal(err)
	}
}
