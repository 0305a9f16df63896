package systemd

import (
	"os"

	"github.com/coreos/go-systemd/v22/activation"
)

// ActivationFiles takes the sockets systemd passed by socket activation
// (LISTEN_FDS, LISTEN_FDNAMES, checked against LISTEN_PID), keyed by name,
// in the order they came, and removes the variables from the environment
// so supervised processes do not inherit them. The fds are close-on-exec;
// package notify hands them to the processes that name them. A socket
// without a name is keyed "unknown", as systemd names it.
func ActivationFiles() map[string][]*os.File {
	names := os.Getenv("LISTEN_FDNAMES")
	files := activation.Files(true)
	if len(files) == 0 {
		return nil
	}
	out := map[string][]*os.File{}
	for _, f := range files {
		name := f.Name()
		if names == "" {
			name = "unknown"
		}
		out[name] = append(out[name], f)
	}
	return out
}
