package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

// errConditionMet ends a status watch once the condition holds.
var errConditionMet = errors.New("condition met")

// newWaitCmd is kubectl wait for podsup: it follows the status stream the
// server pushes (no polling) until what it names meets the condition.
func newWaitCmd(f *ctlFlags) *cobra.Command {
	var cond string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait [GROUP[/PROCESS]] [--for ready|started|completed|stopped] [--timeout D]",
		Short: "Wait until every group (or the one named) is ready, started, completed or stopped, like kubectl wait",
		Long: `Wait until what is named meets the condition, then print it and exit 0;
exit 1 when the timeout comes first (saying what is still missing) or
podsup does not answer. Without an argument every group must meet it.

The conditions are depends_on's (docs/semantics.md W1): a process is
started when it runs and its startup probe (if any) succeeded, ready when
its readiness probe or protocol says so (without one, once started), and
completed when it exited 0 and is not restarted; a process that completed
counts as started and ready too. A group meets a condition when every one
of its processes does (and, for started and ready, every sidecar).
A process is stopped when none of its instances is alive or stopping and
none will start on its own: after podsup stop, or once it ended for good
(state terminated, or waiting with reason Stopped); a group is stopped
when its processes and sidecars are (kubectl wait --for=delete).

podsup pushes each status change down the socket and the command checks
each one as it arrives: it answers within the instant of the change.
--timeout 0 checks once.`,
		Example: `  # start the tests once the whole stack is ready
  podsup wait --for ready --timeout 2m && echo the stack is ready

  # a migration that must have finished
  podsup wait app/migrate --for completed --timeout 5m`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, process, err := optionalTarget(args)
			if err != nil {
				return err
			}
			switch cond {
			case "ready", "started", "completed", "stopped":
			default:
				return fmt.Errorf("--for %q is not one of ready, started, completed, stopped", cond)
			}
			if timeout < 0 {
				return fmt.Errorf("--timeout must not be negative, got %s", timeout)
			}
			what := "every group"
			if len(args) == 1 {
				what = args[0]
			}
			if timeout == 0 {
				return checkOnce(cmd, f.client(), group, process, what, cond)
			}
			return waitUntil(cmd, cmd.OutOrStdout(), f.client(), group, process, what, cond, timeout)
		},
	}
	cmd.Flags().StringVar(&cond, "for", "ready", "the condition: ready, started, completed or stopped")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait before exiting 1; 0 checks once")
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{"ready", "started", "completed", "stopped"}, cobra.ShellCompDirectiveNoFileComp)) // only fails for an unknown flag
	return cmd
}

// checkOnce is --timeout 0: one look at the status.
func checkOnce(cmd *cobra.Command, c *api.Client, group, process, what, cond string) error {
	w := &waiter{cond: cond, process: process, groups: map[string]*api.GroupStatus{}}
	st, err := c.Status(cmd.Context(), group, process)
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "podsup:", termsafe.Quote(err.Error()))
		return exitError{1}
	}
	for _, g := range st.Groups {
		w.set(g)
	}
	if missing := w.missing(); len(missing) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s not %s: %s\n", termsafe.Quote(what), cond, termsafe.Quote(strings.Join(missing, "; ")))
		return exitError{1}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", termsafe.Quote(what), cond)
	return nil
}

// waitUntil follows the status stream until what is named meets cond, for
// at most timeout (no limit when it is negative), then says so on done
// (nil: silently): `wait` and `stop --wait`.
func waitUntil(cmd *cobra.Command, done io.Writer, c *api.Client, group, process, what, cond string, timeout time.Duration) error {
	w := &waiter{cond: cond, process: process, groups: map[string]*api.GroupStatus{}}
	ctx, cancel := signalContext()
	defer cancel()
	if timeout >= 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, timeout)
		defer cancelTimeout()
	}
	err := c.Watch(ctx, group, process, false, func(ev api.WatchEvent) error {
		w.seen = true
		switch ev.Type {
		case api.WatchBookmark: // the whole state is in
			w.synced = true
		case api.WatchAdded, api.WatchModified:
			w.set(*ev.Group)
		default:
			return nil // a group that went away is kept as it was last seen
		}
		if w.synced && len(w.missing()) == 0 {
			return errConditionMet
		}
		return nil
	})
	switch {
	case errors.Is(err, errConditionMet):
		if done != nil {
			fmt.Fprintf(done, "%s %s\n", termsafe.Quote(what), cond)
		}
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && w.seen:
		fmt.Fprintf(cmd.ErrOrStderr(), "timed out after %s waiting for %s %s: %s\n", timeout, termsafe.Quote(what), cond, termsafe.Quote(strings.Join(w.missing(), "; ")))
		return exitError{1}
	case ctx.Err() != nil:
		return exitError{1} // interrupted (^C): no timeout to report
	case err == nil:
		err = errors.New("podsup ended the status stream")
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "podsup:", termsafe.Quote(err.Error()))
	return exitError{1}
}

// waiter holds the status a watch has built so far and checks it.
type waiter struct {
	cond    string
	process string
	seen    bool
	synced  bool // the watch's BOOKMARK came: every group is in
	order   []string
	groups  map[string]*api.GroupStatus
}

// set takes a group's whole status from the watch.
func (w *waiter) set(g api.GroupStatus) {
	if w.groups[g.Name] == nil {
		w.order = append(w.order, g.Name)
	}
	w.groups[g.Name] = &g
}

// missing names what does not meet the condition yet, with its state.
func (w *waiter) missing() []string {
	var out []string
	for _, name := range w.order {
		g := w.groups[name]
		for _, p := range append(append([]api.ProcessStatus(nil), g.Init...), g.Processes...) {
			// A group's condition is its main processes' and, for started
			// and ready, its sidecars' (W1); inits have completed by then.
			// For stopped, every process's, but a plain init counts only
			// while it has an instance (one that never ran or ended waits
			// for nothing).
			if w.process != "" && p.Name != w.process || w.process == "" && p.Init && skipInit(p, w.cond) {
				continue
			}
			if !meets(p, w.cond) {
				out = append(out, g.Name+"/"+p.Name+" ("+describeState(p, time.Now())+")")
			}
		}
	}
	return out
}

// skipInit reports an init that a group's condition passes over.
func skipInit(p api.ProcessStatus, cond string) bool {
	switch cond {
	case "completed":
		return true
	case "stopped":
		return !p.Sidecar && !hasInstance(p)
	}
	return !p.Sidecar
}

// hasInstance reports a process with an instance: running, stopping, or with
// its start in flight.
func hasInstance(p api.ProcessStatus) bool {
	return p.State == "running" || p.Terminating != nil || p.State == "waiting" && p.Reason == "ContainerCreating" && p.InstanceID != ""
}

// meets is depends_on's condition (W1) on a process's wire status, or
// stopped: nothing alive and nothing to start on its own (X13).
func meets(p api.ProcessStatus, cond string) bool {
	completed := p.State == "terminated" && p.Terminated != nil && p.Terminated.ExitCode == 0 && p.Reason == "Completed"
	switch cond {
	case "stopped":
		return !hasInstance(p) && (p.State == "terminated" || p.State == "waiting" && p.Reason == "Stopped")
	case "completed":
		return completed
	case "started":
		return completed || p.State == "running" && p.Started
	default:
		return completed || p.State == "running" && p.Ready
	}
}
