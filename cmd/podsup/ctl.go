package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
	"github.com/podsup/podsup/spec"
)

// ctlFlags are the flags every client command shares.
type ctlFlags struct {
	socket  string
	output  string
	timeout time.Duration
}

func (f *ctlFlags) register(cmd *cobra.Command) {
	def := os.Getenv("PODSUP_SOCKET")
	if def == "" {
		def = spec.DefaultSocketPath()
	}
	cmd.PersistentFlags().StringVar(&f.socket, "socket", def, "podsup's control socket (env PODSUP_SOCKET; for up, overrides the file's supervisor.socket)")
	cmd.PersistentFlags().StringVarP(&f.output, "output", "o", "table", "output format: table, json (the API's objects) or, for status and events, wide (more columns, dated times); a command with no JSON form refuses json")
	cmd.PersistentFlags().DurationVar(&f.timeout, "request-timeout", 30*time.Second, "how long a request waits for podsup's answer before it fails, saying so (0: no limit); a stream (-f, -w, exec, wait) waits this long for its start only and then runs as long as it lasts")
}

// client talks to the socket of --socket, within --request-timeout. It
// refuses a server that runs as neither root nor the caller's user.
func (f *ctlFlags) client() *api.Client {
	c := api.NewClient(f.socket)
	c.Timeout = f.timeout
	return c
}

func (f *ctlFlags) json() (bool, error) {
	switch f.output {
	case "table", "wide", "":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("unknown output format %q: use table, json or (for status and events) wide", f.output)
}

// signalContext ends when the user presses ^C.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// splitTarget parses GROUP or GROUP/PROCESS.
func splitTarget(s string) (group, process string, err error) {
	group, process, _ = strings.Cut(s, "/")
	if group == "" || strings.Contains(process, "/") {
		return "", "", fmt.Errorf("%q is not GROUP or GROUP/PROCESS", s)
	}
	return group, process, nil
}

// optionalTarget is the one GROUP[/PROCESS] argument of a command that
// takes at most one (none: every group).
func optionalTarget(args []string) (group, process string, err error) {
	if len(args) == 0 {
		return "", "", nil
	}
	return splitTarget(args[0])
}

func printJSON(w io.Writer, v any) error {
	// encoding/json leaves DEL, C1 controls and bidi overrides raw.
	enc := json.NewEncoder(termsafe.NewJSONWriter(w))
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func addCtlCommands(root *cobra.Command, f *ctlFlags) {
	root.AddCommand(newStatusCmd(f), newDescribeCmd(f), newEventsCmd(f), newLogsCmd(f), newExecCmd(f), newReloadCmd(f), newShutdownCmd(f), newRecreateCmd(f), newMetricsCmd(f), newTopCmd(f), newSecurityCmd(f))
	for _, action := range []string{"start", "stop", "restart"} {
		root.AddCommand(newActionCmd(f, action))
	}
}

// completeTargets offers GROUP and GROUP/PROCESS names from a running podsup.
func completeTargets(f *ctlFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := f.client().Status(ctx, "", "")
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, g := range st.Groups {
			out = append(out, g.Name)
			for _, p := range g.Processes {
				out = append(out, g.Name+"/"+p.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// seriesNote is kubectl describe's "(x12 over 30s)" for an event that
// repeated: how many times, over how long since the first.
func seriesNote(e api.Event) string {
	if e.Count <= 1 {
		return ""
	}
	return fmt.Sprintf(" (x%d over %s)", e.Count, humanAge(e.LastTime.Sub(e.FirstTime)))
}

func newActionCmd(f *ctlFlags, action string) *cobra.Command {
	var grace string
	var wait bool                 // stop --wait
	var waitTimeout time.Duration // stop --timeout
	short := map[string]string{
		"start":   "Start a stopped group or process",
		"stop":    "Stop a group or process: stop signal, grace period, then SIGKILL of its tree",
		"restart": "Restart a group or process now (not a crash: no back-off wait)",
	}[action]
	long := map[string]string{
		"stop": short + `.

Stopping a whole group stops its sidecars (inits with restart_policy
"always") after its processes: each gets its stop signal once the
processes and the later sidecars have exited, the wait taken from its grace
period. A sidecar stopped on its own stops at once and stays stopped until
started.

While it stops, status shows the process "running: Terminating" and not
ready; afterwards "terminated: Stopped", which is no failure
(docs/semantics.md S6, X13). --wait returns once every process named is
stopped (as podsup wait --for stopped), --timeout bounds that wait.`,
	}[action]
	// start has no grace period: it only says so in stop's and restart's.
	use, example := action+" GROUP[/PROCESS]", "  podsup "+action+" web\n  podsup "+action+" web/api"
	if action != "start" {
		use += " [--grace D]"
		example += " --grace 5s"
	}
	cmd := &cobra.Command{
		Use:               use,
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, process, err := splitTarget(args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("timeout") && !wait {
				return fmt.Errorf("--timeout applies to --wait: add --wait")
			}
			res, err := f.client().Action(cmd.Context(), action, group, process, grace)
			if err != nil {
				return err
			}
			done := cmd.OutOrStdout() // the line "GROUP/PROCESS stopped" after --wait
			if asJSON, _ := f.json(); asJSON {
				if err := printJSON(cmd.OutOrStdout(), res); err != nil || !wait {
					return err
				}
				done = nil // the output stays one JSON object
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), termsafe.Quote(res.Message))
			}
			if !wait {
				return nil
			}
			if waitTimeout <= 0 {
				waitTimeout = -1 // no limit: the stop itself ends in SIGKILL
			}
			return waitUntil(cmd, done, f.client(), group, process, args[0], "stopped", waitTimeout) // wait.go
		},
	}
	if action == "stop" {
		cmd.Flags().BoolVar(&wait, "wait", false, "return once the process(es) are stopped (pre_stop, grace and SIGKILL over), like podsup wait --for stopped")
		cmd.Flags().DurationVar(&waitTimeout, "timeout", 0, "with --wait, exit 1 if not stopped within this long; 0 waits as long as the stop takes")
	}
	if action != "start" {
		cmd.Flags().StringVar(&grace, "grace", "", "grace period instead of the configured one, e.g. 5s (at least minimum_grace)")
	}
	return cmd
}

func newExecCmd(f *ctlFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "exec GROUP[/PROCESS] -- CMD [ARGS...]",
		Short: "Run a command in a group's sandbox and return its exit code",
		Long: `Run CMD in GROUP's sandbox (on the host for a group without one) and exit
with its exit code. With /PROCESS (a process or an init process), CMD runs as
that process runs: as its user and group, with its environment and in its
working directory (like kubectl exec in a container). Without it, CMD runs as
podsup, with podsup's environment and working directory.

A caller other than root and podsup's user (a socket_group member granted
the "exec" role) never runs CMD as root: with /PROCESS it runs as that
process's user, and is refused when that user is root; without, as the
caller's own uid and groups. Either way with no_new_privs (a setuid
program gains nothing).`,
		Example: `  podsup exec web -- cat /etc/hostname
  podsup exec web/api -- sh -c 'ls /proc'`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, process, err := splitTarget(args[0])
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			code, err := f.client().Exec(ctx, group, process, args[1:], cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
}

func newReloadCmd(f *ctlFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "reload",
		Short: "Re-read the configuration; restart only what changed",
		Long: `Ask podsup to re-read its configuration file (like SIGHUP). A file with errors
changes nothing: the errors are printed with file:line:col and everything
keeps running. Otherwise only the groups and processes whose spec changed
are restarted; new ones start, removed ones stop, the rest keep their pids.

podsup reload asks the podsup of --socket, and only it. SIGHUP does the
same, sent to that podsup's pid alone: "kill -HUP $(pidof podsup)" would
signal every podsup on the host.`,
		Example: `  podsup reload
  systemctl reload podsup        # the same, under systemd (contrib/systemd)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := f.client().Reload(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON, _ := f.json(); asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "reloaded:", termsafe.Quote(res.Message))
			return nil
		},
	}
}

func newShutdownCmd(f *ctlFlags) *cobra.Command {
	var grace string
	cmd := &cobra.Command{
		Use:   "shutdown [--grace D]",
		Short: "Stop every group and make podsup exit",
		Long: `Stop every group, each process through its pre_stop hook and grace period
(then SIGKILL of its tree), and make podsup exit 0: the same as SIGTERM to
podsup. Dependents stop first: a process receives its stop signal once
every process (and every group) that depends_on it has exited; with
supervisor { stop_order = "parallel" } everything stops at once. A group's
sidecars (inits with restart_policy "always") get their stop signal only
after its processes have exited, in reverse order, the wait taken from
their grace period. Asking twice stops whatever still waits at once and
skips to SIGKILL.`,
		Example: `  podsup shutdown
  podsup shutdown --grace 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.client().Shutdown(cmd.Context(), grace); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "shutdown requested")
			return nil
		},
	}
	cmd.Flags().StringVar(&grace, "grace", "", "grace period for every process instead of the configured ones")
	return cmd
}
