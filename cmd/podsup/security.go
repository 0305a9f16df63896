package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

func newSecurityCmd(f *ctlFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "security [GROUP[/PROCESS]]",
		Short: "Rate how exposed each running process is, like systemd-analyze security",
		Long: `Rate how exposed each running process is, in the manner of
systemd-analyze security: each setting that narrows what a process may do
(runs as a user other than root, no_new_privileges, its capability bounding
set, a seccomp filter, a read-only root, a private /tmp, masked /proc paths,
its own pid, net, mount, ipc and uts namespaces, memory and pids limits, a
user namespace) is on or off and has a weight; the exposure is the share of
the weights of the settings that are off, from 0.0 (every one on) to 10.0
(wide open). The capability bounding set counts fully when it is empty,
half when it is within the container engines' default 14, not at all
beyond that.

The words are systemd's, with its thresholds: PERFECT below 0.1, SAFE from
0.1, OK from 1.0, MEDIUM from 5.0, EXPOSED from 7.5, UNSAFE from 9.0,
DANGEROUS at 10.0.

Without an argument, one line per process of every group; with GROUP, that
group's; with GROUP/PROCESS, the table of its settings. Identity,
capabilities, no_new_privs and the seccomp mode are what /proc says of the
running process (podsup describe shows them); a process that is not
running is listed without a rating. The rating is computed here from
GET /v1/describe/GROUP, which needs no role beyond read; -o json prints
each process's rating with its settings.`,
		Example: `  podsup security
  podsup security web
  podsup security web/api
  podsup security web/api -o json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			group, process, err := optionalTarget(args)
			if err != nil {
				return err
			}
			rated, err := rateTargets(cmd.Context(), f.client(), group, process)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Processes []processExposure `json:"processes"`
				}{rated})
			}
			if process != "" {
				return printExposureTable(cmd.OutOrStdout(), rated[0])
			}
			return printExposureList(cmd.OutOrStdout(), rated)
		},
	}
}

// rateTargets rates the processes of group (every group when empty), or
// the one process, from their descriptions.
func rateTargets(ctx context.Context, c *api.Client, group, process string) ([]processExposure, error) {
	groups := []string{group}
	if group == "" {
		st, err := c.Status(ctx, "", "")
		if err != nil {
			return nil, err
		}
		groups = groups[:0]
		for _, g := range st.Groups {
			groups = append(groups, g.Name)
		}
	}
	out := []processExposure{}
	for _, name := range groups {
		d, err := c.Describe(ctx, name, process)
		if err != nil {
			return nil, err
		}
		g := d.Group
		for _, p := range append(append([]api.ProcessDescription{}, g.Init...), g.Processes...) {
			out = append(out, rateProcess(g, p))
		}
	}
	return out, nil
}

// printExposureList is systemd-analyze security's list: one line per
// process, its exposure and word.
func printExposureList(w io.Writer, rated []processExposure) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tPROCESS\tEXPOSURE\tPREDICATE")
	for _, r := range rated {
		exp, word := "-", "not running"
		if r.Exposure != nil {
			exp, word = fmt.Sprintf("%.1f", *r.Exposure), r.Rating
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termsafe.Quote(r.Group), termsafe.Quote(r.Process), exp, word)
	}
	return tw.Flush()
}

// printExposureTable is systemd-analyze security UNIT's table: each
// setting, a mark for on (✓) or off (✗), what it means for the process,
// its weight and the exposure it adds; then the overall exposure.
func printExposureTable(w io.Writer, r processExposure) error {
	target := termsafe.Quote(r.Group + "/" + r.Process)
	if r.Exposure == nil {
		_, err := fmt.Fprintf(w, "%s is not running: its security context is read from /proc, so it has no rating now\n", target)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tDESCRIPTION\tWEIGHT\tEXPOSURE")
	for _, s := range r.Settings {
		mark := "✗"
		if s.On {
			mark = "✓"
		} else if s.Exposure < 1 {
			mark = "~"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%d\t%.1f\n", mark, s.Name, s.Description, s.Weight, float64(s.Weight)*s.Exposure/10)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n→ Overall exposure level for %s: %.1f %s\n", target, *r.Exposure, r.Rating)
	return err
}
