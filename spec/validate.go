package spec

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FieldError is one validation failure. Path names the field the way the
// HCL file spells it, e.g. ["group", "web", "process", "api",
// "liveness_probe", "success_threshold"], so the config loader can point at
// the file:line:col of that field.
type FieldError struct {
	Path []string
	Msg  string
}

func (e *FieldError) Error() string { return strings.Join(e.Path, ".") + ": " + e.Msg }

// Errors is every validation failure found, in file order.
type Errors []*FieldError

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Err returns es as an error, or nil when empty.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// AsErrors returns the field errors inside err, if it holds any.
func AsErrors(err error) (Errors, bool) {
	var es Errors
	if errors.As(err, &es) {
		return es, true
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return Errors{fe}, true
	}
	return nil, false
}

type checker struct {
	errs Errors
}

func (c *checker) add(path []string, format string, args ...any) {
	p := append([]string(nil), path...)
	c.errs = append(c.errs, &FieldError{Path: p, Msg: fmt.Sprintf(format, args...)})
}

func at(path []string, more ...string) []string {
	out := make([]string, 0, len(path)+len(more))
	return append(append(out, path...), more...)
}

// Validate checks a whole configuration and returns every problem found.
func (c *Config) Validate() error {
	var ch checker
	ch.supervisor(c.Supervisor)
	ch.backoff([]string{"backoff"}, c.Backoff)
	seen := map[string]bool{}
	for i := range c.Groups {
		g := &c.Groups[i]
		if seen[g.Name] {
			ch.add([]string{"group", g.Name}, "duplicate group %q: group names must be unique", g.Name)
		}
		seen[g.Name] = true
		ch.group(g)
	}
	ch.dependencies(c)
	ch.bridges(c)
	return ch.errs.Err()
}

// bridges checks that groups on one bridge agree on its subnet (the bridge
// holds one gateway address) and publish no host port twice.
func (ch *checker) bridges(c *Config) {
	type first struct{ group, subnet string }
	subnets := map[string]first{}
	type hostKey struct {
		ip    string
		port  int
		proto string
	}
	ports := map[hostKey]string{}
	for i := range c.Groups {
		g := &c.Groups[i]
		if g.Sandbox == nil || g.Sandbox.Network == nil {
			continue
		}
		n := g.Sandbox.Network
		p := []string{"group", g.Name, "sandbox", "network"}
		if n.Mode == NetworkBridge {
			bridge, subnet := n.Bridge, n.Subnet
			if bridge == "" {
				bridge = DefaultBridge
			}
			if subnet == "" {
				subnet = DefaultBridgeSubnet
			}
			if f, ok := subnets[bridge]; ok && f.subnet != subnet {
				ch.add(at(p, "subnet"), "bridge %q has subnet %s in group %q: groups on one bridge share its subnet", bridge, f.subnet, f.group)
			} else if !ok {
				subnets[bridge] = first{g.Name, subnet}
			}
		}
		for _, port := range n.Ports {
			if port.HostPort == 0 {
				continue
			}
			k := hostKey{port.HostIP, port.HostPort, port.Protocol}
			if k.proto == "" {
				k.proto = "tcp"
			}
			if other, ok := ports[k]; ok && other != g.Name {
				ch.add(at(p, "port", port.Name, "host_port"), "host port %d/%s is published by group %q too", port.HostPort, k.proto, other)
			}
			ports[k] = g.Name
		}
	}
}

// Validate checks one group and returns every problem found.
func (g *Group) Validate() error {
	var ch checker
	ch.group(g)
	return ch.errs.Err()
}

func (ch *checker) supervisor(s Supervisor) {
	p := []string{"supervisor"}
	switch s.LogFormat {
	case "", "console", "json":
	default:
		ch.add(at(p, "log_format"), "log_format %q is not one of \"console\", \"json\"", s.LogFormat)
	}
	switch s.LogLevel {
	case "", "trace", "debug", "info", "warn", "error":
	default:
		ch.add(at(p, "log_level"), "log_level %q is not one of trace, debug, info, warn, error", s.LogLevel)
	}
	if s.MinimumGrace != nil && *s.MinimumGrace < 0 {
		ch.add(at(p, "minimum_grace"), "minimum_grace must not be negative, got %s", *s.MinimumGrace)
	}
	switch s.NotifyReady {
	case "", "ready", "started":
	default:
		ch.add(at(p, "notify_ready"), "notify_ready %q is not one of \"ready\", \"started\"", s.NotifyReady)
	}
	if s.MetricsListen != "" {
		if err := checkMetricsListen(s.MetricsListen, s.MetricsAllowRemote); err != "" {
			ch.add(at(p, "metrics_listen"), "%s", err)
		}
	}
	switch s.StopOrder {
	case "", StopOrdered, StopParallel:
	default:
		ch.add(at(p, "stop_order"), "stop_order %q is not one of \"ordered\", \"parallel\"", string(s.StopOrder))
	}
	if s.Socket != "" && !filepath.IsAbs(s.Socket) {
		ch.add(at(p, "socket"), "socket must be an absolute path, got %q", s.Socket)
	}
}

func (ch *checker) backoff(p []string, b Backoff) {
	if b.Initial < 0 {
		ch.add(at(p, "initial"), "initial must not be negative, got %s", b.Initial)
	}
	if b.Max < 0 {
		ch.add(at(p, "max"), "max must not be negative, got %s", b.Max)
	}
	if b.Reset < 0 {
		ch.add(at(p, "reset"), "reset must not be negative, got %s", b.Reset)
	}
}

// ValidName reports whether s can name a group or process: 1–63 characters
// of letters, digits, '-', '_' and '.', starting with a letter or digit.
func ValidName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || (r != '-' && r != '_' && r != '.')) {
			return false
		}
	}
	return true
}

func (ch *checker) group(g *Group) {
	p := []string{"group", g.Name}
	if !ValidName(g.Name) {
		ch.add(p, "group name %q is not valid: use 1-63 letters, digits, '-', '_' or '.', starting with a letter or digit", g.Name)
	}
	ch.restartPolicy(at(p, "restart_policy"), g.RestartPolicy)
	if g.TerminationGracePeriod != nil && *g.TerminationGracePeriod < 0 {
		ch.add(at(p, "termination_grace_period"), "termination_grace_period must not be negative, got %s", *g.TerminationGracePeriod)
	}
	if g.Backoff != nil {
		ch.backoff(at(p, "backoff"), *g.Backoff)
	}
	if l := g.BackoffLimit; l != nil {
		switch {
		case *l < 0:
			ch.add(at(p, "backoff_limit"), "backoff_limit must not be negative, got %d", *l)
		case g.RestartPolicy != RestartOnFailure && g.RestartPolicy != RestartNever:
			ch.add(at(p, "backoff_limit"), "backoff_limit is for a run-to-completion group, restart_policy \"on-failure\" or \"never\" (a Job's), not %q", cmp.Or(g.RestartPolicy, RestartAlways))
		}
	}
	if g.Sandbox != nil {
		ch.sandbox(at(p, "sandbox"), g.Sandbox)
	}
	ch.security(p, &g.Security, "")
	if len(g.Processes) == 0 {
		ch.add(p, "group %q has no process: add at least one process block", g.Name)
	}
	seen := map[string]bool{}
	for i := range g.Init {
		pr := &g.Init[i]
		pp := at(p, "init", pr.Name)
		if seen[pr.Name] {
			ch.add(pp, "duplicate name %q: init and process names must be unique in a group", pr.Name)
		}
		seen[pr.Name] = true
		ch.process(pp, pr, true)
		ch.groupSecurity(pp, g, pr)
	}
	for i := range g.Processes {
		pr := &g.Processes[i]
		pp := at(p, "process", pr.Name)
		if seen[pr.Name] {
			ch.add(pp, "duplicate name %q: init and process names must be unique in a group", pr.Name)
		}
		seen[pr.Name] = true
		ch.process(pp, pr, false)
		ch.groupSecurity(pp, g, pr)
	}
	for _, list := range []struct {
		kind  string
		procs []Process
	}{{"init", g.Init}, {"process", g.Processes}} {
		for _, pr := range list.procs {
			if pr.Resources != (Resources{}) && g.Sandbox == nil {
				ch.add(at(p, list.kind, pr.Name, "resources"), "a process's resources limit its own cgroup, inside its group's: add a sandbox block to the group (sandbox {} alone gives it a cgroup and no namespaces)")
			}
		}
	}
	ch.volumes(p, g)
	ch.sleepHooks(g)
	ch.processDependencies(g)
}

// groupSecurity checks pr's security context, and what its group's
// defaults make of it.
func (ch *checker) groupSecurity(p []string, g *Group, pr *Process) {
	ch.security(p, &pr.Security, pr.User)
	if pr.Security.RunAsNonRoot == nil && IsSet(g.Security.RunAsNonRoot) && (pr.User == "0" || pr.User == "root") {
		ch.add(at(p, "user"), "the group sets run_as_non_root, which refuses a process that runs as root, and user = %q is root: set another user, or run_as_non_root = false on this process", pr.User)
	}
}

func (ch *checker) restartPolicy(p []string, r RestartPolicy) {
	switch r {
	case "", RestartAlways, RestartOnFailure, RestartNever:
	default:
		ch.add(p, "restart_policy %q is not one of \"always\", \"on-failure\", \"never\"", string(r))
	}
}

func (ch *checker) process(p []string, pr *Process, isInit bool) {
	if !ValidName(pr.Name) {
		ch.add(p, "name %q is not valid: use 1-63 letters, digits, '-', '_' or '.', starting with a letter or digit", pr.Name)
	}
	if len(pr.Command) == 0 || pr.Command[0] == "" {
		ch.add(at(p, "command"), "command is empty: give the program and its arguments, e.g. [\"/usr/bin/env\", \"sleep\", \"60\"]")
	}
	ch.resources(at(p, "resources"), pr.Resources)
	if pr.StopSignal < 0 || pr.StopSignal > 64 {
		ch.add(at(p, "stop_signal"), "stop_signal %d is not a signal number (1-64)", int(pr.StopSignal))
	}
	ch.restartPolicy(at(p, "restart_policy"), pr.RestartPolicy)
	// O1: an init takes restart_policy "always" (a sidecar) or none, as
	// Kubernetes allows only Always on an init container.
	sidecar := isInit && IsSidecar(pr)
	if isInit && pr.RestartPolicy != "" && !sidecar {
		ch.add(at(p, "restart_policy"), "an init takes only restart_policy = \"always\", which makes it a sidecar (it keeps running beside the processes); without it an init runs to completion, retried under the group's restart policy")
	}
	// A plain init runs to completion: probes and readiness mean nothing
	// there. A sidecar runs for the group's life and takes them all (O5).
	plainInit := isInit && !sidecar
	probes := []struct {
		kind  ProbeKind
		field string
		probe *Probe
	}{
		{Startup, "startup_probe", pr.StartupProbe},
		{Liveness, "liveness_probe", pr.LivenessProbe},
		{Readiness, "readiness_probe", pr.ReadinessProbe},
	}
	for _, x := range probes {
		if x.probe == nil {
			continue
		}
		if plainInit {
			ch.add(at(p, x.field), "init processes run to completion and cannot have a %s (a sidecar, restart_policy = \"always\", can)", x.field)
			continue
		}
		ch.probe(at(p, x.field), x.kind, x.probe)
	}
	hooks := []struct {
		point HookPoint
		hook  *Hook
	}{{PreStart, pr.PreStart}, {PostStart, pr.PostStart}, {PreStop, pr.PreStop}, {PostStop, pr.PostStop}}
	for _, x := range hooks {
		if x.hook != nil {
			ch.hook(at(p, string(x.point)), x.hook)
		}
	}
	ch.readiness(p, pr, plainInit)
	switch pr.Log.Mode {
	case "", "capture", "passthrough":
	default:
		ch.add(at(p, "log", "mode"), "log mode %q is not one of \"capture\", \"passthrough\"", pr.Log.Mode)
	}
	if pr.Log.NoStdout && pr.Log.Mode == "passthrough" {
		ch.add(at(p, "log", "stdout"), "stdout = false needs mode \"capture\": with passthrough the process writes to podsup's stdout itself")
	}
	if pr.Log.MaxSize < 0 {
		ch.add(at(p, "log", "max_size"), "max_size must not be negative")
	}
	if pr.Log.MaxFiles < 0 {
		ch.add(at(p, "log", "max_files"), "max_files must not be negative")
	}
}

func (ch *checker) readiness(p []string, pr *Process, plainInit bool) {
	r := pr.Readiness
	switch {
	case r == "" || r == "notify":
	case strings.HasPrefix(r, "fd:"):
		n, err := strconv.Atoi(strings.TrimPrefix(r, "fd:"))
		if err != nil || n < 3 {
			ch.add(at(p, "readiness"), "readiness %q: the fd must be a number of 3 or more (0-2 are stdin/stdout/stderr), e.g. \"fd:3\"", r)
		}
	default:
		ch.add(at(p, "readiness"), "readiness %q is not one of \"notify\", \"fd:N\"", r)
	}
	if r != "" && plainInit {
		ch.add(at(p, "readiness"), "init processes run to completion and cannot have a readiness protocol (a sidecar, restart_policy = \"always\", can)")
	}
	if pr.Watchdog < 0 {
		ch.add(at(p, "watchdog"), "watchdog must not be negative")
	}
	if pr.Watchdog > 0 && r != "notify" {
		ch.add(at(p, "watchdog"), "watchdog needs readiness = \"notify\": the process sends WATCHDOG=1 over its NOTIFY_SOCKET")
	}
}

// floor refuses a duration that is set (0 means the default, D1) but
// below min.
func (ch *checker) floor(p []string, field string, d, min time.Duration) {
	if d > 0 && d < min {
		ch.add(p, "%s must be at least %s (or unset for the default), got %s", field, min, d)
	}
}

func (ch *checker) probe(p []string, kind ProbeKind, pr *Probe) {
	n := 0
	if pr.Exec != nil {
		n++
		ch.exec(at(p, "exec"), pr.Exec)
	}
	if pr.HTTPGet != nil {
		n++
		ch.httpGet(at(p, "http_get"), pr.HTTPGet)
	}
	if pr.TCPSocket != nil {
		n++
		ch.port(at(p, "tcp_socket", "port"), pr.TCPSocket.Port)
	}
	if pr.GRPC != nil {
		n++
		ch.port(at(p, "grpc", "port"), pr.GRPC.Port)
	}
	if pr.Sleep != nil {
		ch.add(at(p, "sleep"), "sleep is a hook action; a probe takes exec, http_get, tcp_socket or grpc")
	}
	if n != 1 {
		ch.add(p, "a probe needs exactly one of exec, http_get, tcp_socket, grpc; it has %d", n)
	}
	for _, d := range []struct {
		field string
		v     int64
	}{
		{"initial_delay", int64(pr.InitialDelay)}, {"period", int64(pr.Period)}, {"timeout", int64(pr.Timeout)},
		{"success_threshold", int64(pr.SuccessThreshold)}, {"failure_threshold", int64(pr.FailureThreshold)},
	} {
		if d.v < 0 {
			ch.add(at(p, d.field), "%s must not be negative", d.field)
		}
	}
	ch.floor(at(p, "period"), "period", pr.Period, MinProbePeriod)
	ch.floor(at(p, "timeout"), "timeout", pr.Timeout, MinProbeTimeout)
	if kind != Readiness && pr.SuccessThreshold > 1 {
		ch.add(at(p, "success_threshold"), "success_threshold must be 1 for a %s probe (it may be higher only on a readiness probe), got %d", kind, pr.SuccessThreshold)
	}
	if pr.TerminationGracePeriod != nil {
		if kind == Readiness {
			ch.add(at(p, "termination_grace_period"), "termination_grace_period is allowed on liveness and startup probes only: a readiness failure kills nothing")
		} else if *pr.TerminationGracePeriod <= 0 {
			ch.add(at(p, "termination_grace_period"), "termination_grace_period on a probe must be greater than 0, got %s", *pr.TerminationGracePeriod)
		}
	}
}

func (ch *checker) hook(p []string, h *Hook) {
	n := 0
	if h.Exec != nil {
		n++
		ch.exec(at(p, "exec"), h.Exec)
	}
	if h.HTTPGet != nil {
		n++
		ch.httpGet(at(p, "http_get"), h.HTTPGet)
	}
	if h.Sleep != nil {
		n++
		if h.Sleep.Duration < 0 {
			ch.add(at(p, "sleep", "duration"), "sleep duration must not be negative")
		}
	}
	if h.TCPSocket != nil {
		ch.add(at(p, "tcp_socket"), "tcp_socket is a probe action; a hook takes exec, http_get or sleep")
	}
	if h.GRPC != nil {
		ch.add(at(p, "grpc"), "grpc is a probe action; a hook takes exec, http_get or sleep")
	}
	if n != 1 {
		ch.add(p, "a hook needs exactly one of exec, http_get, sleep; it has %d", n)
	}
	if h.Timeout < 0 {
		ch.add(at(p, "timeout"), "timeout must not be negative")
	}
}

func (ch *checker) exec(p []string, e *ExecAction) {
	if len(e.Command) == 0 || e.Command[0] == "" {
		ch.add(at(p, "command"), "command is empty: give the program and its arguments")
	}
}

func (ch *checker) httpGet(p []string, h *HTTPGetAction) {
	ch.port(at(p, "port"), h.Port)
	switch strings.ToLower(h.Scheme) {
	case "", "http", "https":
	default:
		ch.add(at(p, "scheme"), "scheme %q is not one of \"http\", \"https\"", h.Scheme)
	}
	if h.Path != "" && !strings.HasPrefix(h.Path, "/") {
		ch.add(at(p, "path"), "path %q must start with /", h.Path)
	}
}

func (ch *checker) port(p []string, port int) {
	if port < 1 || port > 65535 {
		ch.add(p, "port must be 1-65535, got %d", port)
	}
}

// Namespace names a sandbox may ask for.
var Namespaces = []string{"pid", "mount", "uts", "ipc", "net"}

func (ch *checker) sandbox(p []string, s *Sandbox) {
	has := map[string]bool{}
	for _, ns := range s.Namespaces {
		ok := false
		for _, known := range Namespaces {
			ok = ok || ns == known
		}
		if !ok {
			ch.add(at(p, "namespaces"), "namespace %q is not one of pid, mount, uts, ipc, net", ns)
		}
		if has[ns] {
			ch.add(at(p, "namespaces"), "namespace %q is listed twice", ns)
		}
		has[ns] = true
	}
	if s.Hostname != "" && !has["uts"] {
		ch.add(at(p, "hostname"), "hostname needs the \"uts\" namespace, or it would rename the host")
	}
	if (len(s.Mounts) > 0 || s.Rootfs != "") && !has["mount"] {
		ch.add(p, "mounts and rootfs need the \"mount\" namespace, or they would change the host's mounts")
	}
	if s.Rootfs != "" && !filepath.IsAbs(s.Rootfs) {
		ch.add(at(p, "rootfs"), "rootfs must be an absolute path, got %q", s.Rootfs)
	}
	if s.Rootfs != "" && filepath.Clean(s.Rootfs) == "/" {
		ch.add(at(p, "rootfs"), "rootfs = \"/\" is the host's root, which a sandbox cannot pivot into: leave rootfs out to see the host's files (with read_only_root_filesystem = true for a read-only view)")
	}
	if (s.ReadOnlyRootFilesystem || s.PrivateTmp) && !has["mount"] {
		ch.add(p, "read_only_root_filesystem and private_tmp need the \"mount\" namespace, or they would change the host's mounts")
	}
	if s.SubIDUser != "" && !s.UserNamespace {
		ch.add(at(p, "subid_user"), "subid_user names where user namespaces' ids come from: it needs user_namespace = true")
	}
	switch s.ProcMount {
	case "", ProcMountDefault, ProcMountUnmasked:
	default:
		ch.add(at(p, "proc_mount"), "proc_mount must be %q or %q, got %q", ProcMountDefault, ProcMountUnmasked, s.ProcMount)
	}
	for i, m := range s.Mounts {
		mp := at(p, "mount", strconv.Itoa(i))
		switch m.Type {
		case "proc":
			if !has["pid"] {
				ch.add(at(mp, "type"), "a proc mount needs the \"pid\" namespace to show the sandbox's processes")
			}
		case "tmpfs":
		case "bind":
			if m.Source == "" || !filepath.IsAbs(m.Source) {
				ch.add(at(mp, "source"), "a bind mount needs an absolute source path, got %q", m.Source)
			}
		default:
			ch.add(at(mp, "type"), "mount type %q is not one of \"proc\", \"tmpfs\", \"bind\"", m.Type)
		}
		if !filepath.IsAbs(m.Target) {
			ch.add(at(mp, "target"), "mount target must be an absolute path, got %q", m.Target)
		}
	}
	ch.names(p, s)
	ch.resources(at(p, "resources"), s.Resources)
	if s.Network != nil {
		ch.network(at(p, "network"), s.Network, has["net"])
	}
}

// network checks a sandbox's network block at p; netNS says whether the
// sandbox lists the "net" namespace.
func (ch *checker) network(p []string, n *Network, netNS bool) {
	switch n.Mode {
	case NetworkHost:
		if netNS {
			ch.add(at(p, "mode"), "mode = %q is the host's network, and the sandbox lists the \"net\" namespace: drop one", n.Mode)
		}
	case NetworkNone, NetworkBridge, NetworkCNI:
		if !netNS {
			ch.add(at(p, "mode"), "mode = %q needs the \"net\" namespace: add \"net\" to namespaces", n.Mode)
		}
	default:
		ch.add(at(p, "mode"), "mode must be one of \"none\", \"host\", \"bridge\", \"cni\", got %q", n.Mode)
	}
	if n.Mode == NetworkCNI && n.Name == "" {
		ch.add(at(p, "name"), "mode = \"cni\" needs the name of a network in the CNI configuration directory")
	}
	if n.Mode != NetworkCNI && (n.Name != "" || n.ConfDir != "") {
		ch.add(at(p, "name"), "name and conf_dir pick a network of mode = \"cni\", not of mode = %q", n.Mode)
	}
	if n.Mode != NetworkBridge && (n.Bridge != "" || n.Subnet != "") {
		ch.add(at(p, "bridge"), "bridge and subnet belong to mode = \"bridge\", not to mode = %q", n.Mode)
	}
	if n.Bridge != "" && !validBridgeName(n.Bridge) {
		ch.add(at(p, "bridge"), "bridge must be a Linux interface name (1-15 letters, digits, '-', '_' or '.'), got %q", n.Bridge)
	}
	if n.Subnet != "" {
		if _, ipn, err := net.ParseCIDR(n.Subnet); err != nil || ipn.IP.To4() == nil {
			ch.add(at(p, "subnet"), "subnet must be an IPv4 range such as %q, got %q", DefaultBridgeSubnet, n.Subnet)
		} else if ones, _ := ipn.Mask.Size(); ones > 30 {
			ch.add(at(p, "subnet"), "subnet %q leaves no room for a gateway and a sandbox: use a /30 or wider", n.Subnet)
		}
	}
	if n.ConfDir != "" && !filepath.IsAbs(n.ConfDir) {
		ch.add(at(p, "conf_dir"), "conf_dir must be an absolute path, got %q", n.ConfDir)
	}
	for _, d := range n.PluginDirs {
		if !filepath.IsAbs(d) {
			ch.add(at(p, "plugin_dirs"), "plugin_dirs must be absolute paths, got %q", d)
		}
	}
	names := map[string]bool{}
	type hostKey struct {
		ip    string
		port  int
		proto string
	}
	published := map[hostKey]bool{}
	for _, port := range n.Ports {
		pp := at(p, "port", port.Name)
		if port.Name != "" && names[port.Name] {
			ch.add(pp, "port %q is declared twice", port.Name)
		}
		names[port.Name] = true
		ch.port(at(pp, "container_port"), port.ContainerPort)
		if port.HostPort != 0 {
			ch.port(at(pp, "host_port"), port.HostPort)
			if !n.Attached() {
				ch.add(at(pp, "host_port"), "a published port needs mode = \"bridge\" or \"cni\" (with the portmap plugin), not mode = %q", n.Mode)
			}
		}
		switch port.Protocol {
		case "", "tcp", "udp":
		default:
			ch.add(at(pp, "protocol"), "protocol must be \"tcp\" or \"udp\", got %q", port.Protocol)
		}
		if port.HostIP != "" && net.ParseIP(port.HostIP) == nil {
			ch.add(at(pp, "host_ip"), "host_ip must be an IP address, got %q", port.HostIP)
		}
		if port.HostPort != 0 {
			k := hostKey{port.HostIP, port.HostPort, port.Protocol}
			if k.proto == "" {
				k.proto = "tcp"
			}
			if published[k] {
				ch.add(at(pp, "host_port"), "host port %d/%s is published twice", port.HostPort, k.proto)
			}
			published[k] = true
		}
	}
}

// validBridgeName says whether s can name a Linux interface (IFNAMSIZ).
func validBridgeName(s string) bool {
	if len(s) == 0 || len(s) > 15 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// resources checks a resources block at p, a group's or a process's.
func (ch *checker) resources(p []string, r Resources) {
	if r.Memory < 0 {
		ch.add(at(p, "memory"), "memory must not be negative")
	}
	if r.CPU < 0 {
		ch.add(at(p, "cpu"), "cpu must not be negative")
	}
	if r.CPUWeight != 0 && (r.CPUWeight < 1 || r.CPUWeight > 10000) {
		ch.add(at(p, "cpu_weight"), "cpu_weight must be 1-10000, got %d", r.CPUWeight)
	}
	if r.Pids < 0 {
		ch.add(at(p, "pids"), "pids must not be negative")
	}
	if r.CPURequest < 0 {
		ch.add(at(p, "cpu_request"), "cpu_request must not be negative")
	} else if r.CPURequest > 0 && r.CPUWeight != CPUWeightForRequest(r.CPURequestMilli()) {
		ch.add(at(p, "cpu_weight"), "cpu_weight %d is not the weight of cpu_request %g (kubelet's is %d): give one of them", r.CPUWeight, r.CPURequest, CPUWeightForRequest(r.CPURequestMilli()))
	}
}

// SignalNames maps the names podsup accepts ("SIGTERM", "TERM", "term") to
// signals; see ParseSignal.
var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "ILL": syscall.SIGILL,
	"TRAP": syscall.SIGTRAP, "ABRT": syscall.SIGABRT, "BUS": syscall.SIGBUS, "FPE": syscall.SIGFPE,
	"KILL": syscall.SIGKILL, "USR1": syscall.SIGUSR1, "SEGV": syscall.SIGSEGV, "USR2": syscall.SIGUSR2,
	"PIPE": syscall.SIGPIPE, "ALRM": syscall.SIGALRM, "TERM": syscall.SIGTERM, "STKFLT": syscall.SIGSTKFLT,
	"CHLD": syscall.SIGCHLD, "CONT": syscall.SIGCONT, "STOP": syscall.SIGSTOP, "TSTP": syscall.SIGTSTP,
	"TTIN": syscall.SIGTTIN, "TTOU": syscall.SIGTTOU, "URG": syscall.SIGURG, "XCPU": syscall.SIGXCPU,
	"XFSZ": syscall.SIGXFSZ, "VTALRM": syscall.SIGVTALRM, "PROF": syscall.SIGPROF, "WINCH": syscall.SIGWINCH,
	"IO": syscall.SIGIO, "PWR": syscall.SIGPWR, "SYS": syscall.SIGSYS,
}

// ParseSignal accepts "SIGTERM", "TERM", "sigterm", "15" and "SIGRTMIN+3".
func ParseSignal(s string) (syscall.Signal, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if n, err := strconv.Atoi(u); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal %d is out of range 1-64", n)
		}
		return syscall.Signal(n), nil
	}
	u = strings.TrimPrefix(u, "SIG")
	if sig, ok := signalNames[u]; ok {
		return sig, nil
	}
	if strings.HasPrefix(u, "RTMIN") {
		off := 0
		if rest := strings.TrimPrefix(u, "RTMIN"); rest != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(rest, "+"))
			if err != nil || !strings.HasPrefix(rest, "+") {
				return 0, fmt.Errorf("unknown signal %q", s)
			}
			off = n
		}
		if 34+off > 64 {
			return 0, fmt.Errorf("signal %q is out of range", s)
		}
		return syscall.Signal(34 + off), nil
	}
	return 0, fmt.Errorf("unknown signal %q: use a name such as SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1", s)
}

// SignalName is the SIGxxx name of sig, or its number.
func SignalName(sig syscall.Signal) string {
	for name, s := range signalNames {
		if s == sig {
			return "SIG" + name
		}
	}
	if sig >= 34 && sig <= 64 {
		return fmt.Sprintf("SIGRTMIN+%d", int(sig)-34)
	}
	return strconv.Itoa(int(sig))
}

// checkMetricsListen says what is wrong with a metrics_listen address, or
// "": it must be HOST:PORT with a literal IP or "localhost", and a loopback
// one unless remote scrapes are allowed.
func checkMetricsListen(addr string, allowRemote bool) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Sprintf("metrics_listen %q is not HOST:PORT (e.g. \"127.0.0.1:9310\")", addr)
	}
	if host == "localhost" {
		return ""
	}
	ip := net.ParseIP(host)
	if ip == nil && host != "" {
		return fmt.Sprintf("metrics_listen %q: the host must be an IP address or localhost", addr)
	}
	if !allowRemote && (ip == nil || !ip.IsLoopback()) {
		return fmt.Sprintf("metrics_listen %q is not a loopback address: the metrics name every process; set metrics_allow_remote = true to serve them beyond this machine", addr)
	}
	return ""
}
