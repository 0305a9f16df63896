package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

// newHealthCmd is the health check of a container or a script: the exit
// code says whether what it names is ready, and nothing is printed when
// it is. "ready" was its first name and stays an alias.
func newHealthCmd(f *ctlFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "health [GROUP[/PROCESS]]",
		Aliases: []string{"ready"},
		Short:   "Exit 0 when every group (or the one named) is ready, 1 when not: a container's HEALTHCHECK",
		Long: `Exit 0 when podsup answers and what is named is ready, 1 otherwise, printing
on stderr what is not ready and why. Without an argument every group must be
ready, with GROUP that group, with GROUP/PROCESS that process.

A group is ready as a pod is (its Ready condition): its init processes have
completed and every process and every sidecar (an init with restart_policy
"always") is ready. A process is ready when its readiness
probe (or readiness = "notify"/"fd" protocol) says so; without one, once it
runs (and its startup probe, if any, has succeeded).

Exit 1 also when podsup does not answer: a health check treats any other
non-zero code as reserved.

It answers at once. To wait until something is ready (or started, or
completed), use podsup wait. "podsup ready" is the same command under its
former name.`,
		Example: `  # Dockerfile
  HEALTHCHECK --interval=10s --timeout=3s CMD ["/podsup", "health"]

  # is the api process ready now?
  podsup health web/api`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, process, err := optionalTarget(args)
			if err != nil {
				return err
			}
			st, err := f.client().Status(cmd.Context(), group, process)
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "podsup:", termsafe.Quote(err.Error()))
				return exitError{1}
			}
			if notReady := whatIsNotReady(st, process); len(notReady) > 0 {
				// Quoted for the terminal (termsafe): reasons and names
				// come from the server.
				fmt.Fprintln(cmd.ErrOrStderr(), "not ready: "+termsafe.Quote(strings.Join(notReady, "; ")))
				return exitError{1}
			}
			return nil
		},
	}
}

// whatIsNotReady names each group (or, with process, that process) of st
// that is not ready, with the state that says why.
func whatIsNotReady(st api.StatusResponse, process string) []string {
	var out []string
	for _, g := range st.Groups {
		if process == "" {
			if !g.Ready {
				out = append(out, g.Name+" ("+groupWhy(g)+")")
			}
			continue
		}
		// Filtered to one process, the server lists it under Processes,
		// an init too. Of the inits only sidecars have a readiness that
		// means something (O5).
		for _, p := range g.Processes {
			if p.Name == process && !p.Ready && (!p.Init || p.Sidecar) {
				out = append(out, g.Name+"/"+p.Name+" ("+processWhy(p)+")")
			}
		}
	}
	return out
}

// groupWhy is the first process of g that keeps it from being ready.
func groupWhy(g api.GroupStatus) string {
	for _, p := range g.Init {
		if p.Sidecar {
			if !p.Ready {
				return "sidecar " + p.Name + ": " + processWhy(p)
			}
			continue
		}
		if p.State != "terminated" || p.Terminated == nil || p.Terminated.ExitCode != 0 {
			return "init " + p.Name + ": " + processWhy(p)
		}
	}
	for _, p := range g.Processes {
		if !p.Ready {
			return p.Name + ": " + processWhy(p)
		}
	}
	if g.ReadinessHeldBy != "" {
		return "readiness held by " + g.ReadinessHeldBy
	}
	return "phase " + g.Phase
}

func processWhy(p api.ProcessStatus) string {
	why := p.State
	if p.Reason != "" {
		why += ": " + p.Reason
	}
	if p.State == "running" && !p.Ready {
		why += ", not ready"
	}
	return why
}
