package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/podsup/podsup/spec"
	"github.com/zclconf/go-cty/cty"
)

// The functions below walk the schema of schema.go top down. Each takes the
// spec path of what it decodes (the path spec.FieldError uses), records the
// block's header range under it and fills a spec value.

func (d *decoder) file(body hcl.Body) *spec.Config {
	cfg := &spec.Config{Backoff: spec.DefaultBackoff()}
	_, bs := d.content(body, fileSchema, nil)
	// Variables first: every other block may use them, in any file.
	d.ctx.Variables = map[string]cty.Value{"var": d.variables(bs["variable"])}
	for _, b := range bs["supervisor"] {
		cfg.Supervisor = d.supervisor(b)
	}
	for _, b := range bs["backoff"] {
		cfg.Backoff = d.backoff(b, []string{"backoff"}, cfg.Backoff)
	}
	groups := bs["group"]
	if len(groups) > MaxGroups {
		d.overLimit = true
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Too many groups",
			Detail: fmt.Sprintf("The configuration has %d groups, and this is group %d; podsup runs at most %d. Are the right files named?",
				len(groups), MaxGroups+1, MaxGroups),
			Subject: groups[MaxGroups].DefRange.Ptr()})
		return cfg
	}
	for _, b := range groups {
		cfg.Groups = append(cfg.Groups, d.group(b, cfg.Backoff))
		if d.overLimit {
			break
		}
	}
	return cfg
}

// countProcesses adds a group's process and init blocks to the
// configuration's, and refuses the one that takes them past MaxProcesses.
func (d *decoder) countProcesses(bs map[string]hcl.Blocks) {
	n := len(bs["init"]) + len(bs["process"])
	if d.processes+n <= MaxProcesses || d.overLimit {
		d.processes += n
		return
	}
	d.overLimit = true
	crossing := append(slices.Clip(bs["init"]), bs["process"]...)[MaxProcesses-d.processes]
	d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Too many processes",
		Detail: fmt.Sprintf("This %s takes the configuration past %d processes (init processes count too), the most podsup runs. Are the right files named?",
			crossing.Type, MaxProcesses),
		Subject: crossing.DefRange.Ptr()})
}

func (d *decoder) block(b *hcl.Block, path []string) {
	d.record(path, location{subject: b.DefRange})
}

func (d *decoder) supervisor(b *hcl.Block) spec.Supervisor {
	p := []string{"supervisor"}
	d.block(b, p)
	as, _ := d.content(b.Body, supervisorSchema, p)
	var s spec.Supervisor
	d.str(as, p, "socket", &s.Socket)
	d.str(as, p, "socket_group", &s.SocketGroup)
	d.socketGroupRoles(as, p, &s)
	d.str(as, p, "log_level", &s.LogLevel)
	d.str(as, p, "log_format", &s.LogFormat)
	if d.str(as, p, "log_dir", &s.LogDir) {
		d.logDir(as, p, s.LogDir)
	}
	d.durationPtr(as, p, "minimum_grace", &s.MinimumGrace)
	d.str(as, p, "notify_ready", &s.NotifyReady)
	d.str(as, p, "metrics_listen", &s.MetricsListen)
	d.boolean(as, p, "metrics_allow_remote", &s.MetricsAllowRemote)
	var order string
	d.str(as, p, "stop_order", &order)
	s.StopOrder = spec.StopOrder(order)
	return s
}

// socketGroupRoles decodes supervisor.socket_group_roles: names of
// spec.SocketGroupRoleNames, and only beside a socket_group (the roles are
// its members').
func (d *decoder) socketGroupRoles(as hcl.Attributes, p []string, s *spec.Supervisor) {
	a := as["socket_group_roles"]
	if a == nil {
		return
	}
	var roles []string
	d.strList(as, p, "socket_group_roles", `["read", "operate"]`, &roles)
	if roles == nil {
		return
	}
	for _, r := range roles {
		if !slices.Contains(spec.SocketGroupRoleNames, r) {
			d.invalid(at(p, "socket_group_roles"), a, "socket_group_roles names an unknown role %q; the roles are %s.", r, strings.Join(quoted(spec.SocketGroupRoleNames), ", "))
			return
		}
	}
	if s.SocketGroup == "" {
		d.invalid(at(p, "socket_group_roles"), a, "socket_group_roles grants roles to the members of socket_group, which is not set: set socket_group = \"GROUP\" too, or remove socket_group_roles.")
		return
	}
	s.SocketGroupRoles = roles
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// backoff overlays the fields the block sets on base (X2: a group's
// back-off starts from the top-level one, which starts from kubelet's).
func (d *decoder) backoff(b *hcl.Block, p []string, base spec.Backoff) spec.Backoff {
	d.block(b, p)
	as, _ := d.content(b.Body, backoffSchema, p)
	d.durationTo(as, p, "initial", &base.Initial)
	d.durationTo(as, p, "max", &base.Max)
	d.durationTo(as, p, "reset", &base.Reset)
	return base
}

func (d *decoder) group(b *hcl.Block, defaultBackoff spec.Backoff) spec.Group {
	g := spec.Group{Name: b.Labels[0]}
	p := d.named(nil, "group", g.Name)
	d.block(b, p)
	as, bs := d.content(b.Body, groupSchema, p)
	if d.countProcesses(bs); d.overLimit {
		return g
	}
	var policy string
	d.str(as, p, "restart_policy", &policy)
	g.RestartPolicy = spec.RestartPolicy(policy)
	d.durationPtr(as, p, "termination_grace_period", &g.TerminationGracePeriod)
	if _, ok := as["backoff_limit"]; ok {
		limit := math.MinInt // left so when the value is not a number
		d.integerInt(as, p, "backoff_limit", &limit)
		if limit != math.MinInt {
			g.BackoffLimit = &limit
		}
	}
	env := d.environment(as, p, nil)
	for _, bb := range bs["backoff"] {
		bo := d.backoff(bb, at(p, "backoff"), defaultBackoff)
		g.Backoff = &bo
	}
	for _, sb := range bs["sandbox"] {
		g.Sandbox = d.sandbox(sb, at(p, "sandbox"))
	}
	// The group's processes' probes and hooks may name its ports.
	d.groupSandbox = g.Sandbox
	defer func() { d.groupSandbox = nil }()
	// Sized at once: the running configuration keeps these for podsup's
	// life, and append's doubling would keep up to twice the room.
	if n := len(bs["init"]); n > 0 {
		g.Init = make([]spec.Process, 0, n)
	}
	for _, ib := range bs["init"] {
		g.Init = append(g.Init, d.process(ib, d.named(p, "init", ib.Labels[0]), initSchema, env))
	}
	if n := len(bs["process"]); n > 0 {
		g.Processes = make([]spec.Process, 0, n)
	}
	for _, pb := range bs["process"] {
		g.Processes = append(g.Processes, d.process(pb, d.named(p, "process", pb.Labels[0]), processSchema, env))
	}
	g.DependsOn = d.dependsOn(bs["depends_on"], p)
	g.Security = d.security(as, bs, p)
	d.str(as, p, "fs_group", &g.FSGroup)
	for _, vb := range bs["volume"] {
		g.Volumes = append(g.Volumes, d.volume(vb, at(p, "volume", vb.Labels[0])))
	}
	return g
}

// volume decodes a group's volume block at p.
func (d *decoder) volume(b *hcl.Block, p []string) spec.Volume {
	v := spec.Volume{Name: b.Labels[0]}
	d.block(b, p)
	as, bs := d.content(b.Body, volumeSchema, p)
	d.str(as, p, "type", &v.Type)
	d.str(as, p, "medium", &v.Medium)
	d.size(as, p, "size_limit", &v.SizeLimit)
	d.str(as, p, "path", &v.Path)
	d.str(as, p, "host_path_type", &v.HostPathType)
	d.boolean(as, p, "restart_on_change", &v.RestartOnChange)
	var mode string
	if d.str(as, p, "mode", &mode) {
		if m, err := spec.ParseUmask(mode); err != nil {
			d.invalid(at(p, "mode"), as["mode"], "mode must be an octal mode in a string, from \"0000\" to \"0777\", e.g. mode = \"0440\"; got %q.", mode)
		} else {
			v.Mode = m
		}
	}
	for _, fb := range bs["file"] {
		fp := at(p, "file", fb.Labels[0])
		d.block(fb, fp)
		fas, _ := d.content(fb.Body, volumeFileSchema, fp)
		f := spec.VolumeFile{Name: fb.Labels[0]}
		d.str(fas, fp, "content", &f.Content)
		d.str(fas, fp, "source", &f.Source)
		v.Files = append(v.Files, f)
	}
	return v
}

// volumeMounts decodes a process's volume_mount blocks at p.
func (d *decoder) volumeMounts(bs hcl.Blocks, p []string) []spec.VolumeMount {
	var out []spec.VolumeMount
	for i, b := range bs {
		mp := at(p, "volume_mount", strconv.Itoa(i))
		d.block(b, mp)
		as, _ := d.content(b.Body, volumeMountSchema, mp)
		var m spec.VolumeMount
		d.str(as, mp, "volume", &m.Volume)
		d.str(as, mp, "path", &m.Path)
		d.boolean(as, mp, "read_only", &m.ReadOnly)
		d.str(as, mp, "sub_path", &m.SubPath)
		out = append(out, m)
	}
	return out
}

func (d *decoder) sandbox(b *hcl.Block, p []string) *spec.Sandbox {
	d.block(b, p)
	as, bs := d.content(b.Body, sandboxSchema, p)
	s := &spec.Sandbox{}
	d.strList(as, p, "namespaces", `["pid", "mount", "uts", "ipc"]`, &s.Namespaces)
	d.str(as, p, "hostname", &s.Hostname)
	d.str(as, p, "rootfs", &s.Rootfs)
	d.boolean(as, p, "read_only_root_filesystem", &s.ReadOnlyRootFilesystem)
	d.boolean(as, p, "private_tmp", &s.PrivateTmp)
	d.str(as, p, "proc_mount", &s.ProcMount)
	d.boolean(as, p, "user_namespace", &s.UserNamespace)
	d.str(as, p, "subid_user", &s.SubIDUser)
	for i, mb := range bs["mount"] {
		mp := at(p, "mount", strconv.Itoa(i))
		d.block(mb, mp)
		mas, _ := d.content(mb.Body, mountSchema, mp)
		var m spec.Mount
		d.str(mas, mp, "type", &m.Type)
		d.str(mas, mp, "source", &m.Source)
		d.str(mas, mp, "target", &m.Target)
		d.boolean(mas, mp, "readonly", &m.ReadOnly)
		d.str(mas, mp, "options", &m.Options)
		s.Mounts = append(s.Mounts, m)
	}
	d.resources(bs["resources"], p, &s.Resources)
	for _, nb := range bs["network"] {
		s.Network = d.network(nb, at(p, "network"))
	}
	for i, hb := range bs["host_alias"] {
		hp := at(p, "host_alias", strconv.Itoa(i))
		d.block(hb, hp)
		has, _ := d.content(hb.Body, hostAliasSchema, hp)
		var ha spec.HostAlias
		d.str(has, hp, "ip", &ha.IP)
		d.strList(has, hp, "hostnames", `["db.local"]`, &ha.Hostnames)
		s.HostAliases = append(s.HostAliases, ha)
	}
	for _, db := range bs["dns"] {
		dp := at(p, "dns")
		d.block(db, dp)
		das, _ := d.content(db.Body, dnsSchema, dp)
		dns := &spec.DNSConfig{}
		d.strList(das, dp, "nameservers", `["10.0.0.10"]`, &dns.Nameservers)
		d.strList(das, dp, "searches", `["svc.local"]`, &dns.Searches)
		d.strList(das, dp, "options", `["ndots:2"]`, &dns.Options)
		s.DNS = dns
	}
	return s
}

// network decodes a sandbox's network block at p.
func (d *decoder) network(b *hcl.Block, p []string) *spec.Network {
	d.block(b, p)
	as, bs := d.content(b.Body, networkSchema, p)
	n := &spec.Network{}
	d.str(as, p, "mode", &n.Mode)
	d.str(as, p, "name", &n.Name)
	d.str(as, p, "conf_dir", &n.ConfDir)
	d.strList(as, p, "plugin_dirs", `["/usr/lib/cni"]`, &n.PluginDirs)
	d.str(as, p, "bridge", &n.Bridge)
	d.str(as, p, "subnet", &n.Subnet)
	for _, pb := range bs["port"] {
		pp := d.named(p, "port", pb.Labels[0])
		d.block(pb, pp)
		pas, _ := d.content(pb.Body, portSchema, pp)
		port := spec.Port{Name: pb.Labels[0]}
		d.integerInt(pas, pp, "container_port", &port.ContainerPort)
		d.integerInt(pas, pp, "host_port", &port.HostPort)
		d.str(pas, pp, "protocol", &port.Protocol)
		d.str(pas, pp, "host_ip", &port.HostIP)
		n.Ports = append(n.Ports, port)
	}
	return n
}

// portRef decodes the port of an http_get or tcp_socket action: a number,
// or the name of a port of the group's sandbox network (Kubernetes lets a
// probe name a container port), resolved here.
func (d *decoder) portRef(attrs hcl.Attributes, path []string, name string, dst *int) {
	a, ok := attrs[name]
	if !ok {
		return
	}
	v, diags := a.Expr.Value(d.ctx)
	if !diags.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
		label := v.AsString()
		if n := d.groupSandbox.PortNamed(label); n != 0 {
			*dst = n
			return
		}
		if _, err := strconv.Atoi(label); err != nil {
			d.invalid(at(path, name), a, "%s %q names no port of the group's sandbox network; name one of its port blocks or give a number.", name, label)
			return
		}
	}
	d.integerInt(attrs, path, name, dst)
}

// resources decodes the resources block of a sandbox or process at p.
func (d *decoder) resources(bs hcl.Blocks, p []string, r *spec.Resources) {
	for _, rb := range bs {
		rp := at(p, "resources")
		d.block(rb, rp)
		ras, _ := d.content(rb.Body, resourcesSchema, rp)
		d.size(ras, rp, "memory", &r.Memory)
		d.cpu(ras, rp, "cpu", &r.CPU)
		d.integerInt(ras, rp, "cpu_weight", &r.CPUWeight)
		d.pids(ras, rp, "pids", &r.Pids)
		d.cpu(ras, rp, "cpu_request", &r.CPURequest)
		if r.CPURequest > 0 && r.CPUWeight == 0 {
			r.CPUWeight = spec.CPUWeightForRequest(r.CPURequestMilli())
		}
	}
}

// process decodes a process or init block; groupEnv is its group's
// environment, which its own env_file and env override.
func (d *decoder) process(b *hcl.Block, p []string, schema *blockSchema, groupEnv map[string]string) spec.Process {
	pr := spec.Process{Name: b.Labels[0]}
	d.block(b, p)
	as, bs := d.content(b.Body, schema, p)
	d.strList(as, p, "command", `["/bin/sh", "-c", "exec my-server"]`, &pr.Command)
	if env := d.environment(as, p, groupEnv); len(env) > 0 {
		pr.Env = env
	}
	d.str(as, p, "image", &pr.Image)
	d.str(as, p, "working_dir", &pr.WorkingDir)
	d.str(as, p, "user", &pr.User)
	d.str(as, p, "group", &pr.Group)
	d.signal(as, p, "stop_signal", &pr.StopSignal)
	var policy string
	d.str(as, p, "restart_policy", &policy)
	pr.RestartPolicy = spec.RestartPolicy(policy)
	d.boolean(as, p, "critical", &pr.Critical)
	d.str(as, p, "readiness", &pr.Readiness)
	d.durationTo(as, p, "watchdog", &pr.Watchdog)
	d.strList(as, p, "sockets", `["http"]`, &pr.Sockets)

	probes := []struct {
		name string
		dst  **spec.Probe
	}{{"startup_probe", &pr.StartupProbe}, {"liveness_probe", &pr.LivenessProbe}, {"readiness_probe", &pr.ReadinessProbe}}
	for _, x := range probes {
		for _, pb := range bs[x.name] {
			*x.dst = d.probe(pb, at(p, x.name))
		}
	}
	hooks := []struct {
		name string
		dst  **spec.Hook
	}{{"pre_start", &pr.PreStart}, {"post_start", &pr.PostStart}, {"pre_stop", &pr.PreStop}, {"post_stop", &pr.PostStop}}
	for _, x := range hooks {
		for _, hb := range bs[x.name] {
			*x.dst = d.hook(hb, at(p, x.name))
		}
	}
	pr.DependsOn = d.dependsOn(bs["depends_on"], p)
	pr.VolumeMounts = d.volumeMounts(bs["volume_mount"], p)
	d.resources(bs["resources"], p, &pr.Resources)
	pr.Security = d.security(as, bs, p)
	for _, lb := range bs["log"] {
		lp := at(p, "log")
		d.block(lb, lp)
		las, _ := d.content(lb.Body, logSchema, lp)
		d.str(las, lp, "mode", &pr.Log.Mode)
		d.size(las, lp, "max_size", &pr.Log.MaxSize)
		d.integerInt(las, lp, "max_files", &pr.Log.MaxFiles)
		d.boolean(las, lp, "journal", &pr.Log.Journal)
		d.boolean(las, lp, "separate_streams", &pr.Log.SeparateStreams)
		stdout := true
		d.boolean(las, lp, "stdout", &stdout)
		pr.Log.NoStdout = !stdout
	}
	return pr
}

// dependsOn decodes the depends_on blocks of a group or process at p.
func (d *decoder) dependsOn(bs hcl.Blocks, p []string) []spec.Dependency {
	var out []spec.Dependency
	for _, b := range bs {
		dp := at(p, "depends_on", b.Labels[0])
		d.block(b, dp)
		as, _ := d.content(b.Body, dependsOnSchema, dp)
		dep := spec.Dependency{Name: b.Labels[0]}
		var cond string
		d.str(as, dp, "condition", &cond)
		dep.Condition = spec.Condition(cond)
		d.durationTo(as, dp, "timeout", &dep.Timeout)
		d.boolean(as, dp, "restart", &dep.Restart)
		out = append(out, dep)
	}
	return out
}

func (d *decoder) probe(b *hcl.Block, p []string) *spec.Probe {
	d.block(b, p)
	as, bs := d.content(b.Body, probeSchema, p)
	pr := &spec.Probe{}
	d.durationTo(as, p, "initial_delay", &pr.InitialDelay)
	d.durationTo(as, p, "period", &pr.Period)
	d.durationTo(as, p, "timeout", &pr.Timeout)
	d.integerInt(as, p, "success_threshold", &pr.SuccessThreshold)
	d.integerInt(as, p, "failure_threshold", &pr.FailureThreshold)
	d.durationPtr(as, p, "termination_grace_period", &pr.TerminationGracePeriod)
	d.handler(bs, p, &pr.Handler)
	return pr
}

func (d *decoder) hook(b *hcl.Block, p []string) *spec.Hook {
	d.block(b, p)
	as, bs := d.content(b.Body, hookSchema, p)
	h := &spec.Hook{}
	d.durationTo(as, p, "timeout", &h.Timeout)
	d.handler(bs, p, &h.Handler)
	return h
}

// handler decodes whichever action blocks are present; the schema already
// limits which kinds a probe or hook takes, and spec's validation checks
// that there is exactly one (D6).
func (d *decoder) handler(bs map[string]hcl.Blocks, p []string, h *spec.Handler) {
	for _, b := range bs["exec"] {
		ep := at(p, "exec")
		d.block(b, ep)
		as, _ := d.content(b.Body, execSchema, ep)
		h.Exec = &spec.ExecAction{}
		d.strList(as, ep, "command", `["/bin/sh", "-c", "test -f /tmp/healthy"]`, &h.Exec.Command)
	}
	for _, b := range bs["http_get"] {
		hp := at(p, "http_get")
		d.block(b, hp)
		as, _ := d.content(b.Body, httpGetSchema, hp)
		h.HTTPGet = &spec.HTTPGetAction{}
		d.str(as, hp, "scheme", &h.HTTPGet.Scheme)
		d.str(as, hp, "host", &h.HTTPGet.Host)
		d.portRef(as, hp, "port", &h.HTTPGet.Port)
		d.str(as, hp, "path", &h.HTTPGet.Path)
		d.strMap(as, hp, "headers", &h.HTTPGet.Headers)
	}
	for _, b := range bs["tcp_socket"] {
		tp := at(p, "tcp_socket")
		d.block(b, tp)
		as, _ := d.content(b.Body, tcpSocketSchema, tp)
		h.TCPSocket = &spec.TCPSocketAction{}
		d.str(as, tp, "host", &h.TCPSocket.Host)
		d.portRef(as, tp, "port", &h.TCPSocket.Port)
	}
	for _, b := range bs["grpc"] {
		gp := at(p, "grpc")
		d.block(b, gp)
		as, _ := d.content(b.Body, grpcSchema, gp)
		h.GRPC = &spec.GRPCAction{}
		d.integerInt(as, gp, "port", &h.GRPC.Port)
		d.str(as, gp, "service", &h.GRPC.Service)
	}
	for _, b := range bs["sleep"] {
		sp := at(p, "sleep")
		d.block(b, sp)
		as, _ := d.content(b.Body, sleepSchema, sp)
		h.Sleep = &spec.SleepAction{}
		d.durationTo(as, sp, "duration", &h.Sleep.Duration)
	}
}
