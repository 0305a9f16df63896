package apiserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Peer is who is on the other end of a connection, as the kernel says.
type Peer struct {
	PID, UID, GID int
	// Groups are the peer's supplementary groups when it connected
	// (SO_PEERGROUPS); GroupsKnown is false when the kernel could not
	// say (before Linux 4.13), and then Policy reads /proc/PID/status.
	Groups      []int
	GroupsKnown bool
}

func (p Peer) String() string { return fmt.Sprintf("pid=%d uid=%d gid=%d", p.PID, p.UID, p.GID) }

// Policy decides which peers may use the API, and for what (Role).
type Policy struct {
	// OwnerUID is podsup's own uid; root and this uid have every role.
	OwnerUID int
	// GroupID, when >= 0, admits peers whose primary or supplementary
	// groups include it, with RoleRead and GroupRoles.
	GroupID int
	// GroupName is supervisor.socket_group as configured, for messages.
	GroupName string
	// GroupRoles is what the group's members may do besides read
	// (supervisor.socket_group_roles, ParseRoles).
	GroupRoles Roles
}

// Trusted reports whether p is root or podsup's own uid: every role, and
// none of the limits of other peers.
func (pol Policy) Trusted(p Peer) bool { return p.UID == 0 || p.UID == pol.OwnerUID }

// Roles is what p may do: nothing for a peer outside the policy.
func (pol Policy) Roles(p Peer) Roles {
	if pol.Trusted(p) {
		return AllRoles
	}
	if pol.GroupID < 0 || !pol.inGroup(p) {
		return 0
	}
	return pol.GroupRoles | Roles(RoleRead)
}

// Allows reports whether the peer may use the API at all.
func (pol Policy) Allows(p Peer) bool { return pol.Roles(p) != 0 }

func (pol Policy) inGroup(p Peer) bool {
	if p.GID == pol.GroupID {
		return true
	}
	groups := p.Groups
	if !p.GroupsKnown {
		groups = supplementaryGroups(p.PID)
	}
	for _, g := range groups {
		if g == pol.GroupID {
			return true
		}
	}
	return false
}

// supplementaryGroups reads the peer's groups from /proc: the fallback for
// a kernel without SO_PEERGROUPS. It is racy (the peer may have exited and
// its pid been reused), which is why the socket option comes first.
func supplementaryGroups(pid int) []int {
	if pid <= 0 {
		return nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Groups:"); ok {
			var gs []int
			for _, s := range strings.Fields(v) {
				if n, err := strconv.Atoi(s); err == nil {
					gs = append(gs, n)
				}
			}
			return gs
		}
	}
	return nil
}

// peerOf asks the kernel who is connected on c: SO_PEERCRED, and
// SO_PEERGROUPS for its supplementary groups, both as they were when the
// peer connected.
func peerOf(c net.Conn) (Peer, error) {
	if lc, ok := c.(*limitConn); ok {
		return lc.peer, lc.peerErr
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("not a unix socket connection: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var (
		p       Peer
		credErr error
	)
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if credErr != nil {
			return
		}
		p = Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}
		p.Groups, p.GroupsKnown = peerGroups(int(fd))
	}); err != nil {
		return Peer{}, err
	}
	if credErr != nil {
		return Peer{}, credErr
	}
	return p, nil
}

// peerGroups is SO_PEERGROUPS (Linux 4.13): false only when the kernel
// does not know the option (ENOPROTOOPT); on any other failure the peer
// has no supplementary groups as far as the policy goes (it fails closed).
func peerGroups(fd int) ([]int, bool) {
	buf := make([]uint32, 64)
	for range 3 {
		size := uint32(len(buf) * 4)
		var p unsafe.Pointer
		if len(buf) > 0 {
			p = unsafe.Pointer(&buf[0])
		}
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(p), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case e == 0:
			n := int(size / 4)
			out := make([]int, n)
			for i := range n {
				out[i] = int(buf[i])
			}
			return out, true
		case errors.Is(e, unix.ERANGE):
			buf = make([]uint32, size/4+1) // the kernel said how much it needs
		case errors.Is(e, unix.ENOPROTOOPT):
			return nil, false // before Linux 4.13: /proc it is
		default:
			return nil, true // unknown: no groups, so no membership by them
		}
	}
	return nil, true
}

type peerKey struct{}

// PeerFrom returns the peer of the request's connection.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}
