package systemd

import (
	"context"
	"io"
	"os"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/supervisor"
)

// JournalRuntime is a supervisor.Runtime that sends the output of every
// process with log { journal = true } to journald (ProcessWriter), when
// podsup runs under systemd with the journal (StderrIsJournal). Other
// processes, and processes whose output another layer already captures
// (Stdout or Stderr set), go straight to Next.
//
// Each such instance costs two pipes and two goroutines blocked in read
// until the instance and everything it forked closed their ends.
//
// Everything else of supervisor.Runtime it passes on to Next, adding
// Journal to Next's capabilities.
type JournalRuntime struct {
	// Next starts the processes; it must be set.
	Next supervisor.Runtime
	Send JournalSender
}

var _ supervisor.Runtime = (*JournalRuntime)(nil)

// Start starts req, its output going to the journal when it asks for it.
func (j *JournalRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	if !req.Process.Log.Journal || req.Stdout != nil || req.Stderr != nil {
		return j.Next.Start(ctx, req)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
	}
	req.Stdout, req.Stderr = outW, errW
	inst, err := j.Next.Start(ctx, req)
	outW.Close() // the process has its copies
	errW.Close()
	for _, s := range []struct {
		r    *os.File
		name string
	}{{outR, "stdout"}, {errR, "stderr"}} {
		w := NewProcessWriter(j.Send, req.Group, req.Process.Name, req.InstanceID, s.name)
		go func() {
			_, _ = io.Copy(w, s.r) // ends at EOF: every writer closed its end
			_ = w.Close()
			_ = s.r.Close()
		}()
	}
	return inst, err
}

// Spawner passes Next's sandbox spawner on (X6).
func (j *JournalRuntime) Spawner(group string) func(*proc.Cmd) (*proc.Process, error) {
	return j.Next.Spawner(group)
}

// ReleaseGroup passes the group's release on to Next.
func (j *JournalRuntime) ReleaseGroup(group string) { j.Next.ReleaseGroup(group) }

// ReleaseProcess passes the release of a process a reload removed on to
// Next.
func (j *JournalRuntime) ReleaseProcess(group, process string) {
	j.Next.ReleaseProcess(group, process)
}

// Capabilities is Next's with the journal added.
func (j *JournalRuntime) Capabilities() supervisor.Capabilities {
	c := j.Next.Capabilities()
	c.Journal = true
	return c
}

// ProbeHost passes Next's probe host on (supervisor.ProbeHoster).
func (j *JournalRuntime) ProbeHost(group string) string { return supervisor.ProbeHostOf(j.Next, group) }
