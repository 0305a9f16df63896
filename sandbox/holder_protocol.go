package sandbox

import "github.com/podsup/podsup/spec"

// HolderArg is argv[1] of a sandbox holder: podsup re-executed as
// "/proc/self/exe __podsup_init". A binary that creates sandboxes must
// dispatch it first thing in main, before parsing flags:
//
//	if len(os.Args) > 1 && os.Args[1] == sandbox.HolderArg {
//		os.Exit(sandbox.HolderMain())
//	}
const HolderArg = "__podsup_init"

// holderControlFD is where the holder finds its end of the control socket
// (Cmd.ExtraFiles[0]).
const holderControlFD = 3

// The control protocol between podsup and a holder. One stream socket
// (socketpair), one JSON object per line:
//
//	podsup                                  holder (PID 1 of the sandbox)
//	------                                  ------
//	socketpair; Start(holder, Cloneflags)
//	holderConfig ─────────────────────────► read config
//	                                        make every mount private,
//	                                        mounts, pivot_root, read-only
//	                                        root, masked paths, hostname, lo up
//	             ◄───────────────────────── holderReply{} (or {Error})
//	namespace thread: setns(pidfd, flags)
//	... processes forked into the sandbox; the holder reaps their orphans ...
//	close socket (Delete, or podsup died) ► read: EOF → exit 0; as PID 1 its
//	                                        exit makes the kernel kill every
//	                                        process left in the PID namespace
//
// EOF rather than Pdeathsig ends the holder: Pdeathsig fires when the
// thread that forked it exits, which in Go is any thread (go.dev/issue/27505),
// while the socket closes exactly when podsup (every copy of its fd) is gone.
type holderConfig struct {
	Mount    bool         `json:"mount,omitempty"`
	UTS      bool         `json:"uts,omitempty"`
	Net      bool         `json:"net,omitempty"`
	Hostname string       `json:"hostname,omitempty"`
	Mounts   []spec.Mount `json:"mounts,omitempty"`
	Rootfs   string       `json:"rootfs,omitempty"`
	// ReadOnlyRoot, PrivateTmp and MaskProc are spec.Sandbox's
	// ReadOnlyRootFilesystem, PrivateTmp and MaskProc().
	ReadOnlyRoot bool `json:"read_only_root,omitempty"`
	PrivateTmp   bool `json:"private_tmp,omitempty"`
	MaskProc     bool `json:"mask_proc,omitempty"`
	// UserNS says the holder was cloned into a user namespace of its
	// own: it starts the sandbox's processes (holder_userns.go). PID then
	// asks it for a PID namespace, which it makes for its children.
	UserNS bool `json:"user_ns,omitempty"`
	PID    bool `json:"pid,omitempty"`
}

// holderReply ends the setup: an empty Error means ready.
type holderReply struct {
	Error string `json:"error,omitempty"`
}
