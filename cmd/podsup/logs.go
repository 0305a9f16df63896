package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
	"github.com/podsup/podsup/internal/tty"
)

func newLogsCmd(f *ctlFlags) *cobra.Command {
	var (
		o                    api.LogsOptions
		since                string
		timestamps, noPrefix bool
		noColor, raw         bool
	)
	cmd := &cobra.Command{
		Use:   "logs [GROUP[/PROCESS]...] [-f] [--tail N] [--since D|TIME] [--timestamps] [--previous]",
		Short: "Show the output of processes or whole groups (every process without a target)",
		Long: `Show what processes wrote, as podsup captured it: of each GROUP/PROCESS
named, of every process of each GROUP named alone, and, with no target, of
every process of every group (as docker compose logs does). With more than one
process, each line is prefixed "group/process | " as podsup up prints it,
in a colour of its own on a terminal (none when NO_COLOR is set, TERM is
dumb or the output is not a terminal). Without -f the lines of all of them
come in the order they were captured; with -f, the kept lines of each and
then new ones as they arrive, until ^C (-f follows the processes there are
when it starts: one a reload adds needs a new podsup logs).

--previous shows the last terminated instance, as kubectl logs --previous
does: the one before the running one, or, while the process waits in
CrashLoopBackOff, the one that just crashed. A group's processes that have
none are passed over.

On a terminal, the characters of a line that a terminal would act on
rather than print (escape sequences, a bare carriage return, other
control characters, C1 controls, bidi overrides, bytes that are not
UTF-8) are shown quoted, as \x1b, \r, \u202e: a process cannot retitle
the window, clear the screen or hide a line by what it writes. Tabs are
kept. --raw writes the lines as the process wrote them, on a terminal
too; to a pipe or a file (not a terminal) they are always written as
they are. -o json writes them as JSON escapes (\u001b), on a terminal
or not.

podsup keeps the last 1000 lines (256 KiB) of each instance in memory and
the current and previous instance of each process; log_dir keeps more on
disk.`,
		Example: `  podsup logs                         # every process of every group, prefixed
  podsup logs web                     # every process of group web (prefixed if several)
  podsup logs -f web db/postgres      # follow a group and a process
  podsup logs web/api --tail 20 --timestamps
  podsup logs web --since 10m         # lines captured in the last ten minutes
  podsup logs --since 2024-05-01T10:00:00Z web/api
  podsup logs --previous web/api      # the crashed instance of a crash loop`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			if o.Since, err = parseSince(since, time.Now()); err != nil {
				return err
			}
			if o.Previous && o.Follow {
				return fmt.Errorf("--previous and --follow do not go together: a terminated instance writes no more")
			}
			var targets []api.Target
			for _, a := range args {
				group, process, err := splitTarget(a)
				if err != nil {
					return err
				}
				targets = append(targets, api.Target{Group: group, Process: process})
			}
			ctx, cancel := signalContext()
			defer cancel()
			c := f.client()
			if len(targets) == 0 {
				// No target: every group, each expanded to its processes
				// as a group named alone is.
				st, err := c.Status(ctx, "", "")
				if err != nil {
					return err
				}
				for _, g := range st.Groups {
					targets = append(targets, api.Target{Group: g.Name})
				}
				if len(targets) == 0 {
					return fmt.Errorf("podsup runs no group: there are no logs to show")
				}
			}
			procs, err := c.ExpandTargets(ctx, targets)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			pf := newLinePrefixer(procs, len(procs) > 1 && !noPrefix, !noColor && isColorTerminal(out))
			quote := !raw && isTerminal(out)
			err = c.LogsOf(ctx, targets, o, func(l api.LogLine) error {
				if asJSON {
					// JSON, with what encoding/json leaves raw that a
					// terminal acts on escaped too.
					b, _ := json.Marshal(l)
					_, err := out.Write(append(termsafe.AppendJSON(nil, b), '\n'))
					return err
				}
				if l.Skipped > 0 {
					_, err := fmt.Fprintf(cmd.ErrOrStderr(), "podsup: %s: %d lines skipped (this reader fell behind)\n", termsafe.Quote(l.Group+"/"+l.Process), l.Skipped)
					return err
				}
				var b []byte
				b = pf.append(b, l.Group+"/"+l.Process)
				if timestamps {
					b = l.Time.UTC().AppendFormat(b, time.RFC3339Nano)
					b = append(b, ' ')
				}
				if len(l.Stream) > 5 && l.Stream[:5] == "hook:" { // a hook's output, as podsup up marks it
					b = append(append(append(b, '['), termsafe.Quote(l.Stream)...), "] "...)
				}
				if quote {
					b = termsafe.Append(b, l.Line, termsafe.KeepTab)
				} else {
					b = append(b, l.Line...)
				}
				b = append(b, '\n')
				_, err := out.Write(b)
				return err
			})
			if ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new output until ^C")
	cmd.Flags().BoolVarP(&o.Previous, "previous", "p", false, "the last terminated instance's output (the crashed one, in CrashLoopBackOff)")
	cmd.Flags().IntVar(&o.Tail, "tail", -1, "lines to show from the end of each process's output (-1: all that is kept)")
	cmd.Flags().StringVar(&since, "since", "", "only lines captured since a duration ago (10m, 1h30m) or an RFC 3339 time (2024-05-01T10:00:00Z)")
	cmd.Flags().BoolVarP(&timestamps, "timestamps", "t", false, "start each line with the time podsup captured it (RFC 3339, UTC, nanoseconds)")
	cmd.Flags().BoolVar(&noPrefix, "no-log-prefix", false, "no \"group/process | \" prefix, even with several processes")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "no colours, even on a terminal (as NO_COLOR=1)")
	cmd.Flags().BoolVar(&raw, "raw", false, "write lines as the processes wrote them, escape sequences and control characters included, even on a terminal (they are always raw to a pipe or file)")
	return cmd
}

// parseSince reads --since: a duration before now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--since %s: the duration must be positive", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a duration (10m, 1h30m) nor an RFC 3339 time (2024-05-01T10:00:00Z)", s)
}

func isColorTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && tty.ColorWanted(f)
}

// isTerminal is whether w is a terminal, where a process's lines are
// quoted (TERM and NO_COLOR aside: a dumb terminal acts on control
// characters too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && tty.IsTerminal(int(f.Fd()))
}

// linePrefixer writes podsup up's "group/process | " prefix, padded to the
// widest name shown and, on a terminal, in the process's colour.
type linePrefixer struct {
	on     bool
	width  int
	colors map[string]string // name -> SGR sequence; nil without colour
}

func newLinePrefixer(procs []api.Target, on, color bool) *linePrefixer {
	p := &linePrefixer{on: on}
	if !on {
		return p
	}
	if color {
		p.colors = map[string]string{}
	}
	for i, t := range procs {
		name := t.Group + "/" + t.Process
		qn := termsafe.Quote(name)
		p.width = max(p.width, len(qn))
		if color {
			p.colors[name] = tty.PrefixColor(i)
		}
	}
	return p
}

func (p *linePrefixer) append(b []byte, name string) []byte {
	if !p.on {
		return b
	}
	return tty.AppendPrefix(b, termsafe.Quote(name), p.width, p.colors[name])
}
