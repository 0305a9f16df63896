package kube

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podsup/podsup/spec"
)

// Options tune Convert.
type Options struct {
	// Strict makes every warning an error.
	Strict bool
	// Rootfs maps an image to an unpacked root filesystem: a group whose
	// containers run that image gets a sandbox that pivot_roots into it.
	Rootfs map[string]string
	// EnvSources are ConfigMaps and Secrets beside the manifest's own
	// documents, for env[].valueFrom and envFrom.
	EnvSources []EnvSource
	// Images are images' configurations (ReadImage) by image name: a
	// container of one gets its Entrypoint and Cmd by kubelet's rules,
	// and its Env, WorkingDir and User where the container sets none.
	Images map[string]*Image
	// Entrypoints are images' entrypoints by image name, where no image
	// directory is at hand (--entrypoint): over Images', and with no Cmd.
	Entrypoints map[string][]string
	// NodeName is the downward API's spec.nodeName when the pod names no
	// node; empty, it is this machine's hostname (the name kubelet would
	// register the node under).
	NodeName string
	// PodIP and HostIP are the downward API's status.podIP(s) and
	// status.hostIP(s), which podsup-kube cannot know for the machine
	// that runs the pod (--pod-ip, --host-ip); without them, a fieldRef
	// to one is refused.
	PodIP, HostIP string
}

// Result is a converted manifest.
type Result struct {
	Config *spec.Config
	// Findings are the warnings (under Strict there are none: they are
	// errors).
	Findings []Finding
	// Images are the containers' images by group and process name, for the
	// HCL output's comments, with where they run from: "IMAGE" (this
	// machine's files) or "IMAGE=DIR" (a --rootfs).
	Images map[[2]string]string
	// EnvOrder is the order in which each container declares its
	// variables, by group and process name, for the HCL output.
	EnvOrder map[[2]string][]string
}

// Convert reads a manifest (one or more YAML documents) and returns the
// equivalent podsup configuration, one group per object. An error is a
// *FindingsError when the manifest was read but cannot be converted as
// written; it lists every problem at once.
func Convert(src io.Reader, o Options) (*Result, error) {
	ws, skipped, err := decodeAll(src)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: &spec.Config{Backoff: spec.DefaultBackoff()}, Images: map[[2]string]string{}, EnvOrder: map[[2]string][]string{}}
	all := skipped
	usedImages, usedImageConfigs := map[string]bool{}, map[string]bool{}
	sources := slices.Clone(o.EnvSources)
	data := dataObjects{}
	for _, w := range ws {
		if w.source != nil {
			sources = append(sources, *w.source)
		}
		if w.data != nil {
			data[[2]string{w.data.kind, w.data.name}] = w.data
		}
	}
	for _, w := range ws {
		if w.source != nil {
			continue
		}
		r := &reporter{object: w.label()}
		if w.readAs != "" {
			r.warn("apiVersion", "%s", w.readAs)
		}
		w.unmappedFields(r)
		c := &converter{r: r, w: w, o: o, images: res.Images, envOrder: res.EnvOrder, usedImages: usedImages, usedImageConfigs: usedImageConfigs, sources: sources, data: data}
		g := c.group()
		res.Config.Groups = append(res.Config.Groups, g)
		all = append(all, r.findings...)
	}
	for img := range o.Rootfs {
		if !usedImages[img] {
			all = append(all, Finding{Path: "--rootfs", Msg: fmt.Sprintf("no container runs image %q", img)})
		}
	}
	for _, img := range slices.Sorted(maps.Keys(o.Images)) {
		if !usedImageConfigs[img] {
			all = append(all, Finding{Path: "--image", Msg: fmt.Sprintf("no container runs image %q", img)})
		}
	}
	for _, img := range slices.Sorted(maps.Keys(o.Entrypoints)) {
		if !usedImageConfigs[img] {
			all = append(all, Finding{Path: "--entrypoint", Msg: fmt.Sprintf("no container runs image %q", img)})
		}
	}
	refused := false
	for i := range all {
		if o.Strict && !all[i].Note {
			all[i].Error = true
		}
		refused = refused || all[i].Error
	}
	if refused {
		// Every finding, not only the errors: a user fixing the refusal
		// should not meet the warnings only on the next run.
		return nil, &FindingsError{Findings: all}
	}
	res.Findings = all
	if err := res.Config.Validate(); err != nil {
		return nil, fmt.Errorf("the converted configuration is not valid: %w", err)
	}
	return res, nil
}

type converter struct {
	r          *reporter
	w          *workload
	o          Options
	images     map[[2]string]string
	envOrder   map[[2]string][]string
	usedImages map[string]bool
	// usedImageConfigs are the images whose Options.Images or
	// Options.Entrypoints entry a container read.
	usedImageConfigs map[string]bool
	sources          []EnvSource
	rootfs           string
	rootfsFrom       string // path of the container that chose rootfs
	// data are the manifest's ConfigMaps and Secrets; dropped are the
	// volumes of kinds podsup has not, with their paths (volumes.go).
	data    dataObjects
	dropped map[string]string
}

func (c *converter) path(rel string) string { return c.w.prefix + rel }

func (c *converter) group() spec.Group {
	pod := &c.w.pod
	g := spec.Group{Name: c.w.name}
	switch pod.RestartPolicy {
	case "":
	case corev1.RestartPolicyAlways:
		g.RestartPolicy = spec.RestartAlways
	case corev1.RestartPolicyOnFailure:
		g.RestartPolicy = spec.RestartOnFailure
	case corev1.RestartPolicyNever:
		g.RestartPolicy = spec.RestartNever
	default:
		c.r.fail(c.path("spec.restartPolicy"), "%q is not Always, OnFailure or Never", pod.RestartPolicy)
	}
	if s := pod.TerminationGracePeriodSeconds; s != nil {
		g.TerminationGracePeriod = spec.Durp(seconds(*s))
	}
	if c.w.job && (g.RestartPolicy == spec.RestartOnFailure || g.RestartPolicy == spec.RestartNever) {
		c.jobLimit(&g) // the API server takes a Job's pods with no other policy
	}
	c.volumes(&g)
	if c.w.indexedAt != "" {
		c.r.note(c.w.indexedAt, "Indexed: podsup runs one pod, the one of completion index 0: every container gets JOB_COMPLETION_INDEX=0, as the Job controller sets it")
	}
	for i := range pod.InitContainers {
		p, ok := c.process(&pod.InitContainers[i], fmt.Sprintf("spec.initContainers[%d]", i), true)
		if ok {
			g.Init = append(g.Init, p)
		}
	}
	for i := range pod.Containers {
		p, ok := c.process(&pod.Containers[i], fmt.Sprintf("spec.containers[%d]", i), false)
		if ok {
			g.Processes = append(g.Processes, p)
		}
	}
	g.Security = c.podSecurity()
	g.Sandbox = c.sandbox(&g)
	c.annotations(&g)
	return g
}

// jobLimit gives a Job's group the Job's backoffLimit (R7), 6 when it
// sets none, as the Job controller defaults it. A note says so, since a
// Job that meant to run once runs up to 7 times; a note, not a warning,
// for podsup does what the Job controller would, and --strict is about
// what it cannot do.
func (c *converter) jobLimit(g *spec.Group) {
	limit := spec.DefaultJobBackoffLimit
	if l := c.w.backoffLimit; l != nil {
		limit = int(*l)
	} else {
		c.r.note(c.w.backoffAt, "not set: the Job controller retries a failed pod %d times, and so does the group (backoff_limit = %d); write backoffLimit to say how often", limit, limit)
	}
	g.BackoffLimit = &limit
}

// sandbox is the group's: namespaces for hostname and
// shareProcessNamespace, the cgroup limits, the rootfs of --rootfs, the
// read-only root and proc mount of the containers' securityContexts; a
// cgroup alone (sandbox {}) when only g's processes have limits, which
// their own cgroups need a group cgroup to sit in.
func (c *converter) sandbox(g *spec.Group) *spec.Sandbox {
	pod := &c.w.pod
	s := &spec.Sandbox{Resources: c.resources()}
	ns := map[string]bool{}
	if pod.Hostname != "" {
		ns["uts"] = true
		s.Hostname = pod.Hostname
	}
	if pod.ShareProcessNamespace != nil && *pod.ShareProcessNamespace {
		// One PID namespace for the pod, with its own /proc so that the
		// processes see each other (and only each other).
		ns["pid"], ns["mount"] = true, true
		s.Mounts = append(s.Mounts, spec.Mount{Type: "proc", Target: "/proc"})
	}
	if c.rootfs != "" {
		ns["mount"] = true
		s.Rootfs = c.rootfs
	}
	c.filesystem(s, ns)
	if h := pod.HostUsers; h != nil && !*h {
		s.UserNamespace = true
	}
	if n := c.network(); n != nil {
		ns["net"] = true
		s.Network = n
	}
	c.names(s, ns, g)
	for _, n := range spec.Namespaces {
		if ns[n] {
			s.Namespaces = append(s.Namespaces, n)
		}
	}
	if len(s.Namespaces) == 0 && s.Resources == (spec.Resources{}) && s.ProcMount == "" && s.Network == nil && !s.UserNamespace && !processLimits(g) {
		return nil
	}
	return s
}

// processLimits says whether a process or init of g has resources of its
// own.
func processLimits(g *spec.Group) bool {
	for _, ps := range [][]spec.Process{g.Init, g.Processes} {
		for i := range ps {
			if ps[i].Resources != (spec.Resources{}) {
				return true
			}
		}
	}
	return false
}

// network is the group's network: a pod that publishes a port (a
// container port with a hostPort) and is not on the host's network gets a
// podsup bridge with every container port (named ones for probes) and the
// published ones mapped through portmap, as kubelet's CNI does. Other pods
// stay on the host's network, where their ports already are.
func (c *converter) network() *spec.Network {
	pod := &c.w.pod
	if pod.HostNetwork {
		return nil
	}
	var ports []spec.Port
	published := false
	for i := range pod.Containers {
		ct := &pod.Containers[i]
		for j, cp := range ct.Ports {
			at := fmt.Sprintf("spec.containers[%d].ports[%d]", i, j)
			name := cp.Name
			if name == "" {
				name = fmt.Sprintf("%s-%d", ct.Name, cp.ContainerPort)
			}
			p := spec.Port{Name: name, ContainerPort: int(cp.ContainerPort), HostPort: int(cp.HostPort), HostIP: cp.HostIP}
			switch cp.Protocol {
			case "", corev1.ProtocolTCP:
			case corev1.ProtocolUDP:
				p.Protocol = "udp"
			default:
				c.r.warn(c.path(at+".protocol"), "podsup publishes tcp and udp ports only: %s is ignored", cp.Protocol)
				continue
			}
			published = published || p.HostPort != 0
			ports = append(ports, p)
		}
	}
	if !published {
		return nil
	}
	return &spec.Network{Mode: spec.NetworkBridge, Ports: ports}
}

// bridged says whether the pod gets podsup's bridge, and so an address
// of its own (network, without its findings).
func (c *converter) bridged() bool {
	if c.w.pod.HostNetwork {
		return false
	}
	for i := range c.w.pod.Containers {
		for _, cp := range c.w.pod.Containers[i].Ports {
			if cp.HostPort != 0 && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP || cp.Protocol == corev1.ProtocolUDP) {
				return true
			}
		}
	}
	return false
}

// resources are the group's cgroup limits: the pod-level resources when
// the pod sets them, else what kubelet gives the pod cgroup, the sum over
// the containers (the larger of that and any one init container's), which
// is a limit only when every container sets one.
func (c *converter) resources() spec.Resources {
	pod := &c.w.pod
	var out spec.Resources
	if pod.Resources != nil {
		return c.resourceList(pod.Resources, "spec.resources")
	}
	type sum struct {
		v     float64
		all   bool
		some  bool
		field string
	}
	mem, cpu, req := sum{all: true, field: "limits.memory"}, sum{all: true, field: "limits.cpu"}, sum{all: true, field: "requests.cpu"}
	pids := sum{all: true, field: "limits.pids"}
	var initMem, initCPU, initReq, initPids float64
	add := func(s *sum, q resource.Quantity, ok bool, scale float64) {
		if ok {
			s.v += float64(q.MilliValue()) / 1000 * scale
			s.some = true
		} else {
			s.all = false
		}
	}
	for i := range pod.Containers {
		rr := &pod.Containers[i].Resources
		q, ok := rr.Limits[corev1.ResourceMemory]
		add(&mem, q, ok, 1)
		q, ok = rr.Limits[corev1.ResourceCPU]
		add(&cpu, q, ok, 1)
		q, ok = rr.Requests[corev1.ResourceCPU]
		if !ok { // kubelet: a request defaults to the limit
			q, ok = rr.Limits[corev1.ResourceCPU]
		}
		add(&req, q, ok, 1)
		q, ok = rr.Limits[resourcePids]
		add(&pids, q, ok, 1)
		c.otherResources(rr, fmt.Sprintf("spec.containers[%d].resources", i))
	}
	for i := range pod.InitContainers {
		rr := &pod.InitContainers[i].Resources
		if q, ok := rr.Limits[corev1.ResourceMemory]; ok {
			initMem = max(initMem, float64(q.Value()))
		}
		if q, ok := rr.Limits[corev1.ResourceCPU]; ok {
			initCPU = max(initCPU, float64(q.MilliValue())/1000)
		}
		if q, ok := rr.Requests[corev1.ResourceCPU]; ok {
			initReq = max(initReq, float64(q.MilliValue())/1000)
		}
		if q, ok := rr.Limits[resourcePids]; ok {
			initPids = max(initPids, float64(q.Value()))
		}
		c.otherResources(rr, fmt.Sprintf("spec.initContainers[%d].resources", i))
	}
	for _, s := range []*sum{&mem, &cpu, &req, &pids} {
		if s.some && !s.all {
			c.r.warn(c.path("spec.containers"), "only some containers set resources.%s: the group's cgroup gets no such limit, as kubelet gives the pod none (those that set one have it on their own cgroup)", s.field)
		}
	}
	if mem.some && mem.all {
		out.Memory = int64(max(mem.v, initMem))
	}
	if cpu.some && cpu.all {
		out.CPU = max(cpu.v, initCPU)
	}
	if req.some && req.all {
		out.CPURequest = float64(int64(math.Round(max(req.v, initReq)*1000))) / 1000
		out.CPUWeight = cpuWeight(out.CPURequestMilli())
	}
	if pids.some && pids.all {
		out.Pids = int64(max(pids.v, initPids))
	}
	return out
}

// resourcePids is the pids limit of a pod's (or a container's)
// resources: the sandbox's pids.
const resourcePids corev1.ResourceName = "pids"

func (c *converter) resourceList(rr *corev1.ResourceRequirements, at string) spec.Resources {
	var out spec.Resources
	if q, ok := rr.Limits[corev1.ResourceMemory]; ok {
		out.Memory = q.Value()
	}
	if q, ok := rr.Limits[corev1.ResourceCPU]; ok {
		out.CPU = float64(q.MilliValue()) / 1000
	}
	q, ok := rr.Requests[corev1.ResourceCPU]
	if !ok { // kubelet: a request defaults to the limit
		q, ok = rr.Limits[corev1.ResourceCPU]
	}
	if ok {
		out.CPURequest = float64(q.MilliValue()) / 1000
		out.CPUWeight = cpuWeight(q.MilliValue())
	}
	if q, ok := rr.Limits[resourcePids]; ok {
		out.Pids = q.Value()
	}
	c.otherResources(rr, at)
	return out
}

// containerResources are a container's own cgroup limits, as kubelet
// sets them on the container's cgroup inside the pod's: limits.memory,
// limits.cpu, and requests.cpu (defaulting to the limit) for the weight.
// Kubernetes has no per-container pids limit: a container's limits.pids
// counts only toward the pod's (resources). What the pod's resources
// leave out is reported there.
func containerResources(rr *corev1.ResourceRequirements) spec.Resources {
	var out spec.Resources
	if q, ok := rr.Limits[corev1.ResourceMemory]; ok {
		out.Memory = q.Value()
	}
	if q, ok := rr.Limits[corev1.ResourceCPU]; ok {
		out.CPU = float64(q.MilliValue()) / 1000
	}
	q, ok := rr.Requests[corev1.ResourceCPU]
	if !ok {
		q, ok = rr.Limits[corev1.ResourceCPU]
	}
	if ok {
		out.CPURequest = float64(q.MilliValue()) / 1000
		out.CPUWeight = cpuWeight(q.MilliValue())
	}
	return out
}

// otherResources reports every resource but limits.memory, limits.cpu,
// limits.pids and requests.cpu.
func (c *converter) otherResources(rr *corev1.ResourceRequirements, at string) {
	for _, name := range sortedKeys(rr.Limits) {
		if name != corev1.ResourceMemory && name != corev1.ResourceCPU && name != resourcePids {
			c.r.warn(c.path(at+".limits."+string(name)), "podsup limits only memory, cpu and pids: ignored")
		}
	}
	for _, name := range sortedKeys(rr.Requests) {
		if name != corev1.ResourceCPU {
			c.r.warn(c.path(at+".requests."+string(name)), "podsup reserves nothing; only requests.cpu has a meaning (the cgroup's cpu weight): ignored")
		}
	}
}

func sortedKeys(l corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k := range l {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// cpuWeight is kubelet's cgroup v2 weight for a CPU request in
// millicores.
func cpuWeight(milli int64) int { return spec.CPUWeightForRequest(milli) }

// milliForWeight is a CPU request that cpuWeight maps to w, when there is
// one.
func milliForWeight(w int) (int64, bool) {
	shares := 2 + (int64(w-1)*262142+9998)/9999
	for _, m := range []int64{shares * 1000 / 1024, shares*1000/1024 + 1} {
		if cpuWeight(m) == w {
			return m, true
		}
	}
	return 0, false
}

func (c *converter) process(ct *corev1.Container, at string, isInit bool) (spec.Process, bool) {
	p := spec.Process{Name: ct.Name}
	if isInit && ct.RestartPolicy != nil {
		if *ct.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			p.RestartPolicy = spec.RestartAlways // a sidecar (KEP-753)
		} else {
			c.r.fail(c.path(at+".restartPolicy"), "%q: only Always is defined for an init container", *ct.RestartPolicy)
		}
	} else if ct.RestartPolicy != nil {
		c.r.warn(c.path(at+".restartPolicy"), "a container's restart policy is for sidecar init containers only: ignored")
	}
	c.image(ct, at, &p)
	p.Resources = containerResources(&ct.Resources)
	img := c.imageFor(ct)
	env := c.environment(ct, at)
	p.Command = c.command(ct, at, env, img)
	p.WorkingDir = ct.WorkingDir
	p.VolumeMounts = c.volumeMounts(ct, at)
	p.User, p.Group = c.identity(ct)
	imageDefaults(&p, env, img, p.User != "", p.Group != "")
	c.standardEnv(env)
	p.Env = env.values()
	c.envOrder[[2]string{c.w.name, ct.Name}] = env.names
	p.Security = c.containerSecurity(ct.SecurityContext, at+".securityContext")
	p.StartupProbe = c.probe(ct.StartupProbe, at+".startupProbe", ct)
	p.LivenessProbe = c.probe(ct.LivenessProbe, at+".livenessProbe", ct)
	p.ReadinessProbe = c.probe(ct.ReadinessProbe, at+".readinessProbe", ct)
	if l := ct.Lifecycle; l != nil {
		p.PostStart = c.hook(l.PostStart, at+".lifecycle.postStart", ct)
		p.PreStop = c.hook(l.PreStop, at+".lifecycle.preStop", ct)
		if l.StopSignal != nil {
			sig, err := spec.ParseSignal(string(*l.StopSignal))
			if err != nil {
				c.r.fail(c.path(at+".lifecycle.stopSignal"), "%v", err)
			}
			p.StopSignal = sig
		}
	}
	return p, true
}

// identity is the container's runAsUser and runAsGroup, else the pod's.
func (c *converter) identity(ct *corev1.Container) (user, group string) {
	var u, g *int64
	if sc := c.w.pod.SecurityContext; sc != nil {
		u, g = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := ct.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			g = sc.RunAsGroup
		}
	}
	if u != nil {
		user = strconv.FormatInt(*u, 10)
	}
	if g != nil {
		group = strconv.FormatInt(*g, 10)
	}
	return user, group
}

// image keeps the container's image as the process's, and with --rootfs
// picks the group's root filesystem. An image without one is a note, not
// a warning: podsup was not asked to use it, and --strict is about
// behaviour podsup cannot give, not about images.
func (c *converter) image(ct *corev1.Container, at string, p *spec.Process) {
	if ct.Image == "" {
		return
	}
	p.Image = ct.Image
	c.images[[2]string{c.w.name, ct.Name}] = ct.Image
	dir, ok := c.o.Rootfs[ct.Image]
	if !ok {
		c.r.note(c.path(at+".image"), "podsup runs no images: %q is kept as the process's image and the command runs on the host's filesystem (map it to an unpacked root filesystem with --rootfs %s=DIR)", ct.Image, ct.Image)
		return
	}
	c.usedImages[ct.Image] = true
	c.images[[2]string{c.w.name, ct.Name}] = ct.Image + "=" + dir
	switch {
	case c.rootfs == "":
		c.rootfs, c.rootfsFrom = dir, at
	case c.rootfs != dir:
		c.r.fail(c.path(at+".image"), "--rootfs gives %q a root filesystem other than %s's (%s): a group's processes share one sandbox and so one root filesystem", ct.Image, c.rootfsFrom, c.rootfs)
	}
}

func (c *converter) probe(kp *corev1.Probe, at string, ct *corev1.Container) *spec.Probe {
	if kp == nil {
		return nil
	}
	p := &spec.Probe{
		InitialDelay:     seconds(int64(kp.InitialDelaySeconds)),
		Period:           seconds(int64(kp.PeriodSeconds)),
		Timeout:          seconds(int64(kp.TimeoutSeconds)),
		SuccessThreshold: int(kp.SuccessThreshold),
		FailureThreshold: int(kp.FailureThreshold),
	}
	if s := kp.TerminationGracePeriodSeconds; s != nil {
		p.TerminationGracePeriod = spec.Durp(seconds(*s))
	}
	h := &kp.ProbeHandler
	if g := h.GRPC; g != nil {
		p.GRPC = &spec.GRPCAction{Port: int(g.Port)}
		if g.Service != nil {
			p.GRPC.Service = *g.Service
		}
	}
	if h.Exec != nil {
		p.Exec = &spec.ExecAction{Command: h.Exec.Command}
	}
	if h.HTTPGet != nil {
		p.HTTPGet = c.httpGet(h.HTTPGet, at+".httpGet", ct)
	}
	if h.TCPSocket != nil {
		p.TCPSocket = &spec.TCPSocketAction{Host: h.TCPSocket.Host, Port: c.port(h.TCPSocket.Port, at+".tcpSocket.port", ct)}
	}
	return p
}

func (c *converter) hook(kh *corev1.LifecycleHandler, at string, ct *corev1.Container) *spec.Hook {
	if kh == nil {
		return nil
	}
	h := &spec.Hook{}
	if kh.Exec != nil {
		h.Exec = &spec.ExecAction{Command: kh.Exec.Command}
	}
	if kh.HTTPGet != nil {
		h.HTTPGet = c.httpGet(kh.HTTPGet, at+".httpGet", ct)
	}
	if kh.Sleep != nil {
		h.Sleep = &spec.SleepAction{Duration: seconds(kh.Sleep.Seconds)}
	}
	if h.Exec == nil && h.HTTPGet == nil && h.Sleep == nil {
		return nil // only a tcpSocket, already reported
	}
	return h
}

func (c *converter) httpGet(g *corev1.HTTPGetAction, at string, ct *corev1.Container) *spec.HTTPGetAction {
	a := &spec.HTTPGetAction{
		Scheme: strings.ToLower(string(g.Scheme)),
		Host:   g.Host,
		Port:   c.port(g.Port, at+".port", ct),
		Path:   g.Path,
	}
	if g.Protocol != nil && *g.Protocol != corev1.HTTPProtocolHTTP1 {
		// Kubernetes 1.37 (feature gate H2CContainerProbe).
		c.r.warn(c.path(at+".protocol"), "podsup's HTTP probes speak HTTP/1.1 (and HTTP/2 only over https, as the server offers it): %q is ignored, and a server that speaks only HTTP/2 over plain http fails the probe", string(*g.Protocol))
	}
	for _, h := range g.HTTPHeaders {
		if a.Headers == nil {
			a.Headers = map[string]string{}
		}
		a.Headers[h.Name] = h.Value
	}
	return a
}

// port is a probe's or hook's port: a number, or the name of one of the
// container's ports.
func (c *converter) port(p intstr.IntOrString, at string, ct *corev1.Container) int {
	if p.Type == intstr.Int {
		return int(p.IntVal)
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n
	}
	for _, cp := range ct.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	c.r.fail(c.path(at), "container %q has no port named %q: write the port number", ct.Name, p.StrVal)
	return 0
}

func seconds(s int64) time.Duration { return time.Duration(s) * time.Second }

// signalName is the Kubernetes spelling of a stop signal.
func signalName(s syscall.Signal) corev1.Signal { return corev1.Signal(spec.SignalName(s)) }
