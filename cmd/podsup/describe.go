package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
	"github.com/podsup/podsup/spec"
)

func newDescribeCmd(f *ctlFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP[/PROCESS]",
		Short: "Show a group or process in detail, like kubectl describe pod",
		Long: `Show a group in detail, like kubectl describe pod: its phase, conditions
(Initialized, Ready), sandbox, limits and cgroup usage, then each process
with its command, state (reason, since when), last state (how the instance
before ended), readiness, restart count, back-off (current delay, next
start), probes in kubelet's one-line form with their last result, hooks,
cgroup usage (CPU, memory against its limit, pids) and its recent events.
GROUP/PROCESS shows that process alone.

Everything comes from one request, GET /v1/describe/GROUP[/PROCESS], whose
answer -o json prints (see api/types.go, DescribeResponse). Usage is read
from the cgroup files when asked; a figure the kernel keeps in no cgroup
podsup made for the process (a group without limits on a cgroup v1 host
has no memory cgroup of its own) is left out.`,
		Example: `  podsup describe web
  podsup describe web/api
  podsup describe web/api -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			group, process, err := splitTarget(args[0])
			if err != nil {
				return err
			}
			d, err := f.client().Describe(cmd.Context(), group, process)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(termsafe.NewJSONWriter(cmd.OutOrStdout()), d)
			}
			return printDescription(cmd.OutOrStdout(), d.Group, process != "", time.Now())
		},
	}
}

// describer writes kubectl describe's "Key:<tab>value" lines, indented by
// level. Every key and value is quoted for the terminal (termsafe): they
// hold what processes and probes wrote (a probe's last result, a
// message), and a tab in one would also shift the columns.
type describer struct {
	tw  *tabwriter.Writer
	now time.Time
}

func (d *describer) line(level int, key, format string, args ...any) {
	fmt.Fprintf(d.tw, "%s%s:\t%s\n", strings.Repeat("  ", level), termsafe.Quote(key), termsafe.Quote(fmt.Sprintf(format, args...)))
}

func (d *describer) head(level int, key string) {
	fmt.Fprintf(d.tw, "%s%s:\n", strings.Repeat("  ", level), termsafe.Quote(key))
}

// printDescription prints a group (with onlyProcess, just its one process
// and that process's events) like kubectl describe pod.
func printDescription(w io.Writer, g api.GroupDescription, onlyProcess bool, now time.Time) error {
	d := &describer{tw: tabwriter.NewWriter(w, 0, 8, 1, ' ', 0), now: now}
	if onlyProcess {
		for _, p := range g.Processes {
			d.line(0, "Group", "%s", g.Name)
			d.process(0, p, false)
		}
		return d.tw.Flush()
	}
	d.line(0, "Name", "%s", g.Name)
	d.line(0, "Phase", "%s", g.Phase)
	d.line(0, "Ready", "%s", trueFalse(g.Ready))
	if g.ReadinessHeldBy != "" {
		d.line(0, "Readiness Held By", "%s", g.ReadinessHeldBy)
	}
	if g.RestartPolicy != "" {
		d.line(0, "Restart Policy", "%s", g.RestartPolicy)
	}
	if len(g.DependsOn) > 0 {
		d.line(0, "Depends On", "%s", strings.Join(g.DependsOn, ", "))
	}
	if g.Grace != "" {
		d.line(0, "Grace Period", "%s", g.Grace)
	}
	if b := g.Backoff; b != nil {
		d.line(0, "Back-off", "initial=%s max=%s reset=%s", b.Initial, b.Max, b.Reset)
	}
	d.sandbox(g.Sandbox)
	if g.Cgroup != "" {
		d.line(0, "Cgroup", "%s", g.Cgroup)
	}
	if g.Usage != nil {
		d.line(0, "Usage", "%s", usageLine(*g.Usage))
	}
	d.head(0, "Conditions")
	fmt.Fprintf(d.tw, "  Type\tStatus\n")
	for _, c := range g.Conditions {
		fmt.Fprintf(d.tw, "  %s\t%s\n", termsafe.Quote(c.Type), trueFalse(c.Status))
	}
	if len(g.Init) > 0 {
		d.head(0, "Init Processes")
		for _, p := range g.Init {
			d.process(1, p, true)
		}
	}
	d.head(0, "Processes")
	for _, p := range g.Processes {
		d.process(1, p, true)
	}
	d.events(0, g.Events)
	return d.tw.Flush()
}

func (d *describer) sandbox(sb *api.SandboxDescription) {
	if sb == nil {
		d.line(0, "Sandbox", "none (host namespaces)")
		return
	}
	ns := "host's"
	if len(sb.Namespaces) > 0 {
		ns = strings.Join(sb.Namespaces, ",")
	}
	d.head(0, "Sandbox")
	d.line(1, "Namespaces", "%s", ns)
	if sb.Hostname != "" {
		d.line(1, "Hostname", "%s", sb.Hostname)
	}
	if sb.Rootfs != "" {
		d.line(1, "Rootfs", "%s", sb.Rootfs)
	}
	for _, m := range sb.Mounts {
		d.line(1, "Mount", "%s", m)
	}
	if l := sb.Limits; l != nil {
		d.line(1, "Limits", "%s", limitsLine(*l))
	}
	if sb.NetworkMode != "" {
		d.line(1, "Network", "%s", sb.NetworkMode)
	}
	for _, p := range sb.Ports {
		d.line(1, "Port", "%s", p)
	}
	if n := sb.Network; n != nil {
		d.line(1, "CNI Network", "%s (container id %s)", n.Network, n.ContainerID)
		d.line(1, "Interface", "%s %s", n.Interface, strings.Join(n.IPs, ","))
		if len(n.Gateways) > 0 {
			d.line(1, "Gateway", "%s", strings.Join(n.Gateways, ","))
		}
		d.line(1, "Check", "%s", n.Check)
		if len(n.Result) > 0 {
			d.line(1, "CNI Result", "%s", n.Result)
		}
	}
}

// process prints one process; named, under a heading with its name (a
// group's list), else with a Name line.
func (d *describer) process(level int, p api.ProcessDescription, named bool) {
	if named {
		d.head(level, p.Name)
		level++
	} else {
		d.line(level, "Name", "%s", p.Name)
	}
	if p.Command != nil {
		d.line(level, "Command", "%v", p.Command) // quoted by line, as every value
	}
	if p.RestartPolicy != "" {
		d.line(level, "Restart Policy", "%s", p.RestartPolicy)
	}
	if l := p.Limits; l != nil {
		d.line(level, "Limits", "%s", limitsLine(*l))
	}
	if len(p.DependsOn) > 0 {
		d.line(level, "Depends On", "%s", strings.Join(p.DependsOn, ", "))
	}
	d.state(level, p.ProcessStatus)
	if last := p.LastTermination; last != nil {
		d.line(level, "Last State", "Terminated")
		d.termination(level+1, *last)
	}
	d.line(level, "Ready", "%s", trueFalse(p.Ready))
	d.line(level, "Restart Count", "%d", p.RestartCount)
	if p.NextStartAt != nil {
		in := max(p.NextStartAt.Sub(d.now), 0)
		back := p.Backoff
		if back == "" {
			back = "?"
		}
		d.line(level, "Back-off", "%s, next start at %s (in %s)", shortDelay(back), p.NextStartAt.Local().Format("15:04:05.000"), delay(in))
	}
	for _, pr := range p.Probes {
		d.line(level, probeTitle(pr.Kind), "%s", probeLine(pr))
		result := pr.LastResult
		if pr.LastFailure != "" && pr.LastFailureAt != nil {
			result += fmt.Sprintf(" (last failure %s ago: %s)", humanAge(d.now.Sub(*pr.LastFailureAt)), pr.LastFailure)
		}
		d.line(level+1, "Last Result", "%s", result)
	}
	if len(p.Hooks) > 0 {
		d.head(level, "Hooks")
		for _, h := range p.Hooks {
			line := h.Action
			if h.Timeout != "" {
				line += " timeout=" + h.Timeout
			}
			d.line(level+1, h.Point, "%s", line)
		}
	}
	if p.Security != nil {
		d.security(level, *p.Security)
	}
	if p.Cgroup != "" {
		d.line(level, "Cgroup", "%s", p.Cgroup)
	}
	if p.Usage != nil {
		d.line(level, "Usage", "%s", usageLine(*p.Usage))
	}
	d.events(level, p.Events)
}

// security prints a process's security context: what /proc says of the
// running process, then the sandbox's filesystem settings, which /proc
// does not show.
func (d *describer) security(level int, s api.SecurityDescription) {
	d.head(level, "Security")
	level++
	if l := s.Live; l != nil {
		groups := make([]string, len(l.Groups))
		for i, g := range l.Groups {
			groups[i] = strconv.Itoa(g)
		}
		d.line(level, "User", "uid=%d gid=%d groups=%s", l.UID, l.GID, orNone(strings.Join(groups, ",")))
		d.line(level, "Cap Effective", "%s", capList(l.CapEffective))
		d.line(level, "Cap Bounding", "%s", capList(l.CapBounding))
		d.line(level, "Cap Ambient", "%s", capList(l.CapAmbient))
		d.line(level, "No New Privs", "%s", trueFalse(l.NoNewPrivs))
		seccomp := l.Seccomp
		if s.Seccomp != "" && l.Seccomp == "filter" {
			seccomp += " (" + s.Seccomp + ")"
		}
		d.line(level, "Seccomp", "%s", seccomp)
	} else {
		// Not running: what its start will ask for.
		d.line(level, "No New Privs", "%s (configured)", trueFalse(s.NoNewPrivileges))
		d.line(level, "Seccomp", "%s (configured)", orNone(s.Seccomp))
	}
	d.line(level, "Read-only Root", "%s", trueFalse(s.ReadOnlyRootFilesystem))
	d.line(level, "Private Tmp", "%s", trueFalse(s.PrivateTmp))
	switch {
	case s.ProcMount == "":
		d.line(level, "Proc Mount", "host's")
	case s.MaskedProc:
		d.line(level, "Proc Mount", "%s (masked paths hidden)", s.ProcMount)
	default:
		d.line(level, "Proc Mount", "%s", s.ProcMount)
	}
	if s.UserNamespace {
		d.line(level, "User Namespace", "yes (root inside is an unprivileged user on the host)")
	} else {
		d.line(level, "User Namespace", "no (root inside is root on the host; a sandbox's user_namespace = true changes that)")
	}
}

// capList is a capability set as describe shows it: "none", "all (N)"
// for every capability podsup knows, or the names.
func capList(names []string) string {
	switch {
	case len(names) == 0:
		return "none"
	case len(names) >= len(spec.CapabilityNames):
		return fmt.Sprintf("all (%d)", len(names))
	}
	return strings.Join(names, ",")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// state prints kubectl's State block: the state, then its reason, message
// and since when.
func (d *describer) state(level int, p api.ProcessStatus) {
	d.line(level, "State", "%s", titleCase(p.State))
	switch {
	case p.State == "terminated" && p.Terminated != nil:
		d.termination(level+1, *p.Terminated)
		return
	case p.State == "running" && p.StartedAt != nil:
		d.line(level+1, "Started", "%s (%s ago)", when(*p.StartedAt), humanAge(d.now.Sub(*p.StartedAt)))
	}
	if t := p.Terminating; t != nil {
		d.terminating(level+1, *t)
	}
	if p.Reason != "" {
		d.line(level+1, "Reason", "%s", p.Reason)
	}
	if p.Message != "" {
		d.line(level+1, "Message", "%s", p.Message)
	}
	if p.Pid > 0 && p.State == "running" {
		d.line(level+1, "Pid", "%d", p.Pid)
	}
	if p.StatusText != "" {
		d.line(level+1, "Status", "%s", p.StatusText)
	}
}

// terminating is S6's stop under way, as kubectl describe says a pod is
// "Terminating (lasts 8s)": since when, why and who asked.
func (d *describer) terminating(level int, t api.Terminating) {
	var parts []string
	if t.Reason != "" {
		why := t.Reason
		if t.RequestedBy != "" {
			why += " requested by " + t.RequestedBy
		}
		parts = append(parts, why)
	}
	if t.Since != nil {
		parts = append(parts, fmt.Sprintf("since %s (%s ago)", when(*t.Since), humanAge(d.now.Sub(*t.Since))))
	}
	d.line(level, "Terminating", "%s", strings.Join(parts, ", "))
}

func (d *describer) termination(level int, t api.Termination) {
	if t.Reason != "" {
		d.line(level, "Reason", "%s", t.Reason)
	}
	if t.Message != "" {
		d.line(level, "Message", "%s", t.Message)
	}
	d.line(level, "Exit Code", "%d", t.ExitCode)
	if t.Signal != "" {
		d.line(level, "Signal", "%s", t.Signal)
	}
	if t.StartedAt != nil {
		d.line(level, "Started", "%s", when(*t.StartedAt))
	}
	if t.FinishedAt != nil {
		d.line(level, "Finished", "%s (%s ago)", when(*t.FinishedAt), humanAge(d.now.Sub(*t.FinishedAt)))
	}
}

// events prints kubectl describe's Events table: type, reason, age (with
// "(x4 over 10s)" for a series) and message.
func (d *describer) events(level int, evs []api.Event) {
	pad := strings.Repeat("  ", level)
	if len(evs) == 0 {
		fmt.Fprintf(d.tw, "%sEvents:\t<none>\n", pad)
		return
	}
	fmt.Fprintf(d.tw, "%sEvents:\n", pad)
	fmt.Fprintf(d.tw, "%s  Type\tReason\tAge\tMessage\n", pad)
	for _, e := range evs {
		age := humanAge(d.now.Sub(e.LastTime))
		if e.Count > 1 {
			age += fmt.Sprintf(" (x%d over %s)", e.Count, humanAge(e.LastTime.Sub(e.FirstTime)))
		}
		fmt.Fprintf(d.tw, "%s  %s\t%s\t%s\t%s\n", pad, termsafe.Quote(e.Type), termsafe.Quote(e.Reason), age, termsafe.Quote(e.Message))
	}
}

// probeLine is kubelet's one-line probe: "exec [/bin/true] delay=0s
// timeout=1s period=10s #success=1 #failure=3".
func probeLine(p api.ProbeDescription) string {
	return fmt.Sprintf("%s delay=%s timeout=%s period=%s #success=%d #failure=%d",
		p.Action, p.InitialDelay, p.Timeout, p.Period, p.SuccessThreshold, p.FailureThreshold)
}

func probeTitle(kind string) string { return titleCase(kind) }

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func trueFalse(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// when is kubectl describe's time: RFC 1123 with a numeric zone, local.
func when(t time.Time) string { return t.Local().Format(time.RFC1123Z) }

// usageLine is "cpu=1.2s memory=3.4MiB/64MiB pids=3/100": each figure
// there is, with its limit when one is set.
func usageLine(u api.Usage) string {
	parts := []string{}
	if u.CPU != "" {
		parts = append(parts, "cpu="+u.CPU)
	}
	if u.MemoryBytes > 0 {
		m := "memory=" + humanBytes(u.MemoryBytes)
		if u.MemoryLimitBytes > 0 {
			m += "/" + humanBytes(u.MemoryLimitBytes)
		}
		parts = append(parts, m)
	}
	if u.Pids > 0 {
		p := fmt.Sprintf("pids=%d", u.Pids)
		if u.PidsLimit > 0 {
			p += fmt.Sprintf("/%d", u.PidsLimit)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func limitsLine(l api.Limits) string {
	parts := []string{}
	if l.MemoryBytes > 0 {
		parts = append(parts, "memory="+humanBytes(uint64(l.MemoryBytes)))
	}
	if l.CPU > 0 {
		parts = append(parts, fmt.Sprintf("cpu=%g", l.CPU))
	}
	if l.CPUWeight > 0 {
		parts = append(parts, fmt.Sprintf("cpu_weight=%d", l.CPUWeight))
	}
	if l.Pids > 0 {
		parts = append(parts, fmt.Sprintf("pids=%d", l.Pids))
	}
	return strings.Join(parts, " ")
}

// humanBytes is a size in binary units, as kubectl prints quantities:
// "512B", "3.4MiB", "64MiB".
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	return s + []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}[i] + "B"
}
