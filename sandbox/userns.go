package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// The files sandboxes' id ranges come from (variables for tests).
var (
	subUIDFile = "/etc/subuid"
	subGIDFile = "/etc/subgid"
)

// idRange is a sandbox's share of the host's ids: uid and gid 0..Count-1
// inside are UID.. and GID.. outside.
type idRange struct {
	UID, GID uint32
	Count    uint32
}

// idAllocator hands out spec.SubIDsPerSandbox-id blocks of a user's
// /etc/subuid and /etc/subgid ranges, distinct per sandbox of this
// runtime: block k of the uid range goes with block k of the gid range.
type idAllocator struct {
	mu   sync.Mutex
	used map[string]map[uint32]bool // user → uid bases in use
}

// take reserves the lowest free block of user's ranges.
func (a *idAllocator) take(user string) (idRange, error) {
	if user == "" {
		user = spec.DefaultSubIDUser
	}
	if !inInitialUserNS() {
		return idRange{}, errRootlessUserNS
	}
	uids, err := subIDRange(subUIDFile, user)
	if err != nil {
		return idRange{}, err
	}
	gids, err := subIDRange(subGIDFile, user)
	if err != nil {
		return idRange{}, err
	}
	const n = spec.SubIDsPerSandbox
	blocks := min(uids.count, gids.count) / n
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == nil {
		a.used = map[string]map[uint32]bool{}
	}
	if a.used[user] == nil {
		a.used[user] = map[uint32]bool{}
	}
	for k := uint64(0); k < blocks; k++ {
		base := uint32(uids.start + k*n)
		if !a.used[user][base] {
			a.used[user][base] = true
			return idRange{UID: base, GID: uint32(gids.start + k*n), Count: n}, nil
		}
	}
	if blocks == 0 {
		return idRange{}, fmt.Errorf("%w: the ranges of %q in %s and %s hold fewer than %d ids, one sandbox's", ErrUnavailable, user, subUIDFile, subGIDFile, n)
	}
	return idRange{}, fmt.Errorf("%w: every %d-id block of %q's ranges in %s and %s is in use (%d sandboxes with a user namespace): give it a larger range", ErrUnavailable, n, user, subUIDFile, subGIDFile, blocks)
}

// SubIDsAvailable says why a sandbox with user_namespace could not get
// its ids from user's ranges here (empty user: spec.DefaultSubIDUser), or
// nil: podsup validate's warning, before any sandbox is made.
func SubIDsAvailable(user string) error {
	if user == "" {
		user = spec.DefaultSubIDUser
	}
	if !inInitialUserNS() {
		return errRootlessUserNS
	}
	var blocks uint64 = 1 << 32
	for _, file := range []string{subUIDFile, subGIDFile} {
		r, err := subIDRange(file, user)
		if err != nil {
			return err
		}
		blocks = min(blocks, r.count/spec.SubIDsPerSandbox)
	}
	if blocks == 0 {
		return fmt.Errorf("%w: the ranges of %q in %s and %s hold fewer than %d ids, one sandbox's", ErrUnavailable, user, subUIDFile, subGIDFile, spec.SubIDsPerSandbox)
	}
	return nil
}

// errRootlessUserNS is a user_namespace asked of a rootless podsup.
var errRootlessUserNS = fmt.Errorf("%w: podsup runs in a user namespace of its own (rootless), where the host's id ranges cannot be mapped; its sandboxes' root is not the host's root already: leave user_namespace out", ErrUnavailable)

// release gives r back.
func (a *idAllocator) release(user string, r idRange) {
	if user == "" {
		user = spec.DefaultSubIDUser
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.used[user], r.UID)
}

// inInitialUserNS reports whether podsup runs in the host's user
// namespace, whose uid_map maps every id to itself.
func inInitialUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true // no user namespaces at all: the clone will say so
	}
	return strings.Join(strings.Fields(string(b)), " ") == "0 0 4294967295"
}

type subRange struct{ start, count uint64 }

// subIDRange reads user's first "name:start:count" line of an
// /etc/subuid-format file. A line may name the user by uid, as
// shadow-utils allows.
func subIDRange(file, user string) (subRange, error) {
	f, err := os.Open(file)
	if err != nil {
		return subRange{}, fmt.Errorf("%w: a sandbox's user namespace takes its ids from %s: %w (add a line \"%s:<start>:<count>\", count a multiple of %d)", ErrUnavailable, file, err, user, spec.SubIDsPerSandbox)
	}
	defer f.Close() // read only
	uid := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(fields) != 3 {
			continue
		}
		if fields[0] != user {
			if uid == "" {
				uid = lookupUID(user)
			}
			if fields[0] != uid || uid == "-" {
				continue
			}
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 != nil || err2 != nil || start == 0 || start+count > 1<<32-1 {
			return subRange{}, fmt.Errorf("%w: %s: the line of %q is not \"name:start:count\" with a start above 0", ErrInvalidArgument, file, user)
		}
		return subRange{start: start, count: count}, nil
	}
	return subRange{}, fmt.Errorf("%w: %s has no range for %q, where sandboxes' user namespaces take their ids: add a line \"%s:<start>:<count>\" (count a multiple of %d, e.g. %s:1000000000:%d), or name another user with subid_user", ErrUnavailable, file, user, user, spec.SubIDsPerSandbox, user, 1000*spec.SubIDsPerSandbox)
}

// lookupUID is user's uid as a string, "-" when there is none.
func lookupUID(user string) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return "-"
	}
	defer f.Close() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), ":"); len(fields) > 2 && fields[0] == user {
			return fields[2]
		}
	}
	return "-"
}

// spawnClient is podsup's end of a holder's spawn socket.
type spawnClient struct {
	mu   sync.Mutex // one request and its reply at a time
	conn *net.UnixConn
}

func newSpawnClient(f *os.File) (*spawnClient, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("spawn socket is a %T", c)
	}
	return &spawnClient{conn: uc}, nil
}

func (c *spawnClient) close() { _ = c.conn.Close() }

// spawn sends cmd, with its fds and those that place the child in pl's
// cgroups from the holder's home ones, and returns the child's pid and
// pidfd.
func (c *spawnClient) spawn(cmd *proc.Cmd, pl, home *cgroups.Placement) (int, int, error) {
	req := spawnRequest{Path: cmd.Path, Args: cmd.Args, RunAs: cmd.RunAs, Credential: cmd.Credential,
		NotRoot: cmd.NotRoot, NoNewPrivs: cmd.NoNewPrivs, Security: cmd.Security}
	if req.Env == nil {
		req.Env = os.Environ() // nil means podsup's, not the holder's
	}
	var fds []int
	for i, f := range []*os.File{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f != nil {
			req.Stdio[i] = true
			fds = append(fds, int(f.Fd()))
		}
	}
	for _, f := range cmd.ExtraFiles {
		fds = append(fds, int(f.Fd()))
	}
	req.Extra = len(cmd.ExtraFiles)
	if pl != nil && home != nil {
		enter, err := pl.OpenProcs()
		if err != nil {
			return 0, -1, err
		}
		leave, err := home.OpenProcs()
		if err != nil {
			if enter != nil {
				_ = enter.Close() // opened for writing, never written
			}
			return 0, -1, err
		}
		if enter != nil && leave != nil {
			defer enter.Close() // the holder has its copy once sent
			defer leave.Close()
			req.Procs = true
			fds = append(fds, int(enter.Fd()), int(leave.Fd()))
		}
		target, _ := pl.ThreadFiles()
		back, _ := home.ThreadFiles()
		if len(target) != len(back) {
			return 0, -1, fmt.Errorf("the process's cgroups and the holder's are in %d and %d v1 hierarchies", len(target), len(back))
		}
		req.V1 = len(target)
		for _, f := range append(append([]*os.File(nil), target...), back...) {
			fds = append(fds, int(f.Fd()))
		}
	}
	if len(fds) > maxSpawnFDs {
		return 0, -1, &proc.StartError{Path: cmd.Path, Err: fmt.Errorf("%d files to hand to the sandbox's holder, more than %d", len(fds), maxSpawnFDs)}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return 0, -1, fmt.Errorf("encoding spawn request: %w", err)
	}
	if len(b) > maxSpawnMessage {
		return 0, -1, &proc.StartError{Path: cmd.Path, Err: fmt.Errorf("%w: command line and environment take %d bytes, more than %d", proc.ErrNotExecutable, len(b), maxSpawnMessage)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, _, err := c.conn.WriteMsgUnix(b, unix.UnixRights(fds...), nil); err != nil {
		return 0, -1, fmt.Errorf("asking the sandbox's holder to start %s: %w: %w", cmd.Path, ErrUnavailable, err)
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.conn.ReadMsgUnix(buf, oob)
	if err == nil && n == 0 {
		err = errors.New("the holder ended")
	}
	if err != nil {
		return 0, -1, fmt.Errorf("starting %s through the sandbox's holder: %w: %w", cmd.Path, ErrUnavailable, err)
	}
	got := receivedFDs(oob[:oobn])
	var reply spawnReply
	if err := json.Unmarshal(buf[:n], &reply); err != nil {
		closeFDs(got)
		return 0, -1, fmt.Errorf("reading the sandbox holder's spawn reply %q: %w", buf[:n], err)
	}
	if reply.Error != "" || len(got) != 1 {
		closeFDs(got)
		return 0, -1, &proc.StartError{Path: cmd.Path, Err: reply.err()}
	}
	return reply.Pid, got[0], nil
}

// err is the error the holder's reply describes, in proc's classes.
func (r spawnReply) err() error {
	msg := r.Error
	if msg == "" {
		msg = "the holder sent no pidfd"
	}
	switch r.Kind {
	case "security":
		return &proc.SecurityError{Setting: r.Setting, Err: errors.New(msg)}
	case "not_found":
		return fmt.Errorf("%w (%s)", proc.ErrCommandNotFound, msg)
	case "not_executable":
		return fmt.Errorf("%w (%s)", proc.ErrNotExecutable, msg)
	case "as_root":
		return proc.ErrWouldRunAsRoot
	}
	return errors.New(msg)
}

// spawnInUserNS starts cmd through the holder and adopts the child:
// podsup's reaper holds unknown exits from before the request on, so an
// exit before the reply is not lost. pl, when set, is cmd's cgroup
// placement: its fds go to the holder, and podsup holds its fork lock
// for the request.
func (h *holder) spawnInUserNS(cmd *proc.Cmd, pl *cgroups.Placement) (*proc.Process, error) {
	var oom *int
	if cmd.Security != nil {
		oom = cmd.Security.OOMScoreAdj
	}
	return proc.Adopt(proc.Adoption{
		Tree:        cmd.Tree,
		OnExit:      cmd.OnExit,
		OOMScoreAdj: oom,
		Fork: func() (pid, pidfd int, err error) {
			var home *cgroups.Placement
			if pl != nil && h.home != nil {
				if home, err = h.home.OpenPlacement(); err != nil {
					return 0, -1, err
				}
				defer home.Close() // read-only handles, and tasks files written through the holder
			}
			ask := func() error {
				pid, pidfd, err = h.spawn.spawn(cmd, pl, home)
				return err
			}
			if pl != nil && pl.MovesThread() {
				// The same exclusion from a freeze of the group as a fork
				// of podsup's own.
				err = pl.Fork(ask)
			} else {
				err = ask()
			}
			return pid, pidfd, err
		},
	})
}

// idMaps are r as a clone's maps.
func (r idRange) idMaps() (uids, gids []syscall.SysProcIDMap) {
	return []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.UID), Size: int(r.Count)}},
		[]syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.GID), Size: int(r.Count)}}
}
