package proc_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/testusers"
	"github.com/podsup/podsup/sandbox/proc"
)

// TestCommandIsLookedUpAsItsUser: a command is resolved as the user it
// runs as. podsup (root) found it in a directory only root may enter and
// the process, run as another user, failed with "permission denied" at
// every start. A PATH entry the user cannot reach is skipped, and where
// none will do the error names the file and why.
func TestCommandIsLookedUpAsItsUser(t *testing.T) {
	testusers.RequireRoot(t)
	u := testusers.NewUser(t)
	const tool = "podsup-lookpath-tool"
	script := func(dir, says string, mode os.FileMode) string {
		p := filepath.Join(dir, tool)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+says+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private, err := os.MkdirTemp("", "podsup-private-") // 0700, root's: like /root/bin
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	script(private, "private", 0o755)
	public := testusers.SharedDir(t)
	script(public, "public", 0o755)

	// Found first in the private directory, run from the public one.
	out, err := runAs(u, tool, "PATH="+private+":"+public)
	if err != nil || strings.TrimSpace(out) != "public" {
		t.Fatalf("as %s with PATH=%s:%s: output %q, error %v; want the command of %s, the one the user can run", u.Name, private, public, out, err, public)
	}

	// Only the private one: refused before the fork, saying which and why.
	_, err = runAs(u, tool, "PATH="+private)
	want := filepath.Join(private, tool) + ": not executable by user " + u.Name + " (uid " + strconv.Itoa(u.UID) + "): directory " + private + " is mode 0700 owner root"
	if !errors.Is(err, proc.ErrNotExecutable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want ErrNotExecutable saying %q", err, want)
	}

	// A file of mode 0700 in a directory everyone may enter.
	shared := testusers.SharedDir(t)
	rootOnly := script(shared, "root only", 0o700)
	for _, cmd := range []struct{ path, env string }{{tool, "PATH=" + shared}, {rootOnly, "PATH=/nonexistent"}} {
		_, err = runAs(u, cmd.path, cmd.env)
		want = rootOnly + ": not executable by user " + u.Name + " (uid " + strconv.Itoa(u.UID) + "): mode 0700 owner root"
		if !errors.Is(err, proc.ErrNotExecutable) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with %s: error %v, want ErrNotExecutable saying %q", cmd.path, cmd.env, err, want)
		}
	}

	// Root itself (podsup's own credentials) still finds the first one.
	out, err = runAs(testusers.User{}, tool, "PATH="+private+":"+public)
	if err != nil || strings.TrimSpace(out) != "private" {
		t.Fatalf("as root: output %q, error %v; want the private one, first in PATH", out, err)
	}
}

// runAs starts path as u (podsup's own user when u is the zero User)
// with env and returns its output.
func runAs(u testusers.User, path string, env ...string) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer r.Close()
	p, err := proc.Start(&proc.Cmd{Path: path, Args: []string{path}, RunAs: proc.RunAs{Env: env, User: u.Name}, Stdout: w, Stderr: w})
	w.Close()
	if err != nil {
		return "", err
	}
	out, _ := io.ReadAll(r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil {
		return string(out), err
	}
	if e.Code() != 0 {
		return string(out), errors.New("exited: " + e.String() + ": " + string(out))
	}
	return string(out), nil
}
