package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

func newRecreateCmd(f *ctlFlags) *cobra.Command {
	var (
		req  api.RecreateRequest
		wait bool
	)
	cmd := &cobra.Command{
		Use:   "recreate GROUP/PROCESS... [flags]",
		Short: "Restart chosen processes of a group, leaving the others untouched",
		Long: `Recreate some processes of a group while the rest keep running, like
OpenKruise's ContainerRecreateRequest: each chosen process is stopped through
its normal path (pre_stop, grace period, SIGKILL of its tree) and started again
at once, without waiting for or advancing its crash back-off. The request
succeeds for a process when its new instance has been running and ready for
longer than --min-started. The processes are named GROUP/PROCESS, as in
every other command, all of one group. The former form, GROUP PROCESS...,
still works and says it is deprecated.

One request per group is active at a time; later ones wait as Pending. The
command prints the request's id; with --wait it follows the request and exits
0 when every process succeeded, 1 otherwise.

  podsup recreate list            the requests podsup keeps
  podsup recreate status ID       one request`,
		Example: `  podsup recreate web/api --ordered --wait
  podsup recreate web/api web/worker --unready-grace 5s --min-started 1s --deadline 2m`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			var deprecated bool
			req.Group, req.Processes, deprecated, err = recreateTargets(args)
			if err != nil {
				return err
			}
			if deprecated {
				fmt.Fprintf(cmd.ErrOrStderr(), "podsup: \"recreate GROUP PROCESS...\" is deprecated: name the processes GROUP/PROCESS, as in podsup recreate %s\n",
					termsafe.Quote(req.Group+"/"+strings.Join(req.Processes, " "+req.Group+"/")))
			}
			rc, err := f.client().Recreate(cmd.Context(), req)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !wait {
				if asJSON {
					return printJSON(termsafe.NewJSONWriter(out), rc)
				}
				fmt.Fprintln(out, termsafe.Quote(rc.ID))
				return nil
			}
			if !asJSON {
				fmt.Fprintf(out, "%s: recreating %s in group %s\n", termsafe.Quote(rc.ID), termsafe.Quote(strings.Join(req.Processes, ", ")), termsafe.Quote(req.Group))
			}
			ctx, cancel := signalContext()
			defer cancel()
			done, err := f.client().RecreateStatus(ctx, rc.ID, true)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(termsafe.NewJSONWriter(out), done); err != nil {
					return err
				}
			} else {
				printRecreate(out, done)
			}
			if done.Failed {
				return exitError{1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&req.Ordered, "ordered", false, "one process at a time, in the order given; the next only after the previous succeeded")
	fl.StringVar(&req.FailurePolicy, "failure-policy", "fail", "fail: complete the request at the first failure; ignore: carry on with the others")
	fl.StringVar(&req.Grace, "grace", "", "grace period for the kills instead of the group's (at least minimum_grace)")
	fl.StringVar(&req.UnreadyGrace, "unready-grace", "", "hold the group's readiness false this long before the first kill")
	fl.StringVar(&req.MinStarted, "min-started", "", "a new instance counts once it has been running and ready for longer than this")
	fl.StringVar(&req.Deadline, "deadline", "", "complete the request after this long, failing unfinished processes (at least 3s)")
	fl.StringVar(&req.TTL, "ttl", "", "how long the completed request stays visible (default 1h)")
	fl.BoolVar(&wait, "wait", false, "follow the request; exit 0 on success, 1 on failure")
	cmd.AddCommand(&cobra.Command{
		Use:     "list",
		Short:   "List recreate requests",
		Example: "  podsup recreate list\n  podsup recreate list -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			l, err := f.client().Recreates(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(termsafe.NewJSONWriter(cmd.OutOrStdout()), l)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tGROUP\tPHASE\tPROCESSES\tAGE")
			for _, r := range l.Recreates {
				// Quoted for the terminal (termsafe), and so without tabs
				// that would shift the columns.
				q := termsafe.Quote
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", q(r.ID), q(r.Group), q(phaseOf(r)), q(processPhases(r)), age(r.CreationTime))
			}
			return tw.Flush()
		},
	}, &cobra.Command{
		Use:     "status ID",
		Short:   "Show one recreate request",
		Example: "  podsup recreate status rc-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			r, err := f.client().RecreateStatus(cmd.Context(), args[0], false)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(termsafe.NewJSONWriter(cmd.OutOrStdout()), r)
			}
			printRecreate(cmd.OutOrStdout(), r)
			return nil
		},
	})
	return cmd
}

// recreateTargets reads recreate's arguments: GROUP/PROCESS..., all of one
// group, or the deprecated GROUP PROCESS... (deprecated is then true).
func recreateTargets(args []string) (group string, processes []string, deprecated bool, err error) {
	if !strings.Contains(args[0], "/") {
		// The former form: a group, then its processes' bare names.
		if len(args) < 2 {
			return "", nil, false, fmt.Errorf("name the processes to recreate: podsup recreate %s/PROCESS... (a whole group restarts with podsup restart %s)", args[0], args[0])
		}
		for _, a := range args[1:] {
			if a == "" || strings.Contains(a, "/") {
				return "", nil, false, fmt.Errorf("%q: name every process GROUP/PROCESS (podsup recreate web/api web/worker)", a)
			}
		}
		return args[0], args[1:], true, nil
	}
	for _, a := range args {
		g, p, err := splitTarget(a)
		if err != nil || p == "" {
			return "", nil, false, fmt.Errorf("%q is not GROUP/PROCESS: name every process with its group (podsup recreate web/api web/worker)", a)
		}
		if group != "" && g != group {
			return "", nil, false, fmt.Errorf("%s and %s are in different groups: a recreate request is for one group's processes; make one per group", args[0], a)
		}
		group = g
		processes = append(processes, p)
	}
	return group, processes, false, nil
}

func phaseOf(r api.Recreate) string {
	if r.Phase == "Completed" && r.Failed {
		return "Completed (failed)"
	}
	return r.Phase
}

func processPhases(r api.Recreate) string {
	var parts []string
	for _, p := range r.Processes {
		parts = append(parts, p.Name+"="+p.Phase)
	}
	return strings.Join(parts, ",")
}

func age(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return humanAge(time.Since(*t))
}

// printRecreate prints a request, its words quoted for the terminal
// (termsafe): a message may echo a process's failure.
func printRecreate(w io.Writer, r api.Recreate) {
	q := termsafe.Quote
	fmt.Fprintf(w, "%s  group %s  %s", q(r.ID), q(r.Group), q(phaseOf(r)))
	if r.Message != "" {
		fmt.Fprintf(w, ": %s", q(r.Message))
	}
	fmt.Fprintln(w)
	for _, p := range r.Processes {
		fmt.Fprintf(w, "  %-16s %-10s", q(p.Name), q(p.Phase))
		if p.Message != "" {
			fmt.Fprintf(w, " %s", q(p.Message))
		}
		fmt.Fprintln(w)
	}
}
