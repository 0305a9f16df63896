package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/rootless"
	"github.com/podsup/podsup/logs"
	"github.com/podsup/podsup/notify"
	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/sandbox/volume"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
	"github.com/podsup/podsup/systemd"
)

// Options are what a Go program (podsup up among them) chooses of a
// Stack. The zero value of each but Instance is usable.
type Options struct {
	// Instance names the stack's cgroups ("podsup-<Instance>"). A new
	// stack of the same instance kills and removes whatever an earlier,
	// crashed one left there (Recovered events), so two stacks running at
	// once must have different instances. Required. podsup up derives it
	// from its control socket, which only one podsup can hold.
	Instance string
	// Logger receives the stack's own lines: one per supervisor event,
	// warnings (no cgroups, no notify server) and debug notes. The zero
	// Logger logs nothing.
	Logger zerolog.Logger
	// Output receives every captured line, formatted as the
	// configuration's supervisor.log_format says (podsup up: its stdout).
	// nil keeps the lines only in the tails, followers and log_dir files.
	Output io.Writer
	// NoLogPrefix writes console lines to Output without their
	// "group/process | " prefix (podsup up --no-log-prefix).
	NoLogPrefix bool
	// QuoteOutput escapes, in console lines on Output, what a terminal
	// would act on: set it when Output is an operator's terminal.
	QuoteOutput bool
	// LogColor, when set, is the SGR sequence for the i-th process's
	// console prefix (podsup up on a terminal); nil for none.
	LogColor func(i int) string
	// RuntimeDir is the directory in which the notify server makes a
	// directory of its own for the sockets of readiness = "notify"
	// (podsup up: its control socket's). Default os.TempDir().
	RuntimeDir string
	// Journal sends the output of processes with log { journal = true } to
	// journald; set it only when journald is there (podsup up: when its
	// stderr is the journal). Without it such output is captured.
	Journal bool
	// ActivationFiles are socket-activation fds by name (podsup up:
	// systemd.ActivationFiles()), given to the processes whose sockets =
	// [...] names them. The stack does not close them.
	ActivationFiles map[string][]*os.File
	// Subreaper makes this process a child subreaper
	// (PR_SET_CHILD_SUBREAPER) when it is not PID 1 and the stack is the
	// first to start the process-wide reaper (see New): orphans of the
	// supervised processes then come back to it, are reaped and counted.
	// podsup up sets it. Off, an orphan that leaves its group's PID
	// namespace's reach goes to the host's init; its cgroup still kills
	// it with its group.
	Subreaper bool
	// Clock times the supervisor, its hooks and probes, and the notify
	// watchdogs; nil is the real clock.
	Clock clock.Clock
	// StateDir keeps the groups' volumes (an empty_dir without a medium
	// is a directory there) and their sandboxes' /etc/hosts and
	// /etc/resolv.conf. Default /var/lib/podsup/INSTANCE. What a crashed
	// stack of the same instance left there is removed by New.
	StateDir string
}

// Stack is what podsup up runs for a configuration: the supervisor over
// the layered runtime (readiness and socket activation, journal, output
// capture, sandboxes).
type Stack struct {
	sup      *supervisor.Supervisor
	top      supervisor.Runtime
	local    *SandboxRuntime
	stateDir string
	rt       *sandbox.Runtime
	hub      *logs.Hub
	notify   *notify.Server // nil when it could not be made
	log      zerolog.Logger

	runOnce  sync.Once
	ran      chan struct{} // closed when Run begins
	done     chan struct{} // closed when Run returned
	res      supervisor.Result
	runErr   error
	closeErr error
	closed   sync.Once
}

// New assembles the stack for cfg: nothing starts before Run. A cfg the
// stack cannot honour is refused (supervisor.New). The caller must Close
// the stack (Shutdown does) once Run returned, or if it never calls Run.
//
// # Process-wide effects
//
// A stack shares the process with its embedder, and two things it needs
// belong to the whole process:
//
//   - The first stack (or the first process start of package sandbox/proc)
//     installs package sandbox/proc's reaper: a goroutine that waits for the
//     exit of any child of the process (waitid on every pid, woken by the
//     kernel; in PID 1 it also catches SIGCHLD), reaps it and hands it to
//     whoever started that pid, counting the rest as orphans. From then on nothing else in the process may wait for a
//     child: os/exec's Cmd.Wait, Run, Output and CombinedOutput,
//     os.Process.Wait, or a wait4/waitpid of its own would lose exits to
//     the reaper or steal them from it ("waitid: no child processes"). A
//     program that must run commands itself starts them with
//     proc.Start, whose exits the reaper delivers. An embedder that
//     already reaps its children in its own way cannot embed a stack.
//   - With Options.Subreaper, the process becomes a child subreaper;
//     without it, it does not (unless a reaper started earlier chose so).
//     PID 1 reaps orphans in any case.
//
// The stack's sandboxes are held by this program re-executed
// (/proc/self/exe), and socket activation re-executes it as a shim: a
// program that embeds a stack calls ReexecMain first thing in main.
func New(cfg spec.Config, opts Options) (*Stack, error) {
	if opts.Instance == "" {
		return nil, errors.New("unable to assemble the runtime stack: Options.Instance is required")
	}
	proc.StartReaperAs(opts.Subreaper)
	rt, err := sandbox.NewRuntime(sandbox.Options{Instance: opts.Instance, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("unable to assemble the runtime stack: %w", err)
	}
	if w := rootlessWarning(rt); w != "" {
		opts.Logger.Warn().Msg(w)
	}
	if opts.StateDir == "" {
		opts.StateDir = defaultStateDir(opts.Instance)
	}
	// After NewRuntime killed what a crashed stack left running: nothing
	// uses its volumes any more.
	if err := volume.RemoveAll(opts.StateDir); err != nil {
		_ = rt.Close()
		return nil, fmt.Errorf("unable to assemble the runtime stack: removing what an earlier run left: %w", err)
	}
	s, err := assemble(cfg, opts, rt)
	if err != nil {
		_ = rt.Close() // deletes what NewRuntime made
		return nil, err
	}
	return s, nil
}

// assemble builds the layers over rt and the supervisor on them.
func assemble(cfg spec.Config, opts Options, rt *sandbox.Runtime) (*Stack, error) {
	hub, err := logs.NewHub(logs.HubOptions{Format: cfg.Supervisor.LogFormat, Out: opts.Output, NoPrefix: opts.NoLogPrefix, Quote: opts.QuoteOutput, PrefixColor: opts.LogColor,
		Dir: cfg.Supervisor.LogDir, Clock: opts.Clock, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("unable to capture output: %w", err)
	}
	dir := opts.RuntimeDir
	if dir == "" {
		dir = os.TempDir()
	}
	srv, err := notify.NewServer(notify.Options{Dir: dir, Clock: opts.Clock, Logger: opts.Logger})
	if err != nil {
		opts.Logger.Warn().Err(err).Msg("no notify server: a configuration with readiness = notify or fd:N is refused")
		srv = nil
	}
	// Every group runs in a cgroup where one can be made, a group without
	// a sandbox block in a cgroup-only sandbox: its processes' trees die
	// whole (a setsid daemon too), and a stack restarted after a crash
	// finds them. Each process keeps its cgroup across restarts, so a
	// restart costs what a host spawn does (docs/benchmarks.md). Without
	// cgroups NewRuntime said so once and process groups are used.
	local := NewSandboxRuntime(rt, true)
	local.SetStateDir(opts.StateDir)
	top := layers(local, hub, opts.Journal, srv, opts.ActivationFiles)
	var journal systemd.JournalSender // hooks' output goes where their process's does
	if opts.Journal {
		journal = systemd.JournalSend
	}
	sup, err := supervisor.New(cfg, supervisor.Options{Logger: opts.Logger, Runtime: top, Clock: opts.Clock,
		Hooks: supervisor.DefaultHookRunner{Clock: opts.Clock, Output: hookOutput(hub, journal)}})
	if err != nil {
		stopNotify(srv)
		_ = hub.Close()
		return nil, err
	}
	if srv != nil {
		srv.SetSink(sup)
	}
	return &Stack{sup: sup, top: top, local: local, stateDir: opts.StateDir, rt: rt, hub: hub, notify: srv, log: opts.Logger,
		ran: make(chan struct{}), done: make(chan struct{})}, nil
}

// layers is the runtime the supervisor runs on: around local, outermost
// first, readiness protocols and socket activation (package notify,
// serving them with srv), journal output when journal is set, output
// capture (package logs). It has every capability of
// supervisor.Capabilities, Journal only when journal is set (journal = true
// falls back to capture) and ReadinessProtocols only with a srv, so the
// supervisor refuses nothing of a valid configuration while the notify
// server runs.
func layers(local *SandboxRuntime, hub *logs.Hub, journal bool, srv *notify.Server, sockets map[string][]*os.File) supervisor.Runtime {
	var started supervisor.Runtime = newCapturingRuntime(local, hub)
	if journal {
		started = &systemd.JournalRuntime{Next: started, Send: systemd.JournalSend}
	}
	if sockets == nil {
		// None passed: a process that names one is refused with the
		// configuration (supervisor.Capabilities), not at every start.
		sockets = map[string][]*os.File{}
	}
	return &notify.Runtime{Next: started, Server: srv, Sockets: sockets}
}

// Start is New followed by Run(ctx) in a goroutine of its own: the groups
// are starting when it returns, and ctx's end stops them as Shutdown
// does (gracefully). Wait returns what Run did; Shutdown stops them and
// closes the stack, and is owed in any case (or Close once Wait
// returned). The process-wide effects are New's.
func Start(ctx context.Context, cfg spec.Config, opts Options) (*Stack, error) {
	s, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	go func() { _, _ = s.Run(ctx) }()
	<-s.ran
	return s, nil
}

// Run starts every group and supervises them until Shutdown, ctx's end or
// a critical process's end (supervisor.Supervisor.Run), then returns once
// no process is left. It first publishes one Recovered event per group of
// which New found (and killed) what a crashed predecessor of the same
// instance left. It runs once; a second call returns supervisor.ErrRunning.
func (s *Stack) Run(ctx context.Context) (supervisor.Result, error) {
	first := false
	s.runOnce.Do(func() { first = true })
	if !first {
		return supervisor.Result{}, supervisor.ErrRunning
	}
	close(s.ran)
	defer close(s.done)
	bg, stopNotify := context.WithCancel(context.Background())
	notifyDone := make(chan struct{})
	go func() {
		defer close(notifyDone)
		if s.notify == nil {
			return
		}
		if err := s.notify.Run(bg); err != nil {
			s.log.Error().Err(err).Msg("notify server stopped")
		}
	}()
	publishRecovered(s.sup, s.rt.Recovered())
	s.res, s.runErr = s.sup.Run(ctx)
	stopNotify() // removes the notify sockets
	<-notifyDone
	return s.res, s.runErr
}

// Wait waits until Run returned and returns what it did.
func (s *Stack) Wait() (supervisor.Result, error) {
	<-s.done
	return s.res, s.runErr
}

// Shutdown stops every group gracefully, each process through its pre_stop
// hook and grace period, waits until none is left, and closes the stack;
// when ctx ends first, what is still stopping is SIGKILLed at once and
// Shutdown returns ctx's error once it has ended. It is
// supervisor.Supervisor.Shutdown, followed by Close. A stack that never
// ran is closed.
func (s *Stack) Shutdown(ctx context.Context) error {
	err := s.sup.Shutdown(ctx)
	if s.running() {
		// Run may have begun without having started the supervisor yet:
		// that one then stops at once, and ctx still bounds the stop.
		select {
		case <-s.done:
		case <-ctx.Done():
			if e := s.sup.Shutdown(ctx); err == nil {
				err = e
			}
			<-s.done
		}
	}
	return errors.Join(err, s.Close())
}

// running reports whether Run was called.
func (s *Stack) running() bool {
	select {
	case <-s.ran:
		return true
	default:
		return false
	}
}

// Close deletes every sandbox and cgroup the stack made and stops its
// output capture, after Run returned (or when it never runs). It is
// idempotent.
func (s *Stack) Close() error {
	s.closed.Do(func() {
		if !s.running() {
			stopNotify(s.notify)
		}
		herr := s.hub.Close() // the last output drains first
		rerr := s.rt.Close()
		// Released groups removed their own; a group never released
		// (Run never ran to its end) leaves its volumes to this.
		verr := volume.RemoveAll(s.stateDir)
		s.closeErr = errors.Join(herr, rerr, verr)
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("closing the stack: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// stopNotify frees a notify server that never ran (its sockets'
// directory, its epoll fds): its Run cleans up as it returns.
func stopNotify(srv *notify.Server) {
	if srv == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = srv.Run(ctx)
}

// Reload moves the stack to cfg (supervisor.Reload) and rewrites the
// files of the config and secret volumes of every group the reload kept
// (a group it recreates gets them with its new sandbox): a running
// process sees them change without a restart, unless the volume says
// restart_on_change, which restarts the running processes that mount
// it. A volume that cannot be written is an error after the reload took
// effect.
func (s *Stack) Reload(cfg spec.Config) (spec.Changes, error) {
	ch, err := s.sup.Reload(cfg)
	if err != nil {
		return ch, err
	}
	var errs []error
	for _, g := range cfg.Groups {
		if slices.Contains(ch.AddedGroups, g.Name) || slices.Contains(ch.ChangedGroups, g.Name) {
			continue
		}
		changed, err := s.local.UpdateVolumes(g.Name, g.Volumes)
		if err != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", g.Name, err))
		}
		if err := s.restartOnChange(g, changed); err != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", g.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ch, fmt.Errorf("the configuration is applied, but not every volume could be updated: %w", err)
	}
	return ch, nil
}

// restartOnChange restarts g's running processes (sidecars too; an init
// that ran to completion is not running) that mount a volume of changed
// that says restart_on_change: a requested restart, as podsup restart
// does it (X7).
func (s *Stack) restartOnChange(g spec.Group, changed []string) error {
	restart := map[string]bool{}
	for _, name := range changed {
		if v := g.Volume(name); v != nil && v.RestartOnChange {
			restart[name] = true
		}
	}
	if len(restart) == 0 {
		return nil
	}
	st, _ := s.sup.Status().Group(g.Name)
	var errs []error
	for _, list := range [][]spec.Process{g.Init, g.Processes} {
		for _, p := range list {
			i := slices.IndexFunc(p.VolumeMounts, func(vm spec.VolumeMount) bool { return restart[vm.Volume] })
			if i < 0 {
				continue
			}
			if ps, ok := st.Process(p.Name); !ok || ps.State != lifecycle.StateRunning {
				continue // its next start mounts the new files
			}
			by := "reload: volume " + p.VolumeMounts[i].Volume + " changed (restart_on_change)"
			if err := s.sup.Restart(g.Name, p.Name, supervisor.RequestOptions{Requester: by}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// SetPeers gives group's sandbox an /etc/hosts line for each group→address
// pair of peers: how groups on one podsup bridge reach each other by
// name. The network layer calls it when an address is given or taken.
func (s *Stack) SetPeers(group string, peers map[string]string) error {
	var sb *spec.Sandbox
	for _, g := range s.sup.Config().Groups {
		if g.Name == group {
			sb = g.Sandbox
		}
	}
	return s.local.SetPeers(group, sb, peers)
}

// Supervisor is the stack's supervisor: status, events, requests, reload.
func (s *Stack) Supervisor() *supervisor.Supervisor { return s.sup }

// Logs is the stack's captured output: tails and followers.
func (s *Stack) Logs() *logs.Hub { return s.hub }

// Runtime is the outermost layer of the runtime the supervisor runs on;
// its Spawner starts a command in a group's sandbox (podsup exec).
func (s *Stack) Runtime() supervisor.Runtime { return s.top }

// GroupNetwork is a group sandbox's attachment to a CNI network.
type GroupNetwork struct {
	Network, ContainerID, Interface string
	IPs, Gateways                   []string
	// Result is the plugins' ADD result, CNI's JSON.
	Result json.RawMessage
	// Check is the plugins' CHECK error; nil when it passed.
	Check error
}

// Network returns group's CNI attachment with a CHECK of it run now; ok is
// false for a group with no sandbox attached by CNI plugins.
func (s *Stack) Network(ctx context.Context, group string) (n GroupNetwork, ok bool) {
	st, ok, err := s.rt.NetworkStatus(group)
	if err != nil || !ok {
		return GroupNetwork{}, false
	}
	return GroupNetwork{Network: st.Network, ContainerID: st.ContainerID, Interface: st.Interface,
		IPs: st.IPs, Gateways: st.Gateways, Result: st.Result, Check: s.rt.CheckNetwork(ctx, group)}, true
}

// publishRecovered tells, one event per group, what NewRuntime found and
// killed of a stack of this instance that died without stopping its
// groups (SIGKILL, OOM).
func publishRecovered(sup *supervisor.Supervisor, found []sandbox.Recovered) {
	for _, r := range found {
		if !spec.ValidName(r.Sandbox) {
			continue // podsup's own leaf, not a group; logged by NewRuntime
		}
		e := lifecycle.Event{Type: lifecycle.EventNormal, Reason: lifecycle.EventRecovered, Group: r.Sandbox,
			Message: "removed the empty cgroup left by a previous podsup (" + r.Cgroup + ")"}
		if n := len(r.Pids); n > 0 {
			e.Type = lifecycle.EventWarning
			e.Message = fmt.Sprintf("killed %d %s left by a previous podsup (cgroup %s)", n, plural(n, "process", "processes"), r.Cgroup)
		}
		sup.Publish(e)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ReexecMain runs this process as what the stack re-executed it to be
// (/proc/self/exe with a hidden first argument) and exits: a sandbox's
// holder (sandbox.HolderArg) or the socket-activation shim that sets
// LISTEN_PID before it execs a process (notify.ListenPIDCommand). It
// returns at once in any other process. A program that embeds a Stack
// calls it first thing in main, before flags are parsed or signals
// handled: the holder and the shim do their own.
func ReexecMain() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case sandbox.HolderArg:
		os.Exit(sandbox.HolderMain())
	case notify.ListenPIDCommand:
		os.Exit(notify.ListenPIDMain(os.Args[2:]))
	}
}

// defaultStateDir is where the groups' volumes live: under /var/lib for a
// root podsup, as kubelet's pods do, and for a rootless one (whose root
// is a normal user on the host, who cannot write there) under the user's
// XDG_RUNTIME_DIR, else ~/.local/state, as podman's rootless storage is
// the user's own.
func defaultStateDir(instance string) string {
	if uid, ok := rootless.Inner(); ok {
		if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
			return filepath.Join(d, "podsup", instance)
		}
		home, err := os.UserHomeDir()
		if err != nil { // no $HOME: the user's entry in the passwd database
			if u, uerr := user.LookupId(strconv.Itoa(uid)); uerr == nil && u.HomeDir != "" {
				home, err = u.HomeDir, nil
			}
		}
		if err == nil {
			if fi, serr := os.Stat(home); serr == nil && fi.IsDir() {
				return filepath.Join(home, ".local", "state", "podsup", instance)
			}
		}
		// No home either (a system user): a directory of the user's own in
		// /tmp, as tmux and ssh-agent make one, refused if someone else
		// made it first.
		if d, ok := ownPrivateDir(filepath.Join(os.TempDir(), "podsup-"+strconv.Itoa(uid))); ok {
			return filepath.Join(d, instance)
		}
	}
	return filepath.Join("/var/lib/podsup", instance)
}

// ownPrivateDir makes dir mode 0700, or finds it made: a directory, not a
// link, of this process's euid, with no access for group or others.
func ownPrivateDir(dir string) (string, bool) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return "", false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return "", false
	}
	return dir, true
}
