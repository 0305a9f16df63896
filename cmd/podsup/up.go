package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api/apiserver"
	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/internal/logging"
	"github.com/podsup/podsup/internal/memtrim"
	"github.com/podsup/podsup/logs"
	"github.com/podsup/podsup/notify"
	"github.com/podsup/podsup/pid1"
	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/systemd"
)

func newUpCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "up [-f FILE]",
		Short: "Run the groups of a configuration file in the foreground",
		Long: `Run every group of an HCL configuration in the foreground until SIGTERM or
SIGINT (or "podsup shutdown"), then stop them all in parallel, each process
through its pre_stop hook and grace period, and exit 0. A second SIGTERM or
SIGINT at least 1s after the first skips to SIGKILL; one sooner is taken as
a duplicate of the first (as "timeout" or a container runtime may send) and
changes nothing. SIGHUP (or "podsup reload") re-reads the file: if it
is valid, only groups and processes whose spec changed are restarted; if not,
the running configuration stays and the error is logged.

As PID 1 (in a container) podsup also reaps every orphan.

Without -f, podsup looks for ./podsup.hcl, then /etc/podsup/podsup.hcl.
The control socket is supervisor.socket from the file, or --socket /
PODSUP_SOCKET, or by default /run/podsup/podsup.sock for root and
$XDG_RUNTIME_DIR/podsup.sock for other users (where the CLI looks too).`,
		Example: `  podsup up -f examples/web.hcl
  podsup status            # in another terminal
  podsup logs -f web/api`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			socket := ""
			if cmd.Flags().Changed("socket") || os.Getenv("PODSUP_SOCKET") != "" {
				socket, _ = cmd.Flags().GetString("socket")
			}
			code, err := runUp(file, socket)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "configuration file (default ./podsup.hcl, then /etc/podsup/podsup.hcl)")
	return cmd
}

// daemon is a running `podsup up`.
type daemon struct {
	path    string
	log     zerolog.Logger
	sup     *supervisor.Supervisor
	runtime *supervisor.LocalRuntime
	svc     *systemd.Service // podsup's sd_notify stream (nothing sent outside systemd)

	// level is podsup's own log level, which a reload may change.
	level *logLevel
	// socketOverride is --socket / PODSUP_SOCKET, which wins over the
	// file's supervisor.socket at every reload, as it did at start.
	socketOverride string

	mu  sync.Mutex // serialises reloads; guards cfg
	cfg *spec.Config
}

func runUp(file, socketOverride string) (int, error) {
	path, err := config.Find(file)
	if err != nil {
		return 0, err
	}
	cfg, err := loadConfig(path, os.Stderr)
	if err != nil {
		return 1, nil
	}
	if socketOverride != "" {
		cfg.Supervisor.Socket = socketOverride
	}
	// Before anything changes what a re-executed podsup would see.
	fdWarning := fitFileLimit(cfg)
	// Under systemd (package systemd): take NOTIFY_SOCKET, WATCHDOG_* and
	// LISTEN_* out of the environment before anything starts, so no
	// supervised process inherits them.
	notifier, watchdog, notifyErr := systemd.NotifierFromEnv()
	listenFiles := systemd.ActivationFiles()
	// Every other fd podsup inherited stays podsup's: the activation fds
	// reach only the processes that name them (sockets = [...]).
	pid1.CloseInheritedOnExec()
	journalOn := systemd.StderrIsJournal()
	var logSink io.Writer = os.Stderr
	logSettings := cfg.Supervisor
	if journalOn { // podsup's own lines go to journald with fields
		logSink = systemd.LogWriter{Send: systemd.JournalSend}
		logSettings.LogFormat = "json"
	}
	logOut := logging.NewAsync(logSink, 0)
	defer logOut.Close() // flush before exit
	log, level := newLogger(logSettings, logOut)
	if notifyErr != nil {
		log.Warn().Err(notifyErr).Msg("systemd's watchdog is not fed")
	}
	if fdWarning != "" {
		log.Warn().Msg(fdWarning)
	}

	// Catch before anything starts, so no signal is lost.
	// They stay caught until podsup exits (handleUpSignals).
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	proc.StartReaper()

	socket := cfg.Supervisor.EffectiveSocket()
	gid := -1
	if g := cfg.Supervisor.SocketGroup; g != "" {
		if gid, err = lookupGID(g); err != nil {
			return 0, fmt.Errorf("supervisor.socket_group: %w", err)
		}
	}
	// The socket first: it is the instance's lock. A podsup still running
	// on it makes this one fail here, before NewRuntime would take its
	// cgroups for a crashed predecessor's and kill its processes.
	l, err := apiserver.Listen(socket, gid)
	if err != nil {
		return 0, err
	}
	defer os.Remove(socket)
	rt, err := sandbox.NewRuntime(sandbox.Options{Instance: instanceName(socket), Logger: log})
	if err != nil {
		return 0, err
	}
	defer rt.Close() // deletes every sandbox and cgroup left
	// Every group runs in a cgroup where podsup can create one, a group
	// without a sandbox block in a cgroup-only sandbox: its processes' trees
	// die whole (a setsid daemon too), and a podsup restarted after a crash
	// finds them. Each process keeps its cgroup across restarts, so a
	// restart costs what a host spawn does (docs/benchmarks.md). Without
	// cgroups NewRuntime said so once and process groups are used.
	runtime := supervisor.NewLocalRuntime(rt, true)
	hub, err := logs.NewHub(logs.HubOptions{Format: cfg.Supervisor.LogFormat, Out: os.Stdout, Dir: cfg.Supervisor.LogDir, Logger: log})
	if err != nil {
		return 0, err
	}
	defer hub.Close() // after the supervisor: the last output drains first
	bg, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	notifySrv, err := notify.NewServer(notify.Options{Dir: filepath.Dir(socket), Logger: log})
	if err != nil {
		log.Warn().Err(err).Msg("no notify server: a configuration with readiness = notify or fd:N is refused")
		notifySrv = nil
	}
	stack := runtimeStack(runtime, hub, journalOn, notifySrv, listenFiles)
	sup, err := supervisor.New(*cfg, supervisor.Options{Logger: log, Runtime: stack})
	if err != nil {
		return 0, err
	}
	notifyDone := make(chan struct{})
	if notifySrv != nil {
		notifySrv.SetSink(sup)
		go func() {
			defer close(notifyDone)
			if err := notifySrv.Run(bg); err != nil {
				log.Error().Err(err).Msg("notify server stopped")
			}
		}()
	} else {
		close(notifyDone)
	}
	defer func() { stopBackground(); <-notifyDone }() // removes the notify sockets
	svc := systemd.NewService(sup, systemd.Options{Notifier: notifier, ReadyWhen: cfg.Supervisor.NotifyReady, Watchdog: watchdog, Logger: log})
	defer notifier.Close()
	go svc.Run(bg)
	d := &daemon{path: path, log: log, level: level, socketOverride: socketOverride, sup: sup, cfg: cfg, runtime: runtime, svc: svc}
	history := supervisor.NewHistory(sup, 0)
	defer history.Close()
	publishRecovered(sup, rt.Recovered())

	srv := apiserver.New(apiserver.Backend{
		Supervisor: sup, History: history, Version: version,
		Reload: d.reload,
		Exec:   d.exec,
		Logs:   hubLogs{hub},
	}, apiserver.Policy{OwnerUID: os.Getuid(), GroupID: gid}, log)
	go func() {
		if err := srv.Serve(l); err != nil {
			log.Error().Err(err).Msg("control socket stopped")
		}
	}()
	defer srv.Shutdown(context.Background())
	if addr := cfg.Supervisor.MetricsListen; addr != "" {
		stopMetrics, err := serveMetrics(addr, srv.Metrics(), log)
		if err != nil {
			return 0, err
		}
		defer stopMetrics()
	}
	log.Info().Str("config", path).Str("socket", socket).Int("groups", len(cfg.Groups)).Msg("podsup up")

	reloadOnSignal := func() {
		if _, err := d.reload(); err != nil {
			log.Error().Msg("reload failed, the running configuration stays:\n" + err.Error())
		}
	}
	// sup.Shutdown's second call escalates to SIGKILL (X9).
	go handleUpSignals(sigs, clock.Real{}, reloadOnSignal, func() { sup.Shutdown(nil) }, func() { sup.Shutdown(nil) }, log)
	// Start-up is over: give back the executable's pages it alone needed
	// (docs/benchmarks.md, S2). The first events of Run fault in what the
	// steady state uses.
	go func() {
		time.Sleep(time.Second)
		memtrim.TrimExecutable()
	}()
	res, err := sup.Run(context.Background())
	svc.Stop() // STOPPING=1 is out before podsup exits, whoever asked
	if err != nil {
		return 0, err
	}
	if res.Critical != nil {
		log.Warn().Int("exit_code", res.ExitCode).Msg("a critical process ended: podsup exits with its code")
	}
	return res.ExitCode, nil
}

// runtimeStack is the runtime podsup up supervises with: around local,
// outermost first, readiness protocols and socket activation (package
// notify, serving them with srv), journal output when stderr is the
// journal, output capture (package logs). It has every capability of
// supervisor.Capabilities, Journal only when journal is set (journal = true
// falls back to capture) and ReadinessProtocols only with a srv, so the
// supervisor refuses nothing of a valid configuration while the notify
// server runs.
func runtimeStack(local *supervisor.LocalRuntime, hub *logs.Hub, journal bool, srv *notify.Server, sockets map[string][]*os.File) supervisor.Runtime {
	var started supervisor.Runtime = newCapturingRuntime(local, hub)
	if journal {
		started = &systemd.JournalRuntime{Next: started, Send: systemd.JournalSend}
	}
	return &notify.Runtime{Next: started, Server: srv, Sockets: sockets}
}

// publishRecovered tells, one event per group, what NewRuntime found and
// killed of a podsup of this instance that died without stopping its
// groups (SIGKILL, OOM).
func publishRecovered(sup *supervisor.Supervisor, found []sandbox.Recovered) {
	for _, r := range found {
		if !spec.ValidName(r.Sandbox) {
			continue // podsup's own leaf, not a group; logged by NewRuntime
		}
		e := supervisor.Event{Type: supervisor.EventNormal, Reason: supervisor.EventRecovered, Group: r.Sandbox,
			Message: "removed the empty cgroup left by a previous podsup (" + r.Cgroup + ")"}
		if n := len(r.Pids); n > 0 {
			e.Type = supervisor.EventWarning
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

// reload re-reads the file; on any error the running configuration stays.
// Under systemd it is bracketed by RELOADING=1 and READY=1.
func (d *daemon) reload() (string, error) {
	var msg string
	err := d.svc.Reload(func() error {
		var err error
		msg, err = d.applyFile()
		return err
	})
	return msg, err
}

// exec runs a command in a group's sandbox (on the host for a group
// without one), streaming its output, for `podsup exec`; given a process,
// in that process's context (execCmd). It ends with ctx: a client that
// goes away takes the command's tree with it.
func (d *daemon) exec(ctx context.Context, group, process string, argv []string, stdout, stderr io.Writer) (int, error) {
	d.mu.Lock()
	var g *spec.Group
	for i := range d.cfg.Groups {
		if d.cfg.Groups[i].Name == group {
			g = &d.cfg.Groups[i]
		}
	}
	d.mu.Unlock()
	if g == nil {
		return -1, fmt.Errorf("no group %q", group)
	}
	cmd, err := execCmd(g, process, argv)
	if err != nil {
		return -1, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return -1, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	p, err := d.runtime.Spawner(group)(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		fmt.Fprintf(stderr, "podsup: %v\n", err)
		return proc.ExitCodeForStartError(err), nil
	}
	var copied sync.WaitGroup
	for _, c := range []struct {
		r *os.File
		w io.Writer
	}{{outR, stdout}, {errR, stderr}} {
		copied.Add(1)
		go func() {
			defer copied.Done()
			defer c.r.Close()
			_, _ = io.Copy(c.w, c.r)
		}()
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.KillTree(syscall.SIGKILL)
		<-p.Done()
	}
	// A background child may hold the pipes open: give the output a
	// moment to drain, then stop reading.
	drain := time.AfterFunc(time.Second, func() { outR.Close(); errR.Close() })
	copied.Wait()
	drain.Stop()
	return p.Exit().Code(), nil
}

// loadConfig loads path, printing diagnostics to w on error.
func loadConfig(path string, w io.Writer) (*spec.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			_ = ce.Print(w)
		} else {
			fmt.Fprintln(w, "podsup:", err)
		}
		return nil, err
	}
	return cfg, nil
}

// newLogger is podsup's own log, as the supervisor block asks. w should
// not block (an Async): groups' workers log their events through it. The
// level is applied by the returned logLevel, so that a reload can change
// it in every copy of the logger.
func newLogger(s spec.Supervisor, w io.Writer) (zerolog.Logger, *logLevel) {
	// Sub-second timestamps; set here, in the binary, never in a library.
	zerolog.TimeFieldFormat = time.RFC3339Nano
	out := w
	if s.LogFormat != "json" {
		out = &logging.Console{Out: w}
	}
	level := &logLevel{out: out}
	level.set(s.LogLevel)
	return zerolog.New(level).Level(zerolog.TraceLevel).With().Timestamp().Logger(), level
}

func lookupGID(name string) (int, error) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, err
	}
	return strconv.Atoi(g.Gid)
}

// instanceName names this podsup's cgroups after its control socket: two
// podsups cannot share a socket, and a podsup restarted with the same
// configuration finds (and sweeps) what a crashed predecessor left.
func instanceName(socket string) string {
	h := fnv.New32a()
	h.Write([]byte(socket))
	return fmt.Sprintf("%08x", h.Sum32())
}
