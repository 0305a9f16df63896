package kube

import (
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// EnvSource is a ConfigMap's or a Secret's data, which env[].valueFrom
// and envFrom read: from a document of the manifest, or from a file given
// with --configmap or --secret.
type EnvSource struct {
	Kind      string // "ConfigMap" or "Secret"
	Name      string
	Namespace string
	Data      map[string]string
}

// environment is a container's variables as kubelet computes them, with
// the order in which the manifest declares them.
type environment struct {
	names []string // in the manifest's order, each once
	vars  map[string]string
}

func (e *environment) set(name, value string) {
	if e.vars == nil {
		e.vars = map[string]string{}
	}
	if _, ok := e.vars[name]; !ok {
		e.names = append(e.names, name)
	}
	e.vars[name] = value // a later entry wins, as in kubelet
}

func (e *environment) lookup(name string) (string, bool) {
	v, ok := e.vars[name]
	return v, ok
}

// values is the process's env. Every $(VAR) is already expanded, each
// value with the variables declared before it, so the map's lack of order
// (podsup's env is a map, and HCL's too once read) no longer changes what
// a process gets: the order in the HCL is for whoever reads the file.
func (e *environment) values() map[string]string {
	if len(e.vars) == 0 {
		return nil
	}
	return e.vars
}

// standardEnv adds what the container runtime under kubelet sets in
// every container and that has a meaning here: HOSTNAME, the pod's
// hostname (a hostNetwork pod's is the node's, which podsup-kube cannot
// know, so it gets none). The manifest's own variables win, as they do
// over the runtime's, and none of these is seen by $(VAR) expansion:
// kubelet expands before the runtime adds them. Not set: service links
// and KUBERNETES_SERVICE_* (there is no Service and no API server).
// An Indexed Job's containers also get JOB_COMPLETION_INDEX, which the
// Job controller writes into their env (where $(VAR) would see it; here
// it is added after expansion, like the rest).
func (c *converter) standardEnv(env *environment) {
	if _, ok := env.lookup("JOB_COMPLETION_INDEX"); !ok && c.w.indexedAt != "" {
		env.set("JOB_COMPLETION_INDEX", "0") // the one pod's (indexed)
	}
	if c.w.pod.HostNetwork {
		return
	}
	if _, ok := env.lookup("HOSTNAME"); !ok {
		env.set("HOSTNAME", podHostname(&c.w.pod, c.w.name))
	}
}

// podHostname is the hostname kubelet gives a pod: spec.hostname, else
// the pod's name, cut to 63 bytes without a trailing '-' or '.'
// (truncatePodHostnameIfNeeded).
func podHostname(ps *corev1.PodSpec, name string) string {
	h := name
	if ps.Hostname != "" {
		h = ps.Hostname
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// environment follows kubelet's makeEnvironmentVariables: envFrom's
// sources first, in order, then each env entry, its value expanded with
// the variables before it (a reference to a later or unknown one stays as
// written) or read from its valueFrom (never expanded).
func (c *converter) environment(ct *corev1.Container, at string) *environment {
	env := &environment{}
	for i, ef := range ct.EnvFrom {
		path := c.path(fmt.Sprintf("%s.envFrom[%d]", at, i))
		var (
			kind, name string
			optional   *bool
		)
		switch {
		case ef.ConfigMapRef != nil:
			kind, name, optional, path = "ConfigMap", ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional, path+".configMapRef"
		case ef.SecretRef != nil:
			kind, name, optional, path = "Secret", ef.SecretRef.Name, ef.SecretRef.Optional, path+".secretRef"
		default:
			c.r.fail(path, "neither configMapRef nor secretRef")
			continue
		}
		src, ok := c.source(kind, name, optional, path)
		if !ok {
			continue
		}
		for _, k := range sortedEnv(src.Data) {
			env.set(ef.Prefix+k, src.Data[k])
		}
	}
	for i, e := range ct.Env {
		if e.Value != "" || e.ValueFrom == nil {
			env.set(e.Name, expand(e.Value, env.lookup))
			continue
		}
		if v, ok := c.valueFrom(e.ValueFrom, fmt.Sprintf("%s.env[%d].valueFrom", at, i), ct); ok {
			env.set(e.Name, v)
		}
	}
	return env
}

// source finds a ConfigMap or Secret; a missing one is an error unless
// the reference is optional (then, as in kubelet, it gives nothing).
func (c *converter) source(kind, name string, optional *bool, path string) (*EnvSource, bool) {
	ns := c.w.meta.Namespace
	for i := range c.sources {
		s := &c.sources[i]
		if s.Kind == kind && s.Name == name && (s.Namespace == "" || ns == "" || s.Namespace == ns) {
			return s, true
		}
	}
	if optional == nil || !*optional {
		flag := map[string]string{"ConfigMap": "--configmap", "Secret": "--secret"}[kind]
		c.r.fail(path, "no %s %q: add it to the manifest as a document of its own, or give its file with %s FILE", kind, name, flag)
	}
	return nil, false
}

// valueFrom is one variable's value from a ConfigMap, a Secret, the pod's
// fields (the downward API) or the container's resources; false when there
// is none (an optional reference to a missing key, or an error reported).
func (c *converter) valueFrom(vf *corev1.EnvVarSource, at string, ct *corev1.Container) (string, bool) {
	path := c.path(at)
	switch {
	case vf.ConfigMapKeyRef != nil:
		return c.keyRef("ConfigMap", vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, vf.ConfigMapKeyRef.Optional, path+".configMapKeyRef")
	case vf.SecretKeyRef != nil:
		return c.keyRef("Secret", vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, vf.SecretKeyRef.Optional, path+".secretKeyRef")
	case vf.FieldRef != nil:
		return c.fieldRef(vf.FieldRef.FieldPath, path+".fieldRef.fieldPath")
	case vf.ResourceFieldRef != nil:
		return c.resourceFieldRef(vf.ResourceFieldRef, path+".resourceFieldRef", ct)
	case vf.FileKeyRef != nil:
		c.r.fail(path+".fileKeyRef", "podsup has no volumes to read an env file from: write the value")
	default:
		c.r.fail(path, "no source: want configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef")
	}
	return "", false
}

func (c *converter) keyRef(kind, name, key string, optional *bool, path string) (string, bool) {
	src, ok := c.source(kind, name, optional, path)
	if !ok {
		return "", false
	}
	v, ok := src.Data[key]
	if !ok && (optional == nil || !*optional) {
		c.r.fail(path+".key", "%s %q has no key %q", kind, name, key)
	}
	return v, ok
}

// fieldRef is the downward API's value of a pod field, as kubelet's
// podFieldSelectorRuntimeValue gives it; a field whose value only a
// cluster knows is refused.
func (c *converter) fieldRef(field, path string) (string, bool) {
	meta := &c.w.meta
	if key, ok := subscript(field, "metadata.labels"); ok {
		return meta.Labels[key], true
	}
	if key, ok := subscript(field, "metadata.annotations"); ok {
		return meta.Annotations[key], true
	}
	switch field {
	case "metadata.name":
		return c.w.name, true
	case "metadata.namespace":
		if meta.Namespace != "" {
			return meta.Namespace, true
		}
		return "default", true // where kubectl apply puts a manifest that names none
	case "metadata.uid":
		if meta.UID == "" {
			meta.UID = types.UID(newUID()) // one for the pod, so every container sees the same
		}
		return string(meta.UID), true
	case "spec.nodeName":
		if n := c.w.pod.NodeName; n != "" {
			return n, true
		}
		if c.o.NodeName != "" {
			return c.o.NodeName, true
		}
		n, err := os.Hostname()
		if err != nil {
			c.r.fail(path, "%q: this machine has no hostname to be the node's name (%v): give one with --node-name NAME, or write the value", field, err)
			return "", false
		}
		return n, true
	case "spec.serviceAccountName":
		if n := c.w.pod.ServiceAccountName; n != "" {
			return n, true
		}
		return "default", true
	case "status.podIP", "status.podIPs":
		if c.o.PodIP != "" {
			return c.o.PodIP, true
		}
		if c.bridged() {
			c.r.fail(path, "%q: podsup gives a pod no address of its own before it starts (its sandbox gets one on podsup's bridge only then): give the address its processes are reached at with --pod-ip ADDR, or write the value", field)
		} else {
			c.r.fail(path, "%q: podsup gives a pod no address of its own (its processes use the host's network, whose address podsup-kube cannot know for the machine that runs it): give that address with --pod-ip ADDR, or write the value", field)
		}
	case "status.hostIP", "status.hostIPs":
		if c.o.HostIP != "" {
			return c.o.HostIP, true
		}
		c.r.fail(path, "%q: podsup gives a pod no address of its own, and podsup-kube cannot know the address of the machine that runs it: give that with --host-ip ADDR, or write the value", field)
	default:
		c.r.fail(path, "%q is not a field the downward API gives an env variable", field)
	}
	return "", false
}

// subscript is KEY of "prefix['KEY']".
func subscript(field, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(field, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// newUID is a random (version 4) UUID, as the API server gives a pod.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// resourceFieldRef is a container's limit or request in units of the
// divisor, rounded up, as kubelet's containerResourceRuntimeValue gives
// it. A limit the container does not set is the node's allocatable in
// kubelet, which podsup-kube cannot know for the machine that runs it.
func (c *converter) resourceFieldRef(rf *corev1.ResourceFieldSelector, path string, ct *corev1.Container) (string, bool) {
	target := ct
	if rf.ContainerName != "" && rf.ContainerName != ct.Name {
		all := append(slices.Clone(c.w.pod.InitContainers), c.w.pod.Containers...)
		i := slices.IndexFunc(all, func(x corev1.Container) bool { return x.Name == rf.ContainerName })
		if i < 0 {
			c.r.fail(path+".containerName", "the pod has no container %q", rf.ContainerName)
			return "", false
		}
		target = &all[i]
	}
	kind, name, ok := strings.Cut(rf.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		c.r.fail(path+".resource", "%q: want limits.NAME or requests.NAME", rf.Resource)
		return "", false
	}
	list := target.Resources.Limits
	if kind == "requests" {
		list = target.Resources.Requests
	}
	q, set := list[corev1.ResourceName(name)]
	if !set && kind == "requests" {
		// The API server defaults a request to the limit; with neither,
		// the request is zero.
		q, set = target.Resources.Limits[corev1.ResourceName(name)]
		if !set {
			q, set = resource.Quantity{}, true
		}
	}
	if !set {
		c.r.fail(path+".resource", "container %q sets no %s: kubelet would give the node's allocatable %s, which podsup-kube cannot know for the machine that runs it; set the limit, or write the value", target.Name, rf.Resource, name)
		return "", false
	}
	divisor := rf.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var n float64
	if name == string(corev1.ResourceCPU) {
		n = math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
	} else {
		n = math.Ceil(float64(q.Value()) / float64(divisor.Value()))
	}
	return strconv.FormatInt(int64(n), 10), true
}
