package kube

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/podsup/podsup/spec"
)

// WriteHCL writes res as a podsup configuration file: the format
// config.Parse reads, generated from the spec values (not from text), with
// each container's image as a comment above its process.
func WriteHCL(w io.Writer, res *Result, source string) error {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	comment(body, fmt.Sprintf("Converted from %s by podsup-kube convert.", source))
	if len(res.Findings) > 0 {
		comment(body, "Not carried over (podsup-kube's warnings):")
		for _, fd := range res.Findings {
			comment(body, "  "+strings.TrimPrefix(fd.String(), "warning: "))
		}
	}
	body.AppendNewline()
	writeConfig(body, res.Config, res.Images, res.EnvOrder)
	_, err := w.Write(f.Bytes())
	return err
}

// HCL is cfg as a configuration file, without comments.
func HCL(cfg *spec.Config) []byte {
	f := hclwrite.NewEmptyFile()
	writeConfig(f.Body(), cfg, nil, nil)
	return f.Bytes()
}

// writeConfig writes cfg; images and envOrder (either may be nil) are a
// conversion's, by group and process name.
func writeConfig(body *hclwrite.Body, cfg *spec.Config, images map[[2]string]string, envOrder map[[2]string][]string) {
	if s := cfg.Supervisor; !s.IsZero() {
		sb := body.AppendNewBlock("supervisor", nil).Body()
		str(sb, "socket", s.Socket)
		str(sb, "socket_group", s.SocketGroup)
		if len(s.SocketGroupRoles) > 0 {
			sb.SetAttributeValue("socket_group_roles", strList(s.SocketGroupRoles))
		}
		str(sb, "log_level", s.LogLevel)
		str(sb, "log_format", s.LogFormat)
		str(sb, "log_dir", s.LogDir)
		durp(sb, "minimum_grace", s.MinimumGrace)
		str(sb, "notify_ready", s.NotifyReady)
		str(sb, "metrics_listen", s.MetricsListen)
		boolean(sb, "metrics_allow_remote", s.MetricsAllowRemote)
		str(sb, "stop_order", string(s.StopOrder))
		body.AppendNewline()
	}
	if cfg.Backoff != spec.DefaultBackoff() && cfg.Backoff != (spec.Backoff{}) {
		writeBackoff(body, cfg.Backoff)
		body.AppendNewline()
	}
	for i := range cfg.Groups {
		g := &cfg.Groups[i]
		gb := body.AppendNewBlock("group", []string{g.Name}).Body()
		writeGroupFields(gb, g)
		for _, p := range g.Init {
			pb := gb.AppendNewBlock("init", []string{p.Name}).Body()
			imageComment(pb, images[[2]string{g.Name, p.Name}])
			writeProcessInOrder(pb, &p, envOrder[[2]string{g.Name, p.Name}])
		}
		for _, p := range g.Processes {
			pb := gb.AppendNewBlock("process", []string{p.Name}).Body()
			imageComment(pb, images[[2]string{g.Name, p.Name}])
			writeProcessInOrder(pb, &p, envOrder[[2]string{g.Name, p.Name}])
		}
		if i < len(cfg.Groups)-1 {
			body.AppendNewline()
		}
	}
}

func imageComment(b *hclwrite.Body, image string) {
	img, dir, rootfs := strings.Cut(image, "=")
	switch {
	case image == "":
	case rootfs:
		comment(b, fmt.Sprintf("image: %s (run from its unpacked root filesystem %s)", img, dir))
	default:
		comment(b, fmt.Sprintf("image: %s (podsup runs no images: the command runs on this machine's files)", image))
	}
}

func comment(b *hclwrite.Body, text string) {
	b.AppendUnstructuredTokens(hclwrite.Tokens{
		{Type: hclsyntax.TokenComment, Bytes: []byte("# " + strings.ReplaceAll(text, "\n", " ") + "\n")},
	})
}

// writeGroupFields writes a group's own attributes and blocks, all but
// its processes.
func writeGroupFields(b *hclwrite.Body, g *spec.Group) {
	writeDependsOn(b, g.DependsOn)
	str(b, "restart_policy", string(g.RestartPolicy))
	if g.BackoffLimit != nil {
		b.SetAttributeValue("backoff_limit", cty.NumberIntVal(int64(*g.BackoffLimit))) // 0 too: a limit
	}
	durp(b, "termination_grace_period", g.TerminationGracePeriod)
	writeSecurity(b, g.Security)
	if g.Backoff != nil {
		writeBackoff(b, *g.Backoff)
	}
	if s := g.Sandbox; s != nil {
		sb := b.AppendNewBlock("sandbox", nil).Body()
		// An empty list is a choice (no namespaces: a cgroup only), not an
		// omission: write it so that it reads back the same.
		sb.SetAttributeValue("namespaces", strList(s.Namespaces))
		str(sb, "hostname", s.Hostname)
		str(sb, "rootfs", s.Rootfs)
		for _, m := range s.Mounts {
			mb := sb.AppendNewBlock("mount", nil).Body()
			str(mb, "type", m.Type)
			str(mb, "source", m.Source)
			str(mb, "target", m.Target)
			boolean(mb, "readonly", m.ReadOnly)
			str(mb, "options", m.Options)
		}
		boolean(sb, "read_only_root_filesystem", s.ReadOnlyRootFilesystem)
		boolean(sb, "private_tmp", s.PrivateTmp)
		str(sb, "proc_mount", s.ProcMount)
		boolean(sb, "user_namespace", s.UserNamespace)
		str(sb, "subid_user", s.SubIDUser)
		writeResources(sb, s.Resources)
		if n := s.Network; n != nil {
			nb := sb.AppendNewBlock("network", nil).Body()
			str(nb, "mode", n.Mode)
			str(nb, "name", n.Name)
			str(nb, "conf_dir", n.ConfDir)
			if len(n.PluginDirs) > 0 {
				nb.SetAttributeValue("plugin_dirs", strList(n.PluginDirs))
			}
			str(nb, "bridge", n.Bridge)
			str(nb, "subnet", n.Subnet)
			for _, p := range n.Ports {
				pb := nb.AppendNewBlock("port", []string{p.Name}).Body()
				pb.SetAttributeValue("container_port", cty.NumberIntVal(int64(p.ContainerPort)))
				if p.HostPort != 0 {
					pb.SetAttributeValue("host_port", cty.NumberIntVal(int64(p.HostPort)))
				}
				str(pb, "protocol", p.Protocol)
				str(pb, "host_ip", p.HostIP)
			}
		}
		writeNames(sb, s)
	}
	str(b, "fs_group", g.FSGroup)
	writeVolumes(b, g.Volumes)
}

// writeResources writes a resources block, a sandbox's or a process's,
// when r sets a limit.
func writeResources(b *hclwrite.Body, r spec.Resources) {
	if r == (spec.Resources{}) {
		return
	}
	rb := b.AppendNewBlock("resources", nil).Body()
	size(rb, "memory", r.Memory)
	if r.CPU != 0 {
		rb.SetAttributeValue("cpu", cty.NumberFloatVal(r.CPU))
	}
	if r.CPURequest == 0 || r.CPUWeight != spec.CPUWeightForRequest(r.CPURequestMilli()) {
		integer(rb, "cpu_weight", int64(r.CPUWeight)) // else cpu_request's
	}
	integer(rb, "pids", r.Pids)
	if r.CPURequest != 0 {
		rb.SetAttributeValue("cpu_request", cty.NumberFloatVal(r.CPURequest))
	}
}

func writeBackoff(b *hclwrite.Body, bo spec.Backoff) {
	bb := b.AppendNewBlock("backoff", nil).Body()
	bb.SetAttributeValue("initial", cty.StringVal(formatDuration(bo.Initial)))
	bb.SetAttributeValue("max", cty.StringVal(formatDuration(bo.Max)))
	bb.SetAttributeValue("reset", cty.StringVal(formatDuration(bo.Reset)))
}

// writeProcess writes every field of p that is set, but its name.
func writeProcess(b *hclwrite.Body, p *spec.Process) { writeProcessInOrder(b, p, nil) }

// writeProcessInOrder is writeProcess with the env in envOrder's order
// (the manifest's), then any other variable by name.
func writeProcessInOrder(b *hclwrite.Body, p *spec.Process, envOrder []string) {
	if len(p.Command) > 0 {
		b.SetAttributeValue("command", strList(p.Command))
	}
	str(b, "image", p.Image)
	if len(p.Env) > 0 {
		b.SetAttributeRaw("env", envTokens(p.Env, envOrder))
	}
	str(b, "working_dir", p.WorkingDir)
	str(b, "user", p.User)
	str(b, "group", p.Group)
	writeSecurity(b, p.Security)
	if p.StopSignal != 0 {
		str(b, "stop_signal", spec.SignalName(p.StopSignal))
	}
	str(b, "restart_policy", string(p.RestartPolicy))
	boolean(b, "critical", p.Critical)
	writeResources(b, p.Resources)
	str(b, "readiness", p.Readiness)
	dur(b, "watchdog", p.Watchdog)
	if len(p.Sockets) > 0 {
		b.SetAttributeValue("sockets", strList(p.Sockets))
	}
	writeDependsOn(b, p.DependsOn)
	writeVolumeMounts(b, p.VolumeMounts)
	writeProbe(b, "startup_probe", p.StartupProbe)
	writeProbe(b, "liveness_probe", p.LivenessProbe)
	writeProbe(b, "readiness_probe", p.ReadinessProbe)
	writeHook(b, "pre_start", p.PreStart)
	writeHook(b, "post_start", p.PostStart)
	writeHook(b, "pre_stop", p.PreStop)
	writeHook(b, "post_stop", p.PostStop)
	if l := p.Log; l != (spec.Log{}) {
		lb := b.AppendNewBlock("log", nil).Body()
		str(lb, "mode", l.Mode)
		size(lb, "max_size", l.MaxSize)
		integer(lb, "max_files", int64(l.MaxFiles))
		boolean(lb, "journal", l.Journal)
		boolean(lb, "separate_streams", l.SeparateStreams)
		if l.NoStdout {
			lb.SetAttributeValue("stdout", cty.False)
		}
	}
}

// envTokens is env as an HCL object, its names in order, then the others
// sorted: an object constructor keeps the order it is written in, where
// cty's map sorts it.
func envTokens(env map[string]string, order []string) hclwrite.Tokens {
	var names []string
	seen := map[string]bool{}
	for _, n := range append(slices.Clone(order), sortedEnv(env)...) {
		if _, ok := env[n]; ok && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	attrs := make([]hclwrite.ObjectAttrTokens, len(names))
	for i, n := range names {
		name := hclwrite.TokensForValue(cty.StringVal(n))
		if hclsyntax.ValidIdentifier(n) {
			name = hclwrite.TokensForIdentifier(n)
		}
		attrs[i] = hclwrite.ObjectAttrTokens{Name: name, Value: hclwrite.TokensForValue(cty.StringVal(env[n]))}
	}
	return hclwrite.TokensForObject(attrs)
}

func writeProbe(b *hclwrite.Body, name string, p *spec.Probe) {
	if p == nil {
		return
	}
	pb := b.AppendNewBlock(name, nil).Body()
	writeHandler(pb, p.Handler)
	dur(pb, "initial_delay", p.InitialDelay)
	dur(pb, "period", p.Period)
	dur(pb, "timeout", p.Timeout)
	integer(pb, "success_threshold", int64(p.SuccessThreshold))
	integer(pb, "failure_threshold", int64(p.FailureThreshold))
	durp(pb, "termination_grace_period", p.TerminationGracePeriod)
}

func writeHook(b *hclwrite.Body, name string, h *spec.Hook) {
	if h == nil {
		return
	}
	hb := b.AppendNewBlock(name, nil).Body()
	writeHandler(hb, h.Handler)
	dur(hb, "timeout", h.Timeout)
}

func writeHandler(b *hclwrite.Body, h spec.Handler) {
	if h.Exec != nil {
		b.AppendNewBlock("exec", nil).Body().SetAttributeValue("command", strList(h.Exec.Command))
	}
	if g := h.HTTPGet; g != nil {
		gb := b.AppendNewBlock("http_get", nil).Body()
		str(gb, "scheme", g.Scheme)
		str(gb, "host", g.Host)
		gb.SetAttributeValue("port", cty.NumberIntVal(int64(g.Port)))
		str(gb, "path", g.Path)
		if len(g.Headers) > 0 {
			m := map[string]cty.Value{}
			for k, v := range g.Headers {
				m[k] = cty.StringVal(v)
			}
			gb.SetAttributeValue("headers", cty.MapVal(m))
		}
	}
	if t := h.TCPSocket; t != nil {
		tb := b.AppendNewBlock("tcp_socket", nil).Body()
		str(tb, "host", t.Host)
		tb.SetAttributeValue("port", cty.NumberIntVal(int64(t.Port)))
	}
	if g := h.GRPC; g != nil {
		gb := b.AppendNewBlock("grpc", nil).Body()
		gb.SetAttributeValue("port", cty.NumberIntVal(int64(g.Port)))
		str(gb, "service", g.Service)
	}
	if s := h.Sleep; s != nil {
		b.AppendNewBlock("sleep", nil).Body().SetAttributeValue("duration", cty.StringVal(formatDuration(s.Duration)))
	}
}

func str(b *hclwrite.Body, name, v string) {
	if v != "" {
		b.SetAttributeValue(name, cty.StringVal(v))
	}
}

func boolean(b *hclwrite.Body, name string, v bool) {
	if v {
		b.SetAttributeValue(name, cty.True)
	}
}

func integer(b *hclwrite.Body, name string, v int64) {
	if v != 0 {
		b.SetAttributeValue(name, cty.NumberIntVal(v))
	}
}

func dur(b *hclwrite.Body, name string, d time.Duration) {
	if d != 0 {
		b.SetAttributeValue(name, cty.StringVal(formatDuration(d)))
	}
}

func durp(b *hclwrite.Body, name string, d *time.Duration) {
	if d != nil {
		b.SetAttributeValue(name, cty.StringVal(formatDuration(*d)))
	}
}

// size writes a byte count in MiB or KiB when it is a whole number of
// them, else in bytes.
func size(b *hclwrite.Body, name string, n int64) {
	switch {
	case n == 0:
	case n%(1<<20) == 0:
		b.SetAttributeValue(name, cty.StringVal(fmt.Sprintf("%dMiB", n>>20)))
	case n%(1<<10) == 0:
		b.SetAttributeValue(name, cty.StringVal(fmt.Sprintf("%dKiB", n>>10)))
	default:
		b.SetAttributeValue(name, cty.NumberIntVal(n))
	}
}

func strList(l []string) cty.Value {
	if len(l) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(l))
	for i, s := range l {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

// formatDuration writes d in the largest unit that keeps it whole: "30s",
// "1500ms", "5m"; time.Duration's own String otherwise.
func formatDuration(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}, {1, "ns"}}
	if d == 0 {
		return "0s"
	}
	for _, u := range units {
		if d%u.d == 0 {
			return fmt.Sprintf("%d%s", d/u.d, u.name)
		}
	}
	return d.String()
}

// writeDependsOn writes depends_on blocks (W1), the condition only when set.
func writeDependsOn(b *hclwrite.Body, ds []spec.Dependency) {
	for _, d := range ds {
		db := b.AppendNewBlock("depends_on", []string{d.Name}).Body()
		str(db, "condition", string(d.Condition))
		dur(db, "timeout", d.Timeout)
		boolean(db, "restart", d.Restart)
	}
}

// writeNames writes a sandbox's host_alias and dns blocks.
func writeNames(b *hclwrite.Body, s *spec.Sandbox) {
	for _, ha := range s.HostAliases {
		hb := b.AppendNewBlock("host_alias", nil).Body()
		str(hb, "ip", ha.IP)
		hb.SetAttributeValue("hostnames", strList(ha.Hostnames))
	}
	if d := s.DNS; d != nil {
		db := b.AppendNewBlock("dns", nil).Body()
		for _, l := range []struct {
			name string
			v    []string
		}{{"nameservers", d.Nameservers}, {"searches", d.Searches}, {"options", d.Options}} {
			if len(l.v) > 0 {
				db.SetAttributeValue(l.name, strList(l.v))
			}
		}
	}
}

// writeVolumes writes a group's volume blocks.
func writeVolumes(b *hclwrite.Body, vols []spec.Volume) {
	for _, v := range vols {
		vb := b.AppendNewBlock("volume", []string{v.Name}).Body()
		str(vb, "type", v.Type)
		str(vb, "medium", v.Medium)
		size(vb, "size_limit", v.SizeLimit)
		str(vb, "path", v.Path)
		str(vb, "host_path_type", v.HostPathType)
		if v.Mode != 0 {
			vb.SetAttributeValue("mode", cty.StringVal(spec.FormatUmask(v.Mode)))
		}
		boolean(vb, "restart_on_change", v.RestartOnChange)
		for _, f := range v.Files {
			fb := vb.AppendNewBlock("file", []string{f.Name}).Body()
			if f.Source == "" {
				fb.SetAttributeValue("content", cty.StringVal(f.Content))
			}
			str(fb, "source", f.Source)
		}
	}
}

// writeVolumeMounts writes a process's volume_mount blocks.
func writeVolumeMounts(b *hclwrite.Body, vms []spec.VolumeMount) {
	for _, m := range vms {
		mb := b.AppendNewBlock("volume_mount", nil).Body()
		str(mb, "volume", m.Volume)
		str(mb, "path", m.Path)
		boolean(mb, "read_only", m.ReadOnly)
		str(mb, "sub_path", m.SubPath)
	}
}
