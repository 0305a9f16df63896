package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/api/apiserver"
	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/logging"
	"github.com/podsup/podsup/internal/memtrim"
	"github.com/podsup/podsup/internal/rootless"
	"github.com/podsup/podsup/internal/tty"
	"github.com/podsup/podsup/pid1"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
	"github.com/podsup/podsup/systemd"
)

func newUpCmd() *cobra.Command {
	var (
		cf        configFlags
		out       upOutput
		cgroupDir string
	)
	cmd := &cobra.Command{
		Use:   "up [-f FILE|DIR]... [--var NAME=VALUE]... [--var-file FILE]...",
		Short: "Run the groups of a configuration file in the foreground",
		Long: `Run every group of an HCL configuration in the foreground until SIGTERM,
SIGINT or SIGQUIT (or "podsup shutdown"), then stop them, each process through its
pre_stop hook and grace period, and exit 0: a process once every process
that depends_on it has exited (a group's sidecars after its processes), or
all at once with supervisor { stop_order = "parallel" }. A second such
signal at least 1s after the first stops whatever still waits at once
and skips to SIGKILL; one sooner is taken as
a duplicate of the first (as "timeout" or a container runtime may send) and
changes nothing. SIGHUP (or "podsup reload") re-reads the files, the
directories, the --var-files and the env files: if the result is valid, only
groups and processes whose spec (environment included) changed are
restarted; if not, the running configuration stays and the error is logged.
Any other signal is caught and logged (or dropped): none ends podsup.

As PID 1 (in a container) podsup also reaps every orphan.

Run by a user that is not root, with a sandbox that has namespaces, podsup
runs rootless: it runs itself again in a user namespace of its own where
that user is root (uid 0 inside, the user on the host; with the user's
/etc/subuid range as ids 1 and up where newuidmap is installed), and passes
signals on to it. Resource limits then need a cgroup the user may write:
a systemd --user service with Delegate=yes, or --cgroup DIR (a cgroup v2
directory delegated to the user); without one podsup says so at start-up
and runs without them.

Several -f load as one configuration; -f DIR reads every *.hcl file in DIR
in lexical order. Without -f, podsup looks for ./podsup.hcl, then
/etc/podsup/podsup.hcl. --var and --var-file set the configuration's
variables (over their defaults and PODSUP_VAR_NAME).
The control socket is supervisor.socket from the file, or --socket /
PODSUP_SOCKET, or by default /run/podsup/podsup.sock for root and
$XDG_RUNTIME_DIR/podsup.sock for other users (where the CLI looks too).
Root and podsup's own user may do everything on it. supervisor.socket_group
opens it to a group, whose members may read (status, describe, events,
metrics, health, wait) and what supervisor.socket_group_roles adds:
"operate" (start, stop, restart, recreate, reload, shutdown), "logs"
(process output, secrets included) and "exec", which runs commands as any
non-root process user of the groups, reading their environment and files,
and as the member's own uid in any sandbox; never as root.

Captured output goes to podsup's stdout, each line prefixed
"group/process | " (log_format = "console") or as JSON objects
(log_format = "json"); --no-log-prefix drops the prefix, and a process
with log { stdout = false } is kept off it (podsup logs and its file in
log_dir still have its lines). On a terminal the prefix has a colour per
process, unless NO_COLOR is set or TERM is dumb. On a terminal a process's
escape sequences and bare CRs are shown quoted (\x1b, \r), not acted on;
--raw writes its bytes as they are (to a pipe or file they always are).`,
		Example: `  podsup up -f examples/web.hcl
  podsup up -f examples/conf.d/00-base.hcl -f examples/conf.d/10-web.hcl --var http_port=8081
  podsup status            # in another terminal
  podsup logs -f web/api`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			socket := ""
			if cmd.Flags().Changed("socket") || os.Getenv("PODSUP_SOCKET") != "" {
				socket, _ = cmd.Flags().GetString("socket")
			}
			code, err := runUp(cf, socket, cgroupDir, out)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().BoolVar(&out.noPrefix, "no-log-prefix", false, "print captured lines without their \"group/process | \" prefix (console log_format)")
	cmd.Flags().StringVar(&cgroupDir, "cgroup", "", "rootless: a cgroup v2 directory delegated to this user, for podsup and its groups' cgroups (resource limits)")
	cmd.Flags().BoolVar(&out.raw, "raw", false, "on a terminal, write the processes' bytes as they are instead of quoting escape sequences")
	return cmd
}

// upOutput is how podsup up prints the processes' captured lines.
type upOutput struct {
	noPrefix bool // no "group/process | "
	raw      bool // no quoting on a terminal
}

// daemon is a running `podsup up`.
type daemon struct {
	source  configSource // what a reload re-reads
	log     zerolog.Logger
	sup     *supervisor.Supervisor
	stack   *stack.Stack       // reloads go through it: it rewrites config and secret volumes
	runtime supervisor.Runtime // the stack's outermost layer: exec's spawner
	svc     *systemd.Service   // podsup's sd_notify stream (nothing sent outside systemd)

	// level is podsup's own log level, which a reload may change.
	level *logLevel
	// socketOverride is --socket / PODSUP_SOCKET, which wins over the
	// file's supervisor.socket at every reload, as it did at start.
	socketOverride string

	mu  sync.Mutex // serialises reloads; guards cfg
	cfg *spec.Config

	// reloadMu guards the last load's outcome, for
	// podsup_config_last_reload_successful (lastReload).
	reloadMu      sync.Mutex
	reloadOK      bool
	reloadSuccess time.Time
}

func runUp(cf configFlags, socketOverride, cgroupDir string, out upOutput) (int, error) {
	source, err := cf.source()
	if err != nil {
		return 0, err
	}
	cfg, err := source.load(os.Stderr)
	if err != nil || source.requireGroups(cfg, os.Stderr) != nil {
		return 1, nil
	}
	if socketOverride != "" {
		cfg.Supervisor.Socket = socketOverride
	}
	if code, ran, err := upRootless(cfg, cgroupDir); ran || err != nil {
		return code, err
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
	logSettings := cfg.Supervisor
	var logOut *logging.Async
	if journalOn { // podsup's own lines go to journald with fields, an entry each
		logOut = logging.NewAsync(systemd.LogWriter{Send: systemd.JournalSend}, 0)
		logSettings.LogFormat = "json"
	} else {
		logOut = logging.NewAsyncStream(os.Stderr, 0) // a byte stream
	}
	defer logOut.Close() // flush before exit
	log, level := newLogger(logSettings, logOut)
	if notifyErr != nil {
		log.Warn().Err(notifyErr).Msg("systemd's watchdog is not fed")
	}
	if fdWarning != "" {
		log.Warn().Msg(fdWarning)
	}
	if w := stack.JournalWarning(cfg, journalOn); w != "" {
		log.Warn().Msg(w)
	}

	// Catch before anything starts, so no signal is lost.
	// They stay caught until podsup exits (handleUpSignals).
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, upSignals...)
	catchStraySignals(log)
	proc.StartReaperAs(true) // as PID 1, reap orphans from the first instant; a subreaper otherwise

	socket := cfg.Supervisor.EffectiveSocket()
	gid := -1
	if g := cfg.Supervisor.SocketGroup; g != "" {
		if gid, err = lookupGID(g); err != nil {
			return 0, fmt.Errorf("supervisor.socket_group: %w", err)
		}
	}
	groupRoles, err := apiserver.ParseRoles(cfg.Supervisor.SocketGroupRoles)
	if err != nil {
		return 0, fmt.Errorf("supervisor.socket_group_roles: %w", err)
	}
	// The socket first: it is the instance's lock. A podsup still running
	// on it makes this one fail here, before stack.New would take its
	// cgroups for a crashed predecessor's and kill its processes.
	l, err := apiserver.Listen(socket, gid)
	if err != nil {
		return 0, err
	}
	defer l.RemoveSocket() // only the socket it bound, if still there
	var logColor func(int) string
	if tty.ColorWanted(os.Stdout) {
		logColor = tty.PrefixColor
	}
	st, err := stack.New(*cfg, stack.Options{
		Instance: instanceName(socket), Logger: log, Output: os.Stdout, NoLogPrefix: out.noPrefix, LogColor: logColor,
		QuoteOutput: !out.raw && tty.IsTerminal(int(os.Stdout.Fd())),
		RuntimeDir:  filepath.Dir(socket), Journal: journalOn, ActivationFiles: listenFiles,
		Subreaper: true, // orphans of the groups come back to podsup
	})
	if err != nil {
		return 0, err
	}
	defer st.Close() // deletes every sandbox and cgroup left, after the API stopped
	sup := st.Supervisor()
	bg, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	svc := systemd.NewService(sup, systemd.Options{Notifier: notifier, ReadyWhen: cfg.Supervisor.NotifyReady, Watchdog: watchdog, Logger: log})
	defer notifier.Close()
	go svc.Run(bg)
	d := &daemon{source: source, log: log, level: level, socketOverride: socketOverride, sup: sup, stack: st, cfg: cfg, runtime: st.Runtime(), svc: svc,
		reloadOK: true, reloadSuccess: time.Now()} // the start-up load counts as the first, as Prometheus's does
	history := supervisor.NewHistory(sup, 0)
	defer history.Close()

	srv := apiserver.New(apiserver.Backend{
		Supervisor: sup, History: history, Version: version, Revision: readBuildInfo().Revision,
		Reload: d.reload, LastReload: d.lastReload,
		Exec: d.exec,
		Logs: hubLogs{st.Logs()},
		Network: func(ctx context.Context, group string) *api.NetworkDescription {
			return describeNetwork(ctx, st, group)
		},
	}, apiserver.Policy{OwnerUID: os.Getuid(), GroupID: gid, GroupName: cfg.Supervisor.SocketGroup, GroupRoles: groupRoles}, log)
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
	log.Info().Str("config", source.String()).Str("socket", socket).Int("groups", len(cfg.Groups)).Msg("podsup up")
	if _, ok := rootless.Inner(); ok {
		err := rootless.WatchParent(func() {
			log.Warn().Msg("the podsup that started this one in its user namespace is gone: stopping every group")
			sup.RequestShutdown(nil)
		})
		if err != nil {
			log.Warn().Err(err).Msg("a SIGKILL of the podsup that started this one would leave this one running")
		}
	}

	// SIGHUP's reloads run on their own goroutine (reloadQueue): the
	// signal loop does no I/O, so a reload that blocks or takes long never
	// keeps a SIGTERM waiting.
	reloadOnSignal := startReloadQueue(func() { _, _ = d.reload() }) // reload tells of a refusal
	// sup.RequestShutdown's second call escalates to SIGKILL (X9).
	go handleUpSignals(sigs, clock.Real{}, reloadOnSignal.request, func() { sup.RequestShutdown(nil) }, func() { sup.RequestShutdown(nil) }, log)
	// Once the first starts are over, give back the executable's pages and
	// the heap that start-up alone needed (docs/benchmarks.md, S2). What
	// the steady state uses is faulted in again.
	startup := memtrim.StartupBegins(memtrim.DefaultSettling, processCount(cfg))
	go startup.Settle(func() bool { return firstStartsOver(sup.Status()) }, bg.Done())
	// The shutdown runs code the steady state never did, which that trim
	// took out: let it fault in with read-ahead, not a page at a time
	// (half the reads from disk).
	go func() {
		select {
		case <-sup.Stopping():
			memtrim.ReadyExecutable()
		case <-bg.Done():
		}
	}()
	res, err := st.Run(context.Background()) // publishes what it recovered first: history hears it
	svc.Stop()                               // STOPPING=1 is out before podsup exits, whoever asked
	if err != nil {
		return 0, err
	}
	if res.Critical != nil {
		log.Warn().Int("exit_code", res.ExitCode).Msg("a critical process ended: podsup exits with its code")
	}
	return res.ExitCode, nil
}

// reload re-reads the file; on any error the running configuration stays.
// Under systemd it is bracketed by RELOADING=1 and READY=1 (with ERRNO=
// when refused). A refusal, whoever asked (SIGHUP, systemctl reload,
// podsup reload), is told everywhere an operator looks: podsup's log, a
// Warning event ReloadFailed, podsup_config_last_reload_successful 0, and
// systemd's status; the caller of podsup reload gets the error too.
func (d *daemon) reload() (string, error) {
	var msg string
	err := d.svc.Reload(func() error {
		var err error
		msg, err = d.applyFile()
		return err
	})
	d.reloadMu.Lock()
	d.reloadOK = err == nil
	if err == nil {
		d.reloadSuccess = time.Now()
	}
	d.reloadMu.Unlock()
	if err != nil {
		d.log.Error().Str("config", d.source.String()).Msg("reload refused, the running configuration stays:\n" + err.Error())
		d.sup.Publish(lifecycle.Event{Type: lifecycle.EventWarning, Reason: reasonReloadFailed,
			Message: "reload refused, the running configuration stays: " + boundedEventText(err.Error())})
	}
	return msg, err
}

// reasonReloadFailed is the Warning event of a refused reload.
const reasonReloadFailed = "ReloadFailed"

// reloadEventMax bounds a refused reload's error in its event: the log has
// it whole (up to 100 problems).
const reloadEventMax = 2048

// boundedEventText is s on one line (its problems joined by "; ") capped
// at reloadEventMax bytes on a rune boundary.
func boundedEventText(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s = strings.Join(lines, "; ")
	if len(s) <= reloadEventMax {
		return s
	}
	cut := reloadEventMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (the rest is in podsup's log)"
}

// lastReload is whether the last load of the configuration succeeded and
// when one last did (apiserver.Backend.LastReload).
func (d *daemon) lastReload() (bool, time.Time) {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	return d.reloadOK, d.reloadSuccess
}

// exec runs a command in a group's sandbox (on the host for a group
// without one), streaming its output, for `podsup exec`; given a process,
// in that process's context (execCmd). It ends with ctx: a client that
// goes away takes the command's tree with it.
//
// The peer decides as whom (execCmdFor): a peer that is not root never
// runs a command as root.
func (d *daemon) exec(ctx context.Context, peer apiserver.Peer, group, process string, argv []string, stdout, stderr io.Writer) (int, error) {
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
	cmd, err := execCmdFor(g, process, argv, peer)
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
		fmt.Fprintf(stderr, "podsup: %v\n", execStartError(group, process, err))
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

// firstStartsOver tells whether every process has been started once, or
// is not going to be soon: none is waiting for its first start
// (ContainerCreating, or PodInitializing for its turn). One held back by a
// dependency or in back-off counts as over.
func firstStartsOver(st supervisor.Status) bool {
	for _, g := range st.Groups {
		for _, list := range [][]lifecycle.ProcessStatus{g.Init, g.Processes} {
			for _, p := range list {
				if p.State == lifecycle.StateWaiting && (p.Reason == lifecycle.ReasonContainerCreating || p.Reason == lifecycle.ReasonPodInitializing) {
					return false
				}
			}
		}
	}
	return true
}

// processCount is how many processes and init processes cfg declares.
func processCount(cfg *spec.Config) int {
	n := 0
	for _, g := range cfg.Groups {
		n += len(g.Init) + len(g.Processes)
	}
	return n
}

// describeNetwork is group's CNI attachment for describe, CHECKed now.
func describeNetwork(ctx context.Context, st *stack.Stack, group string) *api.NetworkDescription {
	n, ok := st.Network(ctx, group)
	if !ok {
		return nil
	}
	check := "ok"
	if n.Check != nil {
		check = n.Check.Error()
	}
	return &api.NetworkDescription{Network: n.Network, ContainerID: n.ContainerID, Interface: n.Interface,
		IPs: n.IPs, Gateways: n.Gateways, Check: check, Result: n.Result}
}
