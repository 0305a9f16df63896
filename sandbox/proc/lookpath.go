package proc

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultPath is the PATH a command is looked up in when its environment
// has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// LookPathAs resolves file as execve would for a process of credential
// cred (nil: podsup's own) with environment env and working directory
// dir: a name without a slash is looked for in env's PATH (DefaultPath
// without one), and only an entry that user may reach and execute is
// taken. podsup resolves a command itself, then runs it as the process's
// user: looked up with podsup's rights, a command in a directory only
// root may enter (/root/bin) was found, then failed with "permission
// denied" at every start. The error wraps ErrCommandNotFound or
// ErrNotExecutable; for the latter it says which file and why.
//
// Permissions are read from the mode bits, the owner and the user's
// groups (root: any execute bit, any directory); ACLs, a read-only or
// noexec mount and LSMs are not looked at, and execve still has the last
// word.
func LookPathAs(file string, env []string, dir string, cred *syscall.Credential) (string, error) {
	return lookPathAs(file, env, dir, cred)
}

func lookPathAs(file string, env []string, dir string, cred *syscall.Credential) (string, error) {
	if file == "" {
		return "", ErrCommandNotFound
	}
	who := newExecUser(cred)
	if strings.Contains(file, "/") {
		// The lookup happens here, not in the vfork of ForkExec: on a hung
		// filesystem it blocks in an ordinary system call, which does not
		// stall the Go runtime (docs/architecture.md, "A limit of Go").
		// A missing file is left for execve to report (ENOENT), as it
		// always was; a file the user may not execute is said now, with
		// the reason.
		if why, found := who.cannotExec(inDir(dir, file)); found && why != "" {
			return "", fmt.Errorf("%w: %s", ErrNotExecutable, why)
		}
		return file, nil
	}
	pathEnv := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	denied := ""
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		cand := filepath.Join(d, file)
		why, found := who.cannotExec(inDir(dir, cand))
		if !found {
			continue
		}
		if why == "" {
			return cand, nil
		}
		if denied == "" {
			denied = why
		}
	}
	if denied != "" {
		return "", fmt.Errorf("%w: %s", ErrNotExecutable, denied)
	}
	return "", ErrCommandNotFound
}

// inDir is where path is for a process whose working directory is dir.
func inDir(dir, path string) string {
	if dir == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// execUser is whom a permission is checked for.
type execUser struct {
	own bool // podsup's own credentials: the kernel can answer
	// self: podsup's own user, whose uid is read only to name it in a
	// refusal (a geteuid less on every start).
	self   bool
	uid    uint32
	gid    uint32
	groups []uint32
}

func newExecUser(cred *syscall.Credential) execUser {
	if cred == nil {
		return execUser{own: true, self: true}
	}
	u := execUser{uid: cred.Uid, gid: cred.Gid, groups: cred.Groups}
	if cred.NoSetGroups {
		// The child keeps podsup's supplementary groups.
		gs, _ := os.Getgroups()
		u.groups = nil
		for _, g := range gs {
			u.groups = append(u.groups, uint32(g))
		}
	}
	u.own = u.uid == uint32(os.Geteuid()) && u.gid == uint32(os.Getegid()) && cred.NoSetGroups
	return u
}

// cannotExec says why the user cannot execute path, "" when it can;
// found is false when there is no file there (nothing, or a directory):
// the next PATH entry is tried and nothing is said of this one.
func (u execUser) cannotExec(path string) (why string, found bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if err == unix.EACCES {
			// A directory on the way podsup itself may not search.
			if why := u.blockingDir(path); why != "" {
				return why, true
			}
		}
		return "", false
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return "", false
	}
	if u.own {
		if unix.Faccessat(unix.AT_FDCWD, path, unix.X_OK, unix.AT_EACCESS) == nil {
			return "", true
		}
		return fmt.Sprintf("%s: not executable by %s: %s", path, u.name(), modeOwner(st)), true
	}
	if why := u.blockingDir(path); why != "" {
		return why, true
	}
	if !u.may(st, 1) {
		return fmt.Sprintf("%s: not executable by %s: %s", path, u.name(), modeOwner(st)), true
	}
	return "", true
}

// blockingDir names the first directory on the way to path that the user
// may not search (execute), or "".
func (u execUser) blockingDir(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	d := filepath.Dir(abs)
	var dirs []string
	for {
		dirs = append(dirs, d)
		if d == "/" {
			break
		}
		d = filepath.Dir(d)
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		var st unix.Stat_t
		if unix.Stat(d, &st) != nil {
			continue // the kernel will say; not ours to guess
		}
		ok := false
		if u.own {
			ok = unix.Faccessat(unix.AT_FDCWD, d, unix.X_OK, unix.AT_EACCESS) == nil
		} else {
			ok = u.may(st, 1)
		}
		if !ok {
			return fmt.Sprintf("%s: not executable by %s: directory %s is %s", path, u.name(), d, modeOwner(st))
		}
	}
	return ""
}

// may reports whether the mode bits of st grant the user bit (1: execute
// or search), for owner, group or others in the kernel's order: the first
// class the user is in decides. Root may search any directory and execute
// a file with any execute bit.
func (u execUser) may(st unix.Stat_t, bit uint32) bool {
	if u.uid == 0 {
		return st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Mode&0o111 != 0
	}
	switch {
	case st.Uid == u.uid:
		return st.Mode&(bit<<6) != 0
	case st.Gid == u.gid || slices.Contains(u.groups, st.Gid):
		return st.Mode&(bit<<3) != 0
	}
	return st.Mode&bit != 0
}

func (u execUser) name() string {
	uid := u.uid
	if u.self {
		uid = uint32(os.Geteuid())
	}
	id := strconv.FormatUint(uint64(uid), 10)
	if x, err := user.LookupId(id); err == nil {
		return fmt.Sprintf("user %s (uid %s)", x.Username, id)
	}
	return "uid " + id
}

// modeOwner is "mode 0700 owner root" for st.
func modeOwner(st unix.Stat_t) string {
	owner := strconv.FormatUint(uint64(st.Uid), 10)
	if x, err := user.LookupId(owner); err == nil {
		owner = x.Username
	}
	return fmt.Sprintf("mode %04o owner %s", st.Mode&0o7777, owner)
}

// CredentialOf is the credential a Cmd with this User and Group runs
// with: nil for podsup's own, an error for an unknown user or group.
func CredentialOf(userName, groupName string) (*syscall.Credential, error) {
	return credential(userName, groupName, nil)
}
