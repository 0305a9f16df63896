package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Peer is who is on the other end of a connection, as the kernel says.
type Peer struct {
	PID, UID, GID int
}

func (p Peer) String() string { return fmt.Sprintf("pid=%d uid=%d gid=%d", p.PID, p.UID, p.GID) }

// Policy decides which peers may use the API.
type Policy struct {
	// OwnerUID is podsup's own uid; root and this uid are always trusted.
	OwnerUID int
	// GroupID, when >= 0, also trusts peers whose primary or supplementary
	// groups include it.
	GroupID int
}

// Allows reports whether the peer may use the API.
func (pol Policy) Allows(p Peer) bool {
	if p.UID == 0 || p.UID == pol.OwnerUID {
		return true
	}
	if pol.GroupID < 0 {
		return false
	}
	if p.GID == pol.GroupID {
		return true
	}
	for _, g := range supplementaryGroups(p.PID) {
		if g == pol.GroupID {
			return true
		}
	}
	return false
}

// supplementaryGroups reads the peer's groups from /proc: what the process
// actually has, not what the user database says it might.
func supplementaryGroups(pid int) []int {
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

// peerOf asks the kernel who is connected on c.
func peerOf(c net.Conn) (Peer, error) {
	if lc, ok := c.(*limitConn); ok {
		c = lc.Conn
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("not a unix socket connection: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if credErr != nil {
		return Peer{}, credErr
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, nil
}

type peerKey struct{}

// PeerFrom returns the peer of the request's connection.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}
