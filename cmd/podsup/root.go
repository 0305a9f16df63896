package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/podsup/podsup/internal/logging"
)

// exitError carries an exit code out of a command without printing more.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit status" }

func asExit(err error, ee *exitError) bool { return errors.As(err, ee) }

// withCommandHint adds, to cobra's error for an unknown command, where a
// command that is not podsup's lives: "podsup kube" is podsup-kube, a
// binary of its own so that Kubernetes' API types stay out of podsup.
func withCommandHint(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), `unknown command "kube" for "podsup"`) {
		return fmt.Errorf("%w\nThe Kubernetes bridge is the command podsup-kube (podsup-kube convert|play|export), built from the same repository: README.md, \"From Kubernetes\"", err)
	}
	return err
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "podsup",
		Short: "A process supervisor with kubelet's container lifecycle, PID-1 capable",
		Long: `podsup supervises processes the way kubelet runs a pod's containers:
restart policies, CrashLoopBackOff, probes, lifecycle hooks and graceful stop,
for plain Linux processes, in one static binary.

  podsup run -- CMD [ARGS...]     run one command as PID 1 (a tini/dumb-init drop-in)
  podsup up -f podsup.hcl         run the groups of a configuration file
  podsup status | events | logs   look at a running podsup (over its control socket)

-o json is honoured by every command that has a JSON form and refused,
with what to use instead, by the others. -v is --verbose wherever a
command has one (podsup run, as tini -v); the version is podsup --version
or podsup version.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version without -v: -v is --verbose wherever a command has one
	// (podsup run, as tini -v), never the version (flagErrorHint).
	root.Flags().Bool("version", false, "print podsup's version (the same as podsup version)")
	// --version is answered here, not by cobra's Version field: cobra
	// prints that through a text/template, and a linked text/template
	// keeps every exported method of every type in the binary (2.6 MB of
	// it; docs/benchmarks.md, "Binary size"). The root runs nothing, so
	// cobra shows its help for `podsup --version`, which this intercepts.
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root && !cmd.Flags().Changed("help") {
			if v, _ := cmd.Flags().GetBool("version"); v {
				fmt.Fprintln(cmd.OutOrStdout(), readBuildInfo().String())
				return
			}
		}
		help(cmd, args)
	})
	root.SetFlagErrorFunc(flagErrorHint)
	var ctl ctlFlags
	ctl.register(root)
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		// Only `podsup run` keeps the main thread (mainthread.go).
		releaseMainThread(cmd, args)
		return checkOutputFlag(cmd, &ctl)
	}
	root.AddCommand(newRunCmd(), newUpCmd(), newValidateCmd(), newVersionCmd(&ctl), newHealthCmd(&ctl), newWaitCmd(&ctl), newGenManCmd())
	addCtlCommands(root, &ctl)
	return root
}

// jsonOutput are the commands that print JSON for -o json. Every other
// command refuses it (checkOutputFlag) rather than ignore it: a script
// that asks for JSON must never get a table or nothing. A new command that
// prints JSON adds itself here; TestEveryCommandHonoursOrRefusesJSON runs
// every command with -o json and holds each to its entry.
var jsonOutput = map[string]bool{
	"podsup status": true, "podsup describe": true, "podsup events": true, "podsup logs": true,
	"podsup start": true, "podsup stop": true, "podsup restart": true, "podsup reload": true,
	"podsup recreate": true, "podsup recreate list": true, "podsup recreate status": true,
	"podsup version": true, "podsup top": true, "podsup security": true,
}

// noJSONWhy says, for the commands that refuse -o json, what to use instead.
var noJSONWhy = map[string]string{
	"podsup health":   "it answers with its exit code (0 ready, 1 not); for the state as JSON: podsup status -o json",
	"podsup wait":     "it answers with its exit code; for the state as JSON: podsup status -o json (or status -w -o json)",
	"podsup metrics":  "metrics are in Prometheus's text format only; for the state as JSON: podsup status -o json",
	"podsup validate": "it answers with its exit code and file:line:col messages",
	"podsup shutdown": "it prints one line; its exit code says whether podsup took the request",
	"podsup exec":     "the command's output is its own",
}

// wideOutput are the commands with an -o wide form: status's extra
// columns, events' dated TIME.
var wideOutput = map[string]bool{"podsup status": true, "podsup events": true}

// checkOutputFlag refuses an -o the command does not honour: json outside
// jsonOutput, wide outside wideOutput, and any unknown format, with the fix.
func checkOutputFlag(cmd *cobra.Command, f *ctlFlags) error {
	fl := cmd.Flags().Lookup("output")
	if fl == nil || !fl.Changed {
		return nil
	}
	path := cmd.CommandPath()
	switch f.output {
	case "table":
		return nil
	case "wide":
		if wideOutput[path] {
			return nil
		}
		return fmt.Errorf("-o wide is only for podsup status and podsup events: %s has no wide form", path)
	case "json":
		if jsonOutput[path] {
			return nil
		}
		why := noJSONWhy[path]
		if why == "" {
			why = "it has no JSON form"
		}
		return fmt.Errorf("%s does not take -o json: %s", path, why)
	}
	return fmt.Errorf("unknown output format %q: use table, json or (for status and events) wide", f.output)
}

// flagErrorHint adds the fix to a flag error a user is likely to meet.
func flagErrorHint(cmd *cobra.Command, err error) error {
	if strings.Contains(err.Error(), "shorthand flag: 'v'") {
		return fmt.Errorf("%w (-v is --verbose, which podsup run has; the version is podsup --version or podsup version)", err)
	}
	return err
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
