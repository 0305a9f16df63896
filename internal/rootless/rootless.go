// Package rootless runs `podsup up` as a normal user in a user namespace
// of its own, as podman's rootless mode does: podsup re-executes itself
// into a new user and mount namespace in which its user is root, so that
// everything after (the sandboxes' namespaces and mounts, cgroups where one
// is delegated) works as it does for root, with the user's own rights on
// the host. It owns the re-execution (Start, ChildMain), the uid and gid
// maps (the user alone, or its /etc/subuid and /etc/subgid range through
// newuidmap and newgidmap) and the prediction of whether this host allows
// it (Possible).
//
// Why a re-execution and not a setns: the kernel refuses
// setns(CLONE_NEWUSER) and unshare(CLONE_NEWUSER) to a multithreaded
// process, and a Go program is multithreaded before main. So the process
// that will be root in the namespace is a new one: started with
// CLONE_NEWUSER|CLONE_NEWNS, it waits on a pipe until its parent has
// written the maps, then execs podsup again (ChildMain): that exec, as uid
// 0 of the namespace, gives it every capability there.
package rootless

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// ChildArg is argv[1] of podsup re-executed into its user namespace,
// waiting for its maps (ChildMain).
const ChildArg = "__podsup_userns"

// markerEnv tells the final podsup that it runs rootless: its value is the
// host uid that is root in its namespace. TakeMarker removes it before
// anything could inherit it.
const markerEnv = "PODSUP_ROOTLESS_HOST_UID"

var hostUID = -1

// TakeMarker reads and removes the mark the re-execution leaves; main
// calls it first thing. After it, Inner says whether this process runs
// rootless.
func TakeMarker() {
	v, ok := os.LookupEnv(markerEnv)
	if !ok {
		return
	}
	_ = os.Unsetenv(markerEnv)
	if uid, err := strconv.Atoi(v); err == nil && uid > 0 {
		hostUID = uid
	}
}

// Inner reports whether this process is podsup re-executed rootless, and
// which host uid its root is.
func Inner() (uid int, ok bool) { return hostUID, hostUID > 0 }

// Map is one line of a uid or gid map: count ids from Inside (in the
// namespace) are Outside.. on the host.
type Map struct{ Inside, Outside, Count int }

// Maps is what a rootless podsup's namespace maps: root is the user (its
// primary group); with a range in /etc/subuid and /etc/subgid and the
// setuid tools newuidmap and newgidmap, ids 1.. are that range, so that a
// process may run as another user of the sandbox.
type Maps struct {
	UID, GID []Map
	// Helpers is true when the maps need newuidmap and newgidmap (a
	// subordinate range); without, podsup writes the one line itself and
	// denies setgroups, as the kernel requires of an unprivileged map.
	Helpers bool
}

// MapsFor returns the maps for uid and gid (the user's), with the
// subordinate ranges of the user in subuid and subgid files when the
// helpers are installed.
func MapsFor(uid, gid int, subuid, subgid string) Maps {
	m := Maps{UID: []Map{{0, uid, 1}}, GID: []Map{{0, gid, 1}}}
	if _, err := exec.LookPath("newuidmap"); err != nil {
		return m
	}
	if _, err := exec.LookPath("newgidmap"); err != nil {
		return m
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	us, ok1 := subRange(subuid, name, uid)
	gs, ok2 := subRange(subgid, name, uid)
	if !ok1 || !ok2 {
		return m
	}
	m.UID = append(m.UID, Map{1, us.Outside, us.Count})
	m.GID = append(m.GID, Map{1, gs.Outside, gs.Count})
	m.Helpers = true
	return m
}

// subRange is the first range of user (by name or uid) in an
// /etc/subuid-format file: "name:start:count" lines.
func subRange(file, name string, uid int) (Map, bool) {
	f, err := os.Open(file)
	if err != nil {
		return Map{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(fields) != 3 || (fields[0] != name || name == "") && fields[0] != strconv.Itoa(uid) {
			continue
		}
		start, err1 := strconv.Atoi(fields[1])
		count, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil || start <= 0 || count <= 0 {
			continue
		}
		return Map{0, start, count}, true
	}
	return Map{}, false
}

func (m Map) String() string { return fmt.Sprintf("%d %d %d", m.Inside, m.Outside, m.Count) }

// Possible says why this host would not give a normal user a user
// namespace, or "" when it would (as far as its settings tell: a security
// module may still refuse, which Start then reports).
func Possible() string {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "user namespaces are turned off (sysctl user.max_user_namespaces = 0)"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "user namespaces are for root only here (sysctl kernel.unprivileged_userns_clone = 0)"
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return "this kernel has no user namespaces"
	}
	return ""
}

// Start starts podsup again (exe, with args after argv[0]) in a new user
// and mount namespace with maps m, and returns it running: the caller
// forwards signals to it and waits for its exit. stdin, stdout and stderr
// are passed on; so is env, with the marker added.
func Start(exe string, args []string, env []string, m Maps, cgroupFD int) (*proc.Process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	defer w.Close()
	c := &proc.Cmd{
		Path:       exe,
		Args:       append([]string{exe, ChildArg}, args...),
		RunAs:      proc.RunAs{Env: append(env, fmt.Sprintf("%s=%d", markerEnv, m.UID[0].Outside))},
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{r},
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
	}
	if cgroupFD >= 0 {
		c.UseCgroupFD, c.CgroupFD = true, cgroupFD
	}
	p, err := proc.Start(c)
	if err != nil {
		return nil, fmt.Errorf("starting podsup in a user namespace: %w", err)
	}
	_ = r.Close()
	if err := writeMaps(p.Pid(), m); err != nil {
		_ = p.Signal(unix.SIGKILL)
		<-p.Done()
		return nil, fmt.Errorf("mapping the user namespace of podsup (pid %d): %w", p.Pid(), err)
	}
	if _, err := w.Write([]byte{'1'}); err != nil {
		_ = p.Signal(unix.SIGKILL)
		<-p.Done()
		return nil, fmt.Errorf("starting podsup in a user namespace: %w", err)
	}
	return p, nil
}

func writeMaps(pid int, m Maps) error {
	if m.Helpers {
		if err := runHelper("newuidmap", pid, m.UID); err != nil {
			return err
		}
		return runHelper("newgidmap", pid, m.GID)
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	if err := os.WriteFile(dir+"uid_map", []byte(m.UID[0].String()+"\n"), 0); err != nil {
		return fmt.Errorf("writing uid_map: %w", err)
	}
	// An unprivileged gid map needs setgroups denied first, or a
	// process could drop a group that denies it access.
	if err := os.WriteFile(dir+"setgroups", []byte("deny\n"), 0); err != nil {
		return fmt.Errorf("denying setgroups: %w", err)
	}
	if err := os.WriteFile(dir+"gid_map", []byte(m.GID[0].String()+"\n"), 0); err != nil {
		return fmt.Errorf("writing gid_map: %w", err)
	}
	return nil
}

// runHelper runs newuidmap or newgidmap for pid's maps.
func runHelper(tool string, pid int, maps []Map) error {
	args := []string{tool, strconv.Itoa(pid)}
	for _, m := range maps {
		args = append(args, strconv.Itoa(m.Inside), strconv.Itoa(m.Outside), strconv.Itoa(m.Count))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	p, err := proc.Start(&proc.Cmd{Path: tool, Args: args, Stdout: w, Stderr: w})
	_ = w.Close()
	if err != nil {
		return err
	}
	out, _ := io.ReadAll(io.LimitReader(r, 1<<16))
	<-p.Done()
	if code := p.Exit().Code(); code != 0 {
		return fmt.Errorf("%s: %s (exit %d)", strings.Join(args, " "), strings.TrimSpace(string(out)), code)
	}
	return nil
}

// ChildMain is podsup in its new namespaces, before its maps: it waits
// for its parent to write them (a byte on fd 3), then execs podsup again,
// now as root of the namespace. Its argv is [exe, ChildArg, args...].
func ChildMain() int {
	sync := os.NewFile(3, "podsup-userns-sync")
	var b [1]byte
	if n, _ := sync.Read(b[:]); n != 1 {
		return 1 // the parent failed and says why
	}
	_ = sync.Close()
	// The mount namespace needs nothing done: one owned by a less
	// privileged user namespace than its parent's gets the host's shared
	// mounts as slaves, so nothing mounted here reaches the host.
	argv := append([]string{os.Args[0]}, os.Args[2:]...)
	err := unix.Exec("/proc/self/exe", argv, os.Environ())
	fmt.Fprintf(os.Stderr, "podsup: rootless: executing podsup again in its user namespace: %v\n", err)
	return 1
}

// WatchParent calls gone, once, when the podsup that started this one
// (its parent) has ended: a SIGKILL of it, which no signal passes on,
// must not leave this one and its processes running. The wait parks in
// the runtime's poller on a pidfd of the parent, which becomes readable
// at its exit.
func WatchParent(gone func()) error {
	ppid := os.Getppid()
	pidfd, err := unix.PidfdOpen(ppid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("watching the podsup that started this one (pid %d): %w", ppid, err)
	}
	if os.Getppid() != ppid { // it ended before the pidfd was open: another process may have its pid
		_ = unix.Close(pidfd)
		go gone()
		return nil
	}
	f := os.NewFile(uintptr(pidfd), "podsup-parent-pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("watching the podsup that started this one: %w", err)
	}
	go func() {
		defer f.Close()
		_ = rc.Read(func(fd uintptr) bool {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			return err == nil && n > 0 // false: park until it is readable
		})
		gone()
	}()
	return nil
}
