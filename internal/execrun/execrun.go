// Package execrun owns running one short-lived command to completion for exec
// probes and exec hooks: argv in, exit code and a capped copy of the combined
// stdout+stderr out, with a timeout that kills the command's whole process
// tree (docs/semantics.md P10, X5, X10).
//
// It is podsup's one path for running a command to completion: on the host
// (proc.Start) or inside a sandbox (SandboxRunner.Spawn set to the
// runtime's Spawn), for probes, hooks and tests alike; package sandbox has
// no second one.
//
// It never waits for a process itself: processes are started through package
// proc, whose one reaper owns wait4 (see package proc). The Runner
// interface is the seam probes and hooks depend on, so their tests can fake
// it and so a group's sandbox can supply its own spawner (X6: exec
// probes and hooks run inside the group's sandbox).
package execrun

import (
	"context"
	"errors"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

// MaxOutput is how much combined stdout+stderr a run keeps (P10: 10 KiB).
// The rest is read and discarded so the command never blocks on a full pipe.
const MaxOutput = 10 << 10

// Request is one command to run.
type Request struct {
	// Argv is the command; Argv[0] is looked up in PATH when it has no slash.
	Argv []string
	proc.RunAs
	// Security narrows the command as its process is narrowed (an exec
	// probe or hook of a process with a security context); nil leaves it
	// podsup's.
	Security *proc.Security
	// Timeout bounds the run; 0 means no bound but the context's.
	Timeout time.Duration
	// OutputLimit caps the kept output; 0 means MaxOutput.
	OutputLimit int
}

// Result is what a command did.
type Result struct {
	// ExitCode is the exit status, or 128+N when signal N killed it.
	ExitCode int
	// Output is the first OutputLimit bytes of combined stdout+stderr.
	Output []byte
	// Truncated says output was discarded past OutputLimit.
	Truncated bool
	// TimedOut says the command outlived Request.Timeout and its process
	// tree was killed; ExitCode is then that of the kill (usually 137).
	TimedOut bool
	// Duration is from just before the start until the exit was known.
	Duration time.Duration
}

// Runner runs a command to completion. A non-nil error means the command
// could not be run, or the context ended before it finished (its tree is
// killed then too); a command that ran and failed, or timed out, is a
// Result with a nil error.
type Runner interface {
	Run(ctx context.Context, req Request) (Result, error)
}

// ErrEmptyCommand is returned for a Request without Argv.
var ErrEmptyCommand = errors.New("empty command")
