package api

import (
	"net"
	"os"
	"syscall"
)

// checkServer refuses a server that is neither root nor the client's own
// user, before a byte is sent to it: whoever can put a socket at the path
// the client uses (a directory they own, a stale path) would otherwise
// hear its requests, an exec's command line among them, and answer them.
// SO_PEERCRED gives the credentials of the process that listened.
func checkServer(conn net.Conn, socket string) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return &UntrustedServerError{Socket: socket, ServerUID: -1, YourUID: os.Geteuid(), cause: credErr}
	}
	if me := os.Geteuid(); cred.Uid != 0 && int(cred.Uid) != me {
		return &UntrustedServerError{Socket: socket, ServerUID: int(cred.Uid), YourUID: me}
	}
	return nil
}
