package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

func newStatusCmd(f *ctlFlags) *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:   "status [GROUP[/PROCESS]] [-w] [-o wide|json]",
		Short: "Show groups and processes, like kubectl get pods",
		Long: `Show every process of every group (or of one group, or one process): its
state with the reason (e.g. "waiting: CrashLoopBackOff (back-off 40s, next
start in 12s)"), readiness, restarts with the time since the last one
("4 (3s ago)"), how the last instance ended ("1 Error 5s ago",
"137 OOMKilled"), AGE and the process's own status line. AGE is the
process's, like a pod's in kubectl: since podsup took it on (up, or the
reload that added it); a restart does not reset it. Inits show as
NAME (init), sidecars (inits with restart_policy "always") as
NAME (sidecar).

-o wide adds the pid, the cgroup and when a process in CrashLoopBackOff
starts next. -w (--watch) prints the table, then a line for each process
whose status changes, as the change happens: podsup pushes the changes
down the socket, nothing is polled. A process or a group that a reload
removed gets a line saying "removed" ("group removed").

-o json prints the API's status object (see api/types.go; fields are only
ever added). With -w it prints a Kubernetes-style watch event per line,
each holding a whole group (every process of it, never a difference):
  {"type":"ADDED","group":{...}}     one per group first, and a new one
  {"type":"BOOKMARK"}                once: the lines before were the whole state
  {"type":"MODIFIED","group":{...}}  a group that changed
  {"type":"DELETED","group":{...}}   a group that is gone, with its last state
Keep a map by .group.name: ADDED and MODIFIED set it, DELETED removes it;
skip a type you do not know. With GROUP/PROCESS, DELETED says the process
is gone.`,
		Example: `  podsup status
  podsup status web -o wide
  podsup status -w
  podsup status web/api -o json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			wide := f.output == "wide"
			group, process, err := optionalTarget(args)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if watch {
				return watchStatus(cmd, f.client(), group, process, wide, asJSON)
			}
			get := f.client().Status
			if wide {
				get = f.client().StatusWide
			}
			st, err := get(cmd.Context(), group, process)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(termsafe.NewJSONWriter(out), st)
			}
			t := newStatusTable(out, wide)
			t.rows(st, time.Now())
			return t.flush()
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the table, print each change as it happens (until ^C)")
	return cmd
}

// watchStatus prints the status, then each change the server streams.
func watchStatus(cmd *cobra.Command, c *api.Client, group, process string, wide, asJSON bool) error {
	ctx, cancel := signalContext()
	defer cancel()
	out := cmd.OutOrStdout()
	w := &statusWatch{t: newStatusTable(out, wide), process: process, groups: map[string]api.GroupStatus{}}
	err := c.Watch(ctx, group, process, wide, func(e api.WatchEvent) error {
		if asJSON {
			return printJSONLine(out, e) // the API's line, BOOKMARK included
		}
		return w.event(e, time.Now())
	})
	if ctx.Err() != nil {
		return nil
	}
	// A shutdown ends the watch normally (streamend.go); under -o json
	// the line goes to stderr, which keeps stdout JSON.
	end := out
	if asJSON {
		end = cmd.ErrOrStderr()
	}
	return streamEnded(end, c.Socket, err)
}

// statusWatch prints the lines of a watch as table rows: the whole state
// under the header once the server says it is whole (BOOKMARK), then, for
// each line, a row for each process that appeared or changed, and a
// "removed" row for each process or group that went away. It keeps the
// last state of every group to know which.
type statusWatch struct {
	t       *statusTable
	process string
	synced  bool
	groups  map[string]api.GroupStatus
}

func (w *statusWatch) event(e api.WatchEvent, now time.Time) error {
	if e.Type == api.WatchBookmark {
		if !w.synced {
			w.synced = true
			w.t.rows(api.StatusResponse{}, now) // the header, even with no rows
			return w.t.flush()
		}
		return nil
	}
	if e.Group == nil {
		return nil // a type this client does not know
	}
	g := *e.Group
	old, had := w.groups[g.Name]
	switch e.Type {
	case api.WatchDeleted:
		delete(w.groups, g.Name)
		if w.process != "" {
			for _, p := range allProcesses(g) {
				w.t.add(removedRow(g.Name, p.Name, w.t.wide))
			}
		} else {
			w.t.add(removedRow(g.Name, "-", w.t.wide))
		}
	case api.WatchAdded, api.WatchModified:
		w.groups[g.Name] = g
		w.t.rows(api.StatusResponse{Groups: []api.GroupStatus{changedOnly(old, g, had)}}, now)
		if had {
			for _, p := range allProcesses(old) {
				if !hasProcess(g, p.Name) {
					w.t.add(removedRow(g.Name, processName(p), w.t.wide))
				}
			}
		}
	default:
		return nil
	}
	if !w.synced {
		return nil // printed with the header at the BOOKMARK
	}
	return w.t.flush()
}

// changedOnly is g holding only the processes that differ from old's.
func changedOnly(old, g api.GroupStatus, had bool) api.GroupStatus {
	if !had {
		return g
	}
	before := map[string]api.ProcessStatus{}
	for _, p := range allProcesses(old) {
		before[p.Name] = p
	}
	keep := func(ps []api.ProcessStatus) []api.ProcessStatus {
		var out []api.ProcessStatus
		for _, p := range ps {
			if o, ok := before[p.Name]; !ok || !reflect.DeepEqual(o, p) {
				out = append(out, p)
			}
		}
		return out
	}
	g.Init, g.Processes = keep(g.Init), keep(g.Processes)
	return g
}

func allProcesses(g api.GroupStatus) []api.ProcessStatus {
	return append(append([]api.ProcessStatus{}, g.Init...), g.Processes...)
}

func hasProcess(g api.GroupStatus, name string) bool {
	for _, p := range allProcesses(g) {
		if p.Name == name {
			return true
		}
	}
	return false
}

// removedRow says that a process (or, with process "-", a whole group) is
// gone from podsup's configuration: a reload removed it.
func removedRow(group, process string, wide bool) []string {
	state := "removed"
	if process == "-" {
		state = "group removed"
	}
	row := []string{group, process, state, "-", "-", "-", "-"}
	if wide {
		row = append(row, "-", "-", "-")
	}
	return append(row, "")
}

// statusTable prints status rows, like kubectl get pods: the header once,
// with the first rows, and the columns as wide as the widest cell so far,
// so that the lines of a watch line up under the header as long as their
// cells fit.
type statusTable struct {
	w      io.Writer
	wide   bool
	header bool
	widths []int
	lines  [][]string
}

func newStatusTable(w io.Writer, wide bool) *statusTable {
	return &statusTable{w: w, wide: wide}
}

// rows queues the rows of st; flush prints them.
func (t *statusTable) rows(st api.StatusResponse, now time.Time) {
	if !t.header {
		t.header = true
		cols := []string{"GROUP", "PROCESS", "STATE", "READY", "RESTARTS", "LAST EXIT", "AGE"}
		if t.wide {
			cols = append(cols, "PID", "CGROUP", "NEXT START")
		}
		t.add(append(cols, "STATUS"))
	}
	for _, g := range st.Groups {
		for _, p := range append(append([]api.ProcessStatus{}, g.Init...), g.Processes...) {
			t.add(statusRow(g.Name, p, t.wide, now))
		}
	}
}

// add queues one row. Its cells are quoted for the terminal (termsafe): a
// reason, a message or a process's STATUS= line may hold anything.
func (t *statusTable) add(cells []string) {
	for i, c := range cells {
		c = termsafe.Quote(c)
		cells[i] = c
		if i == len(t.widths) {
			t.widths = append(t.widths, 0)
		}
		t.widths[i] = max(t.widths[i], len(c))
	}
	t.lines = append(t.lines, cells)
}

// flush prints the queued rows, each cell but the last padded to its
// column's width and two spaces.
func (t *statusTable) flush() error {
	var b strings.Builder
	for _, cells := range t.lines {
		for i, c := range cells {
			if i == len(cells)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", t.widths[i]-len(c)+2))
		}
		b.WriteString("\n")
	}
	t.lines = t.lines[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

// statusRow is one process's columns.
func statusRow(group string, p api.ProcessStatus, wide bool, now time.Time) []string {
	row := []string{group, processName(p), describeState(p, now), yesNo(p.Ready), restarts(p, now), lastExit(p, now), processAge(p, now)}
	if wide {
		pid, cg, next := "-", "-", "-"
		if p.Pid > 0 && p.State == "running" {
			pid = fmt.Sprint(p.Pid)
		}
		if p.Cgroup != "" {
			cg = p.Cgroup
		}
		if p.NextStartAt != nil {
			next = p.NextStartAt.Local().Format("15:04:05.000")
		}
		row = append(row, pid, cg, next)
	}
	// STATUS is the process's own line (sd_notify STATUS=).
	return append(row, p.StatusText)
}

// processName is the PROCESS cell: the name, marked when an init or a
// sidecar.
func processName(p api.ProcessStatus) string {
	switch {
	case p.Sidecar:
		return p.Name + " (sidecar)"
	case p.Init:
		return p.Name + " (init)"
	}
	return p.Name
}

// processAge is AGE: since podsup took the process on (created_at), as
// kubectl's AGE is the pod's (printPod in kubectl's
// pkg/printers/internalversion/printers.go prints
// translateTimestampSince(pod.CreationTimestamp)), so a restart does not
// reset it and a waiting process has one; RESTARTS says when the last
// instance ended. An older podsup sends no created_at: then the running
// instance's age, "-" while none runs.
func processAge(p api.ProcessStatus, now time.Time) string {
	switch {
	case p.CreatedAt != nil:
		return humanAge(now.Sub(*p.CreatedAt))
	case p.StartedAt != nil && p.State == "running":
		return humanAge(now.Sub(*p.StartedAt))
	}
	return "-"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// lastEnd is how the most recent instance ended: the terminated one, else
// the one before the current.
func lastEnd(p api.ProcessStatus) *api.Termination {
	if p.Terminated != nil {
		return p.Terminated
	}
	return p.LastTermination
}

// restarts is kubectl's RESTARTS: the count and, after a restart, how long
// ago the instance before ended ("4 (3s ago)").
func restarts(p api.ProcessStatus, now time.Time) string {
	s := fmt.Sprint(p.RestartCount)
	if last := lastEnd(p); p.RestartCount > 0 && last != nil && last.FinishedAt != nil {
		s += " (" + humanAge(now.Sub(*last.FinishedAt)) + " ago)"
	}
	return s
}

// lastExit is LAST EXIT: the last instance's exit code, its reason and how
// long ago ("1 Error 5s ago", "137 OOMKilled 2m ago"); "-" before any.
func lastExit(p api.ProcessStatus, now time.Time) string {
	last := lastEnd(p)
	if last == nil {
		return "-"
	}
	s := fmt.Sprint(last.ExitCode)
	if last.Reason != "" {
		s += " " + last.Reason
	}
	if last.FinishedAt != nil {
		s += " " + humanAge(now.Sub(*last.FinishedAt)) + " ago"
	}
	return s
}

// describeState reads like kubectl's STATUS column, with the back-off
// spelled out while a process waits in CrashLoopBackOff.
func describeState(p api.ProcessStatus, now time.Time) string {
	s := p.State
	if t := p.Terminating; t != nil {
		// S6: kubectl's Terminating, with how long the stop has been on.
		s += ": Terminating"
		if t.Since != nil {
			s += " (" + humanAge(now.Sub(*t.Since)) + ")"
		}
		return s
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	if p.Reason == "CrashLoopBackOff" && p.NextStartAt != nil {
		in := max(p.NextStartAt.Sub(now), 0)
		if p.Backoff != "" {
			s += fmt.Sprintf(" (back-off %s, next start in %s)", shortDelay(p.Backoff), delay(in))
		} else {
			s += fmt.Sprintf(" (next start in %s)", delay(in))
		}
	}
	if p.Reason == "DependencyWait" && p.Message != "" {
		s += " (" + p.Message + ")" // W3: what it waits for
	}
	if p.State == "terminated" && p.Terminated != nil {
		s += fmt.Sprintf(" (exit %d)", p.Terminated.ExitCode)
	}
	return s
}

// shortDelay prints a wire duration as delay does; one that does not parse
// is shown as sent.
func shortDelay(wire string) string {
	d, err := time.ParseDuration(wire)
	if err != nil {
		return wire
	}
	return delay(d)
}

// delay prints a wait (a back-off, a next start): to a tenth of a second
// while short, since sub-second back-offs are common in tests and on
// devices, then as an age.
func delay(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return humanAge(d)
}

// humanAge is kubectl's age (apimachinery's HumanDuration): the largest
// two units while they say something, then one: "3s", "2m5s", "12m",
// "4h", "5h30m", "3d", "3d4h", "400d", "2y10d".
func humanAge(d time.Duration) string {
	if d < 0 {
		return "0s"
	}
	seconds := int(d.Round(time.Second) / time.Second)
	minutes := seconds / 60
	hours := minutes / 60
	days := hours / 24
	years := days / 365
	switch {
	case seconds < 120:
		return fmt.Sprintf("%ds", seconds)
	case minutes < 10:
		return withRest(minutes, "m", seconds%60, "s")
	case minutes < 3*60:
		return fmt.Sprintf("%dm", minutes)
	case hours < 8:
		return withRest(hours, "h", minutes%60, "m")
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 8*24:
		return withRest(days, "d", hours%24, "h")
	case days < 2*365:
		return fmt.Sprintf("%dd", days)
	case years < 8:
		return withRest(years, "y", days%365, "d")
	}
	return fmt.Sprintf("%dy", years)
}

func withRest(n int, unit string, rest int, restUnit string) string {
	if rest == 0 {
		return fmt.Sprintf("%d%s", n, unit)
	}
	return fmt.Sprintf("%d%s%d%s", n, unit, rest, restUnit)
}

// printJSONLine prints v as one line of JSON, for streams, with the
// characters a terminal acts on that encoding/json leaves raw escaped
// (termsafe.AppendJSON).
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(termsafe.AppendJSON(nil, b), '\n'))
	return err
}
