package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/podsup/podsup/internal/memtrim"

	"github.com/podsup/podsup/pid1"
)

func newRunCmd() *cobra.Command {
	var (
		o       pid1.Options
		verbose bool
		remap   []string
	)
	cmd := &cobra.Command{
		Use:   "run [flags] [--] CMD [ARGS...]",
		Short: "Run one command as its init: forward signals, reap zombies, exit with its code",
		Long: `Run CMD as the one child of an init process, like tini or dumb-init:

  - every signal podsup receives is forwarded to CMD (with -g, to its whole
    process group): 1-31 and the real-time signals 34-64 (SIGRTMIN..SIGRTMAX
    as glibc numbers them), except SIGCHLD (podsup's own business), SIGKILL
    and SIGSTOP (cannot be caught) and SIGTTIN/SIGTTOU (podsup's own job
    control). SIGURG and SIGPROF are forwarded when they come from outside
    podsup; the Go runtime's own SIGURGs never are (podsup runs with its
    asynchronous preemption off, so it sends none). 32 and 33 are not
    forwarded: the C library and the Go runtime keep them for themselves.
    SIGPROF and 34 arrive however busy podsup is on amd64 and arm64; on
    other architectures one sent while podsup forwards another may be lost
    (the Go runtime keeps both unblocked on all its threads);
  - however many signals arrive, even while CMD exits, podsup reports
    CMD's exit status (it never falls back to a signal's default action);
  - every zombie is reaped: as PID 1 (in a container, or under
    "unshare --pid --fork") podsup is the parent of every orphan; otherwise
    it makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so orphans of
    CMD's descendants come back to it instead of escaping to the host's init;
  - podsup exits with CMD's exit code, 128+N when signal N killed it, 127
    when CMD is not found and 126 when it cannot be executed;
  - CMD gets podsup's fds 0, 1 and 2 (and no other inherited fd), environment and arguments verbatim, an
    empty signal mask and default signal dispositions, its own process
    group, and in a terminal the foreground (so ^C and job control work);
  - -e CODE:NEW reports exit code CODE as NEW (like tini -e), e.g.
    -e 143:0 for a JVM that exits 143 on SIGTERM.`,
		Example: `  # In a Dockerfile
  ENTRYPOINT ["podsup", "run", "--"]
  CMD ["nginx", "-g", "daemon off;"]

  # Stop within 10s of SIGTERM, and leave nothing of CMD's process group behind
  podsup run --grace 10s --kill-leftovers -- sh -c 'sleep 600 & echo started'

  # A JVM stopped by SIGTERM exits 143: report that as success
  podsup run -e 143:0 -- sh -c 'exit 143'     # as java -jar app.jar would`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Before anything else: it re-executes podsup so that every
			// SIGURG from outside can be forwarded.
			prepErr := pid1.Prepare()
			o.Argv = args
			var err error
			if o.RemapExit, err = parseRemapExit(remap); err != nil {
				return err
			}
			o.Logger = stderrLogger(verbose)
			o.Errors = errorLog{&o.Logger}
			if prepErr != nil {
				o.Logger.Warn().Err(prepErr).Msg("a SIGURG that arrives while another signal is forwarded may be lost")
			}
			// One child needs no parallelism; with one P a forwarded signal
			// crosses fewer threads (S5: 257 -> 202 us p50, docs/benchmarks.md).
			runtime.GOMAXPROCS(1)
			// As PID 1 podsup stays resident for the container's life: give
			// back the pages only start-up needed once CMD runs.
			go func() {
				time.Sleep(time.Second)
				memtrim.TrimExecutable()
			}()
			if code := pid1.Run(o); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	// Flags stop at CMD: in `podsup run ls -l`, -l belongs to ls.
	f.SetInterspersed(false)
	f.BoolVarP(&o.ToGroup, "group", "g", false, "forward signals to CMD's whole process group, not only CMD")
	f.DurationVar(&o.Grace, "grace", 0, "after forwarding SIGTERM or SIGINT, SIGKILL CMD's process tree if it is still running after this long (default: wait forever, like tini)")
	f.BoolVar(&o.KillLeftovers, "kill-leftovers", false, "when CMD exits, SIGTERM what is left of its process group, then SIGKILL after --grace (default 2s)")
	f.StringArrayVarP(&remap, "remap-exit", "e", nil, "report CMD's exit code CODE as NEW (CODE:NEW, 0-255 each; repeatable), e.g. 143:0")
	f.BoolVarP(&verbose, "verbose", "v", false, "log what podsup does to stderr")
	cmd.PreRun = func(cmd *cobra.Command, args []string) {
		if o.KillLeftovers {
			o.LeftoverGrace = o.Grace
		}
	}
	return cmd
}

// errorLog writes pid1's messages ("podsup: CMD: command not found") as
// error lines of podsup's own console log, the format of podsup up's,
// which quotes what a terminal would act on (CMD is echoed).
type errorLog struct{ log *zerolog.Logger }

func (e errorLog) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		e.log.Error().Msg(l)
	}
	return len(p), nil
}

// parseRemapExit reads the -e/--remap-exit values.
func parseRemapExit(values []string) (map[int]int, error) {
	if len(values) == 0 {
		return nil, nil
	}
	m := make(map[int]int, len(values))
	for _, v := range values {
		from, to, ok := strings.Cut(v, ":")
		a, errA := strconv.Atoi(from)
		b, errB := strconv.Atoi(to)
		if !ok || errA != nil || errB != nil || a < 0 || a > 255 || b < 0 || b > 255 {
			return nil, fmt.Errorf("--remap-exit %q: want CODE:NEW with both between 0 and 255, e.g. 143:0", v)
		}
		m[a] = b
	}
	return m, nil
}
