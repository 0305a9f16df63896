package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

func newEventsCmd(f *ctlFlags) *cobra.Command {
	var (
		follow bool
		forObj string
		types  []string
	)
	cmd := &cobra.Command{
		Use:   "events [GROUP[/PROCESS]] [--for GROUP[/PROCESS]] [--types Warning,Normal] [-f]",
		Short: "Show kubelet-style events (Created, Started, Killing, BackOff, Unhealthy, ...)",
		Long: `Show kubelet-style events (Created, Started, Killing, BackOff, Unhealthy, ...), the
kept history and, with -f, new ones as they happen. As in kubelet, an exit is
no event: its exit code and reason are in status and describe (Last State).

GROUP (or --for GROUP, as kubectl events --for pod/NAME) keeps the events of
that group and of its processes; GROUP/PROCESS those of that process.
--types Warning,Normal keeps the events of those types (case does not
matter), as kubectl events --types does.

An event that repeats identically (a probe failing at every period, a
process in CrashLoopBackOff refused a start) is one line with its count and
span, "(x12 over 1m5s)", at the time of its last occurrence; -f prints each
repeat with the count so far. TIME is the local time of the event's last
occurrence, with its date ("2026-11-26 14:02:11") when it is not from
today; -o wide prints it in RFC 3339 with the offset, always with the date.
-o json has "count", "first_time" and "last_time" on every event.`,
		Example: `  podsup events
  podsup events web/api
  podsup events --for web --types Warning
  podsup events -f -o json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			sel, err := newEventFilter(args, forObj, types)
			if err != nil {
				return err
			}
			wide := f.output == "wide"
			ctx, cancel := signalContext()
			defer cancel()
			out := cmd.OutOrStdout()
			if !asJSON {
				width := 12
				if wide {
					width = len(eventTimeWide)
				}
				fmt.Fprintf(out, "%-*s  %-7s  %-20s  %-20s  %s\n", width, "TIME", "TYPE", "REASON", "OBJECT", "MESSAGE")
			}
			err = f.client().Events(ctx, follow, func(e api.Event) error {
				if !sel.keeps(e) {
					return nil
				}
				if asJSON {
					b, _ := json.Marshal(e)
					_, err := out.Write(append(termsafe.AppendJSON(nil, b), '\n'))
					return err
				}
				return printEvent(out, e, wide) // eventline.go: quoted for the terminal
			})
			if ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	cmd.Flags().StringVar(&forObj, "for", "", "only the events of GROUP or GROUP/PROCESS (kubectl events --for)")
	cmd.Flags().StringSliceVar(&types, "types", nil, "only the events of these types: Warning, Normal (kubectl events --types)")
	_ = cmd.RegisterFlagCompletionFunc("types", cobra.FixedCompletions([]string{"Warning", "Normal"}, cobra.ShellCompDirectiveNoFileComp)) // only fails for an unknown flag
	_ = cmd.RegisterFlagCompletionFunc("for", completeTargets(f))                                                                          // the same
	return cmd
}

// eventFilter is what `podsup events` keeps: the events of a group (and
// its processes) or of one process, of some types. The zero value keeps
// everything.
type eventFilter struct {
	group, process string
	types          []string // canonical: Warning, Normal
}

// newEventFilter reads the GROUP[/PROCESS] argument, --for (the same, as
// kubectl spells it) and --types.
func newEventFilter(args []string, forObj string, types []string) (eventFilter, error) {
	var sel eventFilter
	target := forObj
	if len(args) == 1 {
		if forObj != "" && forObj != args[0] {
			return sel, fmt.Errorf("events of %q or of --for %q? give one of them", args[0], forObj)
		}
		target = args[0]
	}
	if target != "" {
		var err error
		if sel.group, sel.process, err = splitTarget(target); err != nil {
			return sel, err
		}
	}
	for _, t := range types {
		switch {
		case strings.EqualFold(t, "Warning"):
			sel.types = append(sel.types, "Warning")
		case strings.EqualFold(t, "Normal"):
			sel.types = append(sel.types, "Normal")
		default:
			return sel, fmt.Errorf("unknown event type %q in --types: use Warning, Normal or both (--types Warning,Normal)", t)
		}
	}
	return sel, nil
}

func (s eventFilter) keeps(e api.Event) bool {
	if s.group != "" && e.Group != s.group {
		return false
	}
	if s.process != "" && e.Process != s.process {
		return false
	}
	if len(s.types) == 0 {
		return true
	}
	for _, t := range s.types {
		if e.Type == t {
			return true
		}
	}
	return false
}
