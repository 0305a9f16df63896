package kube

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/podsup/podsup/spec"
)

// ExportOptions tune Export.
type ExportOptions struct {
	// Kind is "pod" (default) or "deployment": a Deployment of one
	// replica whose template is the pod.
	Kind string
	// DefaultImage is the image of every process that names none. Without
	// it such a process is an error: the API server refuses a container
	// without an image ("image: Required value"), so the export could not
	// be applied.
	DefaultImage string
}

// Export writes one YAML document per group of cfg: a Pod (or a
// Deployment) with every field Kubernetes has, and the rest in podsup.dev/
// annotations, so that Convert gives back the same groups. It returns a
// warning for each annotation written and for what no Pod holds (the
// supervisor block).
func Export(w io.Writer, cfg *spec.Config, o ExportOptions) ([]Finding, error) {
	if o.Kind != "" && o.Kind != "pod" && o.Kind != "deployment" {
		return nil, fmt.Errorf("--kind %q: want pod or deployment", o.Kind)
	}
	if err := checkImages(cfg, o.DefaultImage); err != nil {
		return nil, err
	}
	var warns []Finding
	if !cfg.Supervisor.IsZero() {
		warns = append(warns, Finding{Path: "supervisor", Msg: "podsup's own settings have no place in a Pod: not exported"})
	}
	for i := range cfg.Groups {
		g := cfg.Groups[i]
		if g.Backoff == nil && cfg.Backoff != spec.DefaultBackoff() {
			b := cfg.Backoff // the file's default back-off is the group's
			g.Backoff = &b
		}
		g.Init, g.Processes = withImage(g.Init, o.DefaultImage), withImage(g.Processes, o.DefaultImage)
		pod, data, ws := exportGroup(&g)
		warns = append(warns, ws...)
		var obj any = pod
		if o.Kind == "deployment" {
			obj = deployment(pod)
			if g.RestartPolicy != "" && g.RestartPolicy != spec.RestartAlways {
				warns = append(warns, Finding{Object: "Deployment/" + g.Name, Path: "spec.template.spec.restartPolicy",
					Msg: "Kubernetes runs a Deployment's pods only with restartPolicy Always: apply it as a Pod or a Job"})
			}
		}
		// The ConfigMaps and Secrets of its volumes go before the pod, as
		// kubectl apply wants them.
		for j, o := range append(data, obj) {
			out, err := marshal(o)
			if err != nil {
				return nil, fmt.Errorf("writing group %q: %w", g.Name, err)
			}
			if i > 0 || j > 0 {
				if _, err := io.WriteString(w, "---\n"); err != nil {
					return nil, err
				}
			}
			if _, err := w.Write(out); err != nil {
				return nil, err
			}
		}
	}
	return warns, nil
}

// checkImages names every process and init of cfg that has no image when
// there is no default either: all of them, in one error.
func checkImages(cfg *spec.Config, def string) error {
	if def != "" {
		return nil
	}
	var missing []string
	for _, g := range cfg.Groups {
		for _, list := range []struct {
			field string
			ps    []spec.Process
		}{{"initContainers", g.Init}, {"containers", g.Processes}} {
			for i, p := range list.ps {
				if p.Image == "" {
					missing = append(missing, fmt.Sprintf("error: Pod/%s: spec.%s[%d].image: %q has none", g.Name, list.field, i, p.Name))
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("a Pod's containers need an image, which the API server requires: set image in each process and init block, or give --default-image IMAGE for those without:\n  %s", strings.Join(missing, "\n  "))
}

// withImage is ps, with image def for each process that names none.
func withImage(ps []spec.Process, def string) []spec.Process {
	if def == "" || ps == nil {
		return ps
	}
	out := slices.Clone(ps)
	for i := range out {
		if out[i].Image == "" {
			out[i].Image = def
		}
	}
	return out
}

// exportGroup is g as a Pod, with the ConfigMaps and Secrets its volumes
// read: the Kubernetes fields first; then the Pod is converted back, and
// every field that did not survive goes into an annotation, whole.
func exportGroup(g *spec.Group) (*corev1.Pod, []any, []Finding) {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: g.Name},
	}
	ps := &pod.Spec
	switch g.RestartPolicy {
	case spec.RestartAlways:
		ps.RestartPolicy = corev1.RestartPolicyAlways
	case spec.RestartOnFailure:
		ps.RestartPolicy = corev1.RestartPolicyOnFailure
	case spec.RestartNever:
		ps.RestartPolicy = corev1.RestartPolicyNever
	}
	if d := g.TerminationGracePeriod; d != nil {
		ps.TerminationGracePeriodSeconds = wholeSeconds(*d)
	}
	if s := g.Sandbox; s != nil {
		if slices.Contains(s.Namespaces, "uts") {
			ps.Hostname = s.Hostname
		}
		if slices.Contains(s.Namespaces, "pid") {
			t := true
			ps.ShareProcessNamespace = &t
		}
		if n := s.Network; n != nil && n.Mode == spec.NetworkHost {
			ps.HostNetwork = true
		}
	}
	ps.SecurityContext = podSecurityContext(g.Security)
	hostname := podHostname(ps, g.Name)
	for i := range g.Init {
		ct := container(&g.Init[i], hostname)
		if spec.IsSidecar(&g.Init[i]) {
			always := corev1.ContainerRestartPolicyAlways
			ct.RestartPolicy = &always // a sidecar: a restartable init container
		}
		ps.InitContainers = append(ps.InitContainers, ct)
	}
	for i := range g.Processes {
		ps.Containers = append(ps.Containers, container(&g.Processes[i], hostname))
	}
	if s := g.Sandbox; s != nil && s.Network != nil && len(ps.Containers) > 0 {
		// The pod's ports are the sandbox's: the first container declares
		// them (a pod's containers share its network).
		for _, p := range s.Network.Ports {
			cp := corev1.ContainerPort{Name: p.Name, ContainerPort: int32(p.ContainerPort), HostPort: int32(p.HostPort), HostIP: p.HostIP}
			if p.Protocol == "udp" {
				cp.Protocol = corev1.ProtocolUDP
			}
			ps.Containers[0].Ports = append(ps.Containers[0].Ports, cp)
		}
	}
	if s := g.Sandbox; s != nil {
		sandboxSecurity(ps, s)
		// The pod-level resources only when the containers' own do not
		// already sum to the group's, as Convert sums them.
		sum := &converter{r: &reporter{}, w: &workload{kind: "Pod", name: g.Name, pod: *ps.DeepCopy()}}
		if sum.resources() != s.Resources {
			ps.Resources = podResources(s.Resources)
		}
		if s.UserNamespace {
			ps.HostUsers = spec.Bool(false)
		}
	}
	data := exportVolumes(g, ps)

	// What a Pod holds of g, read back the way Convert reads it.
	w := &workload{kind: "Pod", name: g.Name, pod: *ps.DeepCopy()}
	c := &converter{r: &reporter{}, w: w, images: map[[2]string]string{}, envOrder: map[[2]string][]string{}, usedImages: map[string]bool{}, usedImageConfigs: map[string]bool{}, data: exportedData(data)}
	back := c.group()

	var warns []Finding
	label := "Pod/" + g.Name
	annotate := func(key, body string) {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[key] = body
		warns = append(warns, Finding{Object: label, Path: "metadata.annotations[" + key + "]",
			Msg: "podsup-only fields, which Kubernetes ignores: " + oneLine(body)})
	}
	var gd spec.Group
	if g.RestartPolicy != back.RestartPolicy {
		gd.RestartPolicy = g.RestartPolicy
	}
	if !reflect.DeepEqual(g.TerminationGracePeriod, back.TerminationGracePeriod) {
		gd.TerminationGracePeriod = g.TerminationGracePeriod
	}
	if !reflect.DeepEqual(g.Backoff, back.Backoff) {
		gd.Backoff = g.Backoff
	}
	if !reflect.DeepEqual(g.BackoffLimit, back.BackoffLimit) {
		// A Pod has no backoffLimit (a Job has); the fragment says
		// restart_policy too, which backoff_limit needs.
		gd.BackoffLimit, gd.RestartPolicy = g.BackoffLimit, g.RestartPolicy
	}
	if !reflect.DeepEqual(g.Sandbox, back.Sandbox) {
		gd.Sandbox = g.Sandbox
		if gd.Sandbox == nil { // cannot happen: a Pod's fields only add a sandbox from g's
			gd.Sandbox = &spec.Sandbox{}
		}
	}
	if !reflect.DeepEqual(g.Security, back.Security) {
		gd.Security = g.Security
	}
	gd.Volumes = volumesDelta(g.Volumes, back.Volumes)
	if g.FSGroup != back.FSGroup { // a name: fsGroup is a number
		gd.FSGroup = g.FSGroup
	}
	if len(g.DependsOn) > 0 { // a Pod has no start order: always podsup's own
		gd.DependsOn = g.DependsOn
	}
	if !reflect.DeepEqual(gd, spec.Group{}) {
		annotate(groupAnnotation, fragmentBody(func(b *hclwrite.Body) { writeGroupFields(b, &gd) }))
	}
	for _, list := range []struct {
		key       string
		want, got []spec.Process
	}{{initAnnotation, g.Init, back.Init}, {processAnnotation, g.Processes, back.Processes}} {
		for i := range list.want {
			got := withoutStandardEnv(&list.got[i], &list.want[i], hostname)
			d := processDelta(&list.want[i], got)
			if !reflect.DeepEqual(d, spec.Process{}) {
				annotate(list.key+list.want[i].Name, fragmentBody(func(b *hclwrite.Body) { writeProcess(b, &d) }))
			}
		}
	}
	return pod, data, warns
}

// sandboxSecurity writes the sandbox's read-only root and proc mount into
// every container's securityContext, where Kubernetes has them: Convert
// gives them back to the sandbox only when every container sets them.
func sandboxSecurity(ps *corev1.PodSpec, s *spec.Sandbox) {
	if !s.ReadOnlyRootFilesystem && s.ProcMount != spec.ProcMountUnmasked {
		return
	}
	for _, list := range [][]corev1.Container{ps.InitContainers, ps.Containers} {
		for i := range list {
			sc := list[i].SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
				list[i].SecurityContext = sc
			}
			if s.ReadOnlyRootFilesystem {
				sc.ReadOnlyRootFilesystem = spec.Bool(true)
			}
			if s.ProcMount == spec.ProcMountUnmasked {
				pm := corev1.UnmaskedProcMount
				sc.ProcMount = &pm
			}
		}
	}
}

// withoutStandardEnv is got without the HOSTNAME that converting a Pod
// adds (standardEnv), when want has none: Kubernetes sets it in every
// container, so a Pod cannot say it is absent, and an annotation for it
// on every process would say nothing.
func withoutStandardEnv(got, want *spec.Process, hostname string) *spec.Process {
	if _, ok := want.Env["HOSTNAME"]; ok || got.Env["HOSTNAME"] != hostname {
		return got
	}
	out := *got
	out.Env = maps.Clone(got.Env)
	delete(out.Env, "HOSTNAME")
	if len(out.Env) == 0 {
		out.Env = nil
	}
	return &out
}

// container is p as a container of a pod whose hostname is hostname: a
// HOSTNAME variable of that value goes without saying.
func container(p *spec.Process, hostname string) corev1.Container {
	// kubelet expands $(VAR) and $$ in these: escaped, they reach the
	// process as podsup would pass them.
	c := corev1.Container{Name: p.Name, Image: p.Image, WorkingDir: p.WorkingDir}
	for _, arg := range p.Command {
		c.Command = append(c.Command, escapeExpansion(arg))
	}
	for _, k := range sortedEnv(p.Env) {
		if k == "HOSTNAME" && p.Env[k] == hostname {
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: escapeExpansion(p.Env[k])})
	}
	if u, err := strconv.ParseInt(p.User, 10, 64); err == nil {
		c.SecurityContext = &corev1.SecurityContext{RunAsUser: &u}
	}
	if g, err := strconv.ParseInt(p.Group, 10, 64); err == nil {
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		c.SecurityContext.RunAsGroup = &g
	}
	c.SecurityContext = containerSecurityContext(c.SecurityContext, p.Security)
	c.Resources = containerLimits(p.Resources)
	c.StartupProbe = probe(p.StartupProbe)
	c.LivenessProbe = probe(p.LivenessProbe)
	c.ReadinessProbe = probe(p.ReadinessProbe)
	if p.PostStart != nil || p.PreStop != nil || p.StopSignal != 0 {
		c.Lifecycle = &corev1.Lifecycle{PostStart: hookHandler(p.PostStart), PreStop: hookHandler(p.PreStop)}
		if p.StopSignal != 0 {
			s := signalName(p.StopSignal)
			c.Lifecycle.StopSignal = &s
		}
	}
	return c
}

func probe(p *spec.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	kp := &corev1.Probe{
		InitialDelaySeconds: int32(p.InitialDelay / time.Second),
		PeriodSeconds:       int32(p.Period / time.Second),
		TimeoutSeconds:      int32(p.Timeout / time.Second),
		SuccessThreshold:    int32(p.SuccessThreshold),
		FailureThreshold:    int32(p.FailureThreshold),
	}
	if d := p.TerminationGracePeriod; d != nil {
		kp.TerminationGracePeriodSeconds = wholeSeconds(*d)
	}
	h := &p.Handler
	if h.Exec != nil {
		kp.Exec = &corev1.ExecAction{Command: h.Exec.Command}
	}
	kp.HTTPGet = httpGet(h.HTTPGet)
	if t := h.TCPSocket; t != nil {
		kp.TCPSocket = &corev1.TCPSocketAction{Host: t.Host, Port: intstr.FromInt32(int32(t.Port))}
	}
	if g := h.GRPC; g != nil {
		kp.GRPC = &corev1.GRPCAction{Port: int32(g.Port)}
		if g.Service != "" {
			kp.GRPC.Service = &g.Service
		}
	}
	return kp
}

func hookHandler(h *spec.Hook) *corev1.LifecycleHandler {
	if h == nil {
		return nil
	}
	kh := &corev1.LifecycleHandler{HTTPGet: httpGet(h.HTTPGet)}
	if h.Exec != nil {
		kh.Exec = &corev1.ExecAction{Command: h.Exec.Command}
	}
	if s := h.Sleep; s != nil {
		kh.Sleep = &corev1.SleepAction{Seconds: int64(s.Duration / time.Second)}
	}
	return kh
}

func httpGet(g *spec.HTTPGetAction) *corev1.HTTPGetAction {
	if g == nil {
		return nil
	}
	a := &corev1.HTTPGetAction{Host: g.Host, Path: g.Path, Port: intstr.FromInt32(int32(g.Port))}
	switch g.Scheme {
	case "http":
		a.Scheme = corev1.URISchemeHTTP
	case "https":
		a.Scheme = corev1.URISchemeHTTPS
	}
	for _, k := range sortedEnv(g.Headers) {
		a.HTTPHeaders = append(a.HTTPHeaders, corev1.HTTPHeader{Name: k, Value: g.Headers[k]})
	}
	return a
}

// podResources are the group's limits as pod-level resources: the
// cgroup is the pod's, not one container's.
func podResources(r spec.Resources) *corev1.ResourceRequirements {
	if r.Memory == 0 && r.CPU == 0 && r.CPUWeight == 0 && r.Pids == 0 {
		return nil
	}
	rr := &corev1.ResourceRequirements{}
	if r.Memory != 0 || r.CPU != 0 || r.Pids != 0 {
		rr.Limits = corev1.ResourceList{}
	}
	if r.Pids != 0 {
		rr.Limits[resourcePids] = *resource.NewQuantity(r.Pids, resource.DecimalSI)
	}
	if r.Memory != 0 {
		rr.Limits[corev1.ResourceMemory] = *resource.NewQuantity(r.Memory, resource.BinarySI)
	}
	if r.CPU != 0 {
		rr.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(r.CPU*1000+0.5), resource.DecimalSI)
	}
	if r.CPURequest != 0 { // the request itself: its weight rounds
		rr.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(r.CPURequestMilli(), resource.DecimalSI)}
	} else if r.CPUWeight != 0 {
		if m, ok := milliForWeight(r.CPUWeight); ok {
			rr.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(m, resource.DecimalSI)}
		}
	}
	return rr
}

// containerLimits are a process's own cgroup limits as its container's
// resources. A pids limit has no place there (Kubernetes limits pids per
// pod): an annotation carries it. A CPU request equal to the limit goes
// without saying, as kubelet defaults it so.
func containerLimits(r spec.Resources) corev1.ResourceRequirements {
	r.Pids = 0
	rr := podResources(r)
	if rr == nil {
		return corev1.ResourceRequirements{}
	}
	if r.CPURequest != 0 && r.CPURequest == r.CPU {
		rr.Requests = nil
	}
	return *rr
}

func deployment(pod *corev1.Pod) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{annotationPrefix + "group": pod.Name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: pod.Annotations},
				Spec:       pod.Spec,
			},
		},
	}
}

// marshal writes obj as YAML without the empty status and creation
// timestamps that the API types always carry.
func marshal(obj any) ([]byte, error) {
	js, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(js, &m); err != nil {
		return nil, err
	}
	prune(m)
	return yaml.Marshal(m)
}

func prune(m map[string]any) {
	delete(m, "status")
	delete(m, "creationTimestamp")
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			prune(v)
			if len(v) == 0 && (k == "metadata" || k == "strategy" || k == "resources") {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if sub, ok := e.(map[string]any); ok {
					prune(sub)
				}
			}
		}
	}
}

func wholeSeconds(d time.Duration) *int64 {
	s := int64(d / time.Second)
	return &s
}

func sortedEnv(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func oneLine(s string) string {
	out := []rune{}
	space := false
	for _, r := range s {
		if r == '\n' || r == '\t' || r == ' ' {
			if !space {
				out = append(out, ' ')
			}
			space = true
			continue
		}
		space = false
		out = append(out, r)
	}
	return string(out)
}
