package main

import (
	"errors"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/podsup/podsup/internal/logging"
)

// exitError carries an exit code out of a command without printing more.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit status" }

func asExit(err error, ee *exitError) bool { return errors.As(err, ee) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "podsup",
		Short: "A process supervisor with kubelet's container lifecycle, PID-1 capable",
		Long: `podsup supervises processes the way kubelet runs a pod's containers:
restart policies, CrashLoopBackOff, probes, lifecycle hooks and graceful stop,
for plain Linux processes, in one static binary.

  podsup run -- CMD [ARGS...]     run one command as PID 1 (a tini/dumb-init drop-in)
  podsup up -f podsup.hcl         run the groups of a configuration file
  podsup status | events | logs   look at a running podsup (over its control socket)`,
		Version:       readBuildInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Only `podsup run` keeps the main thread (mainthread.go).
		PersistentPreRun: releaseMainThread,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	var ctl ctlFlags
	ctl.register(root)
	root.AddCommand(newRunCmd(), newUpCmd(), newValidateCmd(), newVersionCmd(&ctl), newHealthCmd(&ctl), newWaitCmd(&ctl), newGenManCmd())
	addCtlCommands(root, &ctl)
	return root
}

// stderrLogger is podsup's own console log on stderr.
func stderrLogger(verbose bool) zerolog.Logger {
	level := zerolog.WarnLevel
	if verbose {
		level = zerolog.DebugLevel
	}
	// podsup's own console format, which quotes what a terminal would
	// act on (a command line or an error may carry it), where
	// zerolog.ConsoleWriter writes messages raw.
	zerolog.TimeFieldFormat = time.RFC3339Nano // sub-second, as up's log
	out := &logging.Console{Out: os.Stderr, TimeFormat: "15:04:05.000"}
	return zerolog.New(out).Level(level).With().Timestamp().Str("component", "podsup").Logger()
}
