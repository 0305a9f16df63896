package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
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

func init() {
	// followers opens N event streams on a socket as whoever runs it, and
	// prints how each was answered: "200", or the status and message of
	// a refusal. Then it prints "holding" and keeps them open until killed
	// (a minute at most).
	helpers["followers"] = func(args []string) int {
		n, _ := strconv.Atoi(args[1])
		var conns []net.Conn
		for range n {
			c, code, msg := openFollower(args[0])
			if c != nil {
				conns = append(conns, c)
			}
			fmt.Printf("%d %s\n", code, msg)
		}
		fmt.Println("holding")
		time.Sleep(time.Minute)
		for _, c := range conns { // held open until here, on purpose
			c.Close()
		}
		return 0
	}
}

// openFollower asks for GET /v1/events?follow=true on a new connection: the
// connection (nil once refused or broken), the status code (0 when none
// came) and, for a refusal, its message.
func openFollower(socket string) (net.Conn, int, string) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return nil, 0, err.Error()
	}
	fmt.Fprintf(c, "GET /v1/events?follow=true HTTP/1.1\r\nHost: podsup\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, 0, err.Error()
	}
	_ = c.SetReadDeadline(time.Time{})
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		c.Close()
		return nil, resp.StatusCode, strings.TrimSpace(b.String())
	}
	return c, resp.StatusCode, ""
}

// startUpShared is startUp with the socket where a test user can reach it
// (a root-owned 0755 directory), and the configuration's %s placeholders
// filled with the socket then args.
func startUpShared(t *testing.T, config string, args ...any) *upFixture {
	t.Helper()
	dir := testusers.SharedDir(t)
	f := &upFixture{dir: dir, cfg: filepath.Join(dir, "podsup.hcl"), socket: filepath.Join(dir, "podsup.sock")}
	f.write(t, fmt.Sprintf(config, append([]any{f.socket}, args...)...))
	f.up = start(t, podsupCmd(t, "up", "-f", f.cfg))
	f.c = api.NewClient(f.socket)
	if !eventually(func() bool { _, err := f.c.Version(context.Background()); return err == nil }) {
		t.Fatalf("podsup up never answered on %s: %s", f.socket, f.up.sofar(t))
	}
	t.Cleanup(func() {
		_ = f.up.p.Signal(syscall.SIGTERM)
		f.up.wait(t)
	})
	return f
}

const rolesConfig = `
supervisor {
  socket       = "%s"
  socket_group = "%s"
  %s
}
group "web" {
  process "app" {
    command = ["sleep", "1000"]
    user    = "%s"
  }
  process "rootly" {
    command = ["sleep", "1000"]
  }
}
group "box" {
  sandbox {
    namespaces = ["pid", "uts"]
  }
  process "p" {
    command = ["sleep", "1000"]
  }
}
`

// TestSocketGroupMemberIsNotRoot: a real member of socket_group may read
// podsup's state and nothing more by default; granted exec, its commands
// run as itself or as a process's (non-root) user, with no capabilities
// and no_new_privs, never as root, on the host and in a sandbox (issue
// 25, item 1).
func TestSocketGroupMemberIsNotRoot(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	ops := testusers.NewGroup(t)
	member := testusers.NewUser(t, ops)
	appUser := testusers.NewUser(t)
	exe := testusers.SharedExecutable(t)
	env := []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin"}

	as := func(f *upFixture, args ...string) (string, int) {
		return testusers.Run(t, member, env, append([]string{exe, "--socket", f.socket}, args...)...)
	}
	refused := func(f *upFixture, role string, args ...string) {
		t.Helper()
		out, code := as(f, args...)
		want := fmt.Sprintf("uid %d may not", member.UID)
		if code == 0 || !strings.Contains(out, want) || !strings.Contains(out, "the "+role+" role is not granted to socket_group \""+ops.Name+"\" (supervisor.socket_group_roles)") {
			t.Errorf("%v as a member: exit %d\n%s\nwant it refused for the %s role", args, code, out, role)
		}
	}

	t.Run("default: read only", func(t *testing.T) {
		f := startUpShared(t, rolesConfig, ops.Name, "", appUser.Name)
		f.waitRunning(t, "web", "app")
		if out, code := as(f, "status"); code != 0 || !strings.Contains(out, "web") {
			t.Fatalf("status as a member: exit %d\n%s", code, out)
		}
		refused(f, "exec", "exec", "web", "--", "id")
		refused(f, "exec", "exec", "web/app", "--", "id")
		refused(f, "logs", "logs", "web/app")
		refused(f, "operate", "stop", "web")
		if pid := f.pid(t, "web", "app"); pid == 0 {
			t.Error("web/app stopped on a member's request")
		}
	})

	t.Run("exec granted", func(t *testing.T) {
		f := startUpShared(t, rolesConfig, ops.Name, `socket_group_roles = ["read", "exec"]`, appUser.Name)
		f.waitRunning(t, "web", "app")
		f.waitRunning(t, "box", "p")
		for _, group := range []string{"web", "box"} {
			out, code := as(f, "exec", group, "--", "id", "-u")
			if code != 0 || strings.TrimSpace(out) != strconv.Itoa(member.UID) {
				t.Errorf("exec %s -- id -u as a member: exit %d %q, want its own uid %d", group, code, out, member.UID)
			}
			out, code = as(f, "exec", group, "--", "id", "-G")
			groups := " " + strings.TrimSpace(out) + " "
			if code != 0 || !strings.Contains(groups, " "+strconv.Itoa(ops.GID)+" ") || strings.Contains(groups, " 0 ") {
				t.Errorf("exec %s -- id -G as a member: exit %d %q, want its own groups (%d among them)", group, code, out, ops.GID)
			}
			out, code = as(f, "exec", group, "--", "cat", "/proc/self/status")
			if code != 0 || !strings.Contains(out, "CapEff:\t0000000000000000") || !strings.Contains(out, "NoNewPrivs:\t1") {
				t.Errorf("exec %s as a member: exit %d, want no capabilities and no_new_privs:\n%s", group, code, out)
			}
			if out, code := as(f, "exec", group, "--", "env"); code != 0 || strings.Contains(out, asPodsupEnv) {
				t.Errorf("exec %s -- env as a member: exit %d, want none of podsup's environment:\n%s", group, code, out)
			}
			if out, code := as(f, "exec", group, "--", "cat", "/etc/shadow"); code == 0 {
				t.Errorf("exec %s -- cat /etc/shadow as a member worked:\n%s", group, out)
			}
		}
		out, code := as(f, "exec", "web/app", "--", "id", "-u")
		if code != 0 || strings.TrimSpace(out) != strconv.Itoa(appUser.UID) {
			t.Errorf("exec web/app -- id -u as a member: exit %d %q, want the process's user %d", code, out, appUser.UID)
		}
		out, code = as(f, "exec", "web/rootly", "--", "id", "-u")
		if code == 0 || !strings.Contains(out, "exec as web/rootly would run as root (its user); only root may do that") {
			t.Errorf("exec web/rootly as a member: exit %d\n%s\nwant it refused", code, out)
		}
		refused(f, "logs", "logs", "web/app")
		// Root is unchanged.
		if code, out := f.ctl(t, "exec", "web", "--", "id", "-u"); code != 0 || strings.TrimSpace(out) != "0" {
			t.Errorf("exec as root: exit %d %q", code, out)
		}
	})

	t.Run("logs granted", func(t *testing.T) {
		f := startUpShared(t, rolesConfig, ops.Name, `socket_group_roles = ["logs"]`, appUser.Name)
		f.waitRunning(t, "web", "app")
		if out, code := as(f, "logs", "web/app"); code != 0 {
			t.Errorf("logs as a member granted logs: exit %d\n%s", code, out)
		}
		refused(f, "exec", "exec", "web", "--", "id")
	})
}

const followersConfig = `
supervisor {
  socket       = "%s"
  socket_group = "%s"
}
group "web" {
  process "app" {
    command = ["sleep", "1000"]
  }
}
`

// TestHealthAnswersBesideManyFollowers: with 200 event streams of root
// open, `podsup health` and GET /v1/status answer within a second; a
// member opening 100 streams gets clear 429s past its share, and root's
// status still answers (issue 25, item 5).
func TestHealthAnswersBesideManyFollowers(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	ops := testusers.NewGroup(t)
	member := testusers.NewUser(t, ops)
	exe := testusers.SharedExecutable(t)
	f := startUpShared(t, followersConfig, ops.Name)
	f.waitRunning(t, "web", "app")

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 200 {
		c, code, msg := openFollower(f.socket)
		if c == nil {
			t.Fatalf("root's follower %d: %d %s", i, code, msg)
		}
		conns = append(conns, c)
	}
	// bestOf3 is the shortest of three runs of fn: one slow start of a
	// process on a busy machine is not podsup making it wait.
	bestOf3 := func(what string, fn func() error) time.Duration {
		t.Helper()
		var best time.Duration
		for i := range 3 {
			start := time.Now()
			err := fn()
			if d := time.Since(start); i == 0 || d < best {
				best = d
			}
			if err != nil {
				t.Fatalf("%s beside the followers: %v after %v", what, err, time.Since(start))
			}
		}
		return best
	}
	timed := func(what string, fn func() error) {
		t.Helper()
		if best := bestOf3(what, fn); best > time.Second {
			t.Errorf("%s beside the followers: %v at best, want an answer within 1s", what, best)
		}
	}
	timed("GET /v1/status", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := f.c.Status(ctx, "", "")
		return err
	})
	// The command: within 1s of what starting the binary costs (a race
	// build starts slowly), so what is timed is podsup's answer.
	startup := bestOf3("podsup --help", func() error {
		if code, out := runPodsup(t, "--help"); code != 0 {
			return fmt.Errorf("exit %d: %s", code, out)
		}
		return nil
	})
	health := bestOf3("podsup health", func() error {
		if code, out := f.ctl(t, "health"); code != 0 {
			return fmt.Errorf("exit %d: %s", code, out)
		}
		return nil
	})
	if health-startup > time.Second {
		t.Errorf("podsup health beside 200 followers took %v (starting the binary: %v), want an answer within 1s", health, startup)
	}

	// A member's 100 streams: its share, then 429s that say why.
	h := start(t, &proc.Cmd{Path: exe, Args: []string{"podsup-followers", f.socket, "100"},
		RunAs: proc.RunAs{Env: []string{helperEnv + "=followers"}, User: member.Name}})
	defer func() {
		_ = h.p.Signal(syscall.SIGKILL)
		h.wait(t)
	}()
	var ok, tooMany int
	var msg string
	for range 100 {
		l := h.line(t)
		code, m, _ := strings.Cut(l, " ")
		switch code {
		case "200":
			ok++
		case "429":
			tooMany++
			msg = m
		default:
			t.Fatalf("a member's follower: %q", l)
		}
	}
	if l := h.line(t); l != "holding" {
		t.Fatalf("the member's helper: %q", l)
	}
	if ok == 0 || ok > 64 || tooMany == 0 {
		t.Errorf("a member's 100 followers: %d accepted, %d refused with 429; want its share accepted and the rest refused", ok, tooMany)
	}
	if want := fmt.Sprintf("for uid %d", member.UID); !strings.Contains(msg, "too many") || !strings.Contains(msg, want) {
		t.Errorf("a member's refused follower: %q, want it to name the limit and %q", msg, want)
	}
	timed("GET /v1/status beside a member's followers", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := f.c.Status(ctx, "", "")
		return err
	})
}
