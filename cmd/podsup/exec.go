package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/podsup/podsup/api/apiserver"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
)

// execCmd is how `podsup exec` runs argv in group g. Named a process or
// an init process (GROUP/PROCESS), the command runs as that process runs, the way kubectl
// exec runs in a container's context: as its user and group, with its
// environment (podsup's own with the process's env on top) and in its
// working directory. Without a process it runs as podsup, with podsup's
// environment and working directory. The sandbox is the caller's: every
// exec of a group runs in the group's sandbox.
func execCmd(g *spec.Group, process string, argv []string) (*proc.Cmd, error) {
	c := &proc.Cmd{Path: argv[0], Args: argv}
	if process == "" {
		return c, nil
	}
	pr := findProcess(g, process)
	if pr == nil {
		return nil, fmt.Errorf("group %q has no process %q", g.Name, process)
	}
	c.RunAs = supervisor.RunAs(spec.WithGroupSecurity(g, *pr)) // what the process itself gets
	return c, nil
}

// execCmdFor is execCmd for an API peer, who is never given more than it
// has. Root and podsup's own user (a podsup that is not root) get
// execCmd's command as it is. Any other peer (one with the
// exec role: the server checked) never runs a command as root:
//   - with a process, the command runs as that process's user, and is
//     refused when that user is root (a process without a user runs as
//     podsup: root in a root podsup);
//   - without one, it runs as the peer itself: its uid, gid and the
//     supplementary groups it had when it connected (SO_PEERGROUPS), not
//     as podsup, and with a PATH alone, not podsup's environment.
//
// Either way with no_new_privs, so that a setuid binary (in a sandbox's
// rootfs, say) cannot make it root again; and as a non-root uid it has no
// capabilities.
func execCmdFor(g *spec.Group, process string, argv []string, peer apiserver.Peer) (*proc.Cmd, error) {
	c, err := execCmd(g, process, argv)
	if err != nil || peer.UID == 0 || peer.UID == os.Getuid() {
		return c, err // root, or podsup's own user: nothing it is not already
	}
	c.NoNewPrivs, c.NotRoot = true, true
	if process != "" {
		return c, nil // proc.Start resolves the user, and refuses root
	}
	cred := &syscall.Credential{Uid: uint32(peer.UID), Gid: uint32(peer.GID)}
	if peer.GroupsKnown {
		for _, id := range peer.Groups {
			cred.Groups = append(cred.Groups, uint32(id))
		}
	} else {
		cred.Groups = []uint32{} // unknown: none rather than podsup's
	}
	c.Credential = cred
	// Not podsup's environment, which is root's and may hold its
	// secrets: a PATH to find the command with.
	c.Env = []string{"PATH=" + execPath()}
	return c, nil
}

// execPath is podsup's PATH, or the usual one.
func execPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return proc.DefaultPath
}

// execStartError explains a refusal of execCmdFor's NotRoot.
func execStartError(group, process string, err error) error {
	if errors.Is(err, proc.ErrWouldRunAsRoot) {
		return fmt.Errorf("exec as %s/%s would run as root (its user); only root may do that", group, process)
	}
	return err
}

// findProcess is g's process or init process named name, or nil. An init
// is a process of its group like the others (kubectl exec takes an init
// container's name too): a command run in its context helps debug an init
// that fails or hangs.
func findProcess(g *spec.Group, name string) *spec.Process {
	for _, list := range [][]spec.Process{g.Init, g.Processes} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
