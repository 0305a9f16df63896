package kube

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The mapping table: the pod fields the converter reads, as patterns
// relative to a pod (a list index is written "[]"). Every other field that
// a manifest sets is reported by unmapped with its path, so that a field
// podsup cannot honour is never dropped in silence, including the fields
// a newer k8s.io/api adds. Fields listed as ignored are read by nobody on
// purpose: labels and selectors only mean something to Kubernetes'
// controllers.
var (
	podFields = []string{
		"metadata.name", "metadata.annotations",
		// Only the downward API reads it (metadata.namespace).
		"metadata.namespace",
		"spec.restartPolicy", "spec.terminationGracePeriodSeconds",
		"spec.hostname", "spec.shareProcessNamespace",
		// hostNetwork: true keeps the host's network; a pod with a
		// hostPort otherwise gets a bridge (converter.network).
		"spec.hostNetwork",
		"spec.securityContext.runAsUser", "spec.securityContext.runAsGroup",
		"spec.securityContext.runAsNonRoot", "spec.securityContext.supplementalGroups",
		"spec.securityContext.seccompProfile.type", "spec.securityContext.seccompProfile.localhostProfile",
		"spec.hostUsers",
		"spec.resources.limits", "spec.resources.requests",
	}
	containerFields = []string{
		"name", "image", "command", "args",
		"env[].name", "env[].value", "env[].valueFrom",
		"envFrom[].prefix", "envFrom[].configMapRef", "envFrom[].secretRef",
		"workingDir", "restartPolicy",
		"ports[].name", "ports[].containerPort", "ports[].hostPort", "ports[].hostIP", "ports[].protocol",
		"lifecycle.stopSignal",
		"resources.limits", "resources.requests",
		"securityContext.runAsUser", "securityContext.runAsGroup",
		"securityContext.runAsNonRoot", "securityContext.privileged",
		"securityContext.capabilities.add", "securityContext.capabilities.drop",
		"securityContext.allowPrivilegeEscalation", "securityContext.readOnlyRootFilesystem",
		"securityContext.seccompProfile.type", "securityContext.seccompProfile.localhostProfile",
		"securityContext.procMount",
	}
	probeFields = []string{
		"initialDelaySeconds", "periodSeconds", "timeoutSeconds",
		"successThreshold", "failureThreshold", "terminationGracePeriodSeconds",
		"grpc",
	}
	handlerFields = []string{
		"exec.command",
		"httpGet.path", "httpGet.port", "httpGet.host", "httpGet.scheme",
		"httpGet.httpHeaders[].name", "httpGet.httpHeaders[].value",
		"httpGet.protocol",
	}
	ignoredFields = []string{"metadata.labels"}
)

// mappedPodPatterns returns the table rooted at prefix ("" for a Pod,
// "spec.template." for a Deployment's template).
func mappedPodPatterns(prefix string) []string {
	var out []string
	for _, f := range slices.Concat(podFields, volumePodFields, ignoredFields) {
		out = append(out, prefix+f)
	}
	for _, list := range []string{"spec.containers[].", "spec.initContainers[]."} {
		c := prefix + list
		for _, f := range slices.Concat(containerFields, volumeContainerFields) {
			out = append(out, c+f)
		}
		for _, probe := range []string{"startupProbe.", "livenessProbe.", "readinessProbe."} {
			for _, f := range probeFields {
				out = append(out, c+probe+f)
			}
			for _, f := range handlerFields {
				out = append(out, c+probe+f)
			}
			out = append(out, c+probe+"tcpSocket.port", c+probe+"tcpSocket.host")
		}
		for _, hook := range []string{"lifecycle.postStart.", "lifecycle.preStop."} {
			for _, f := range handlerFields {
				out = append(out, c+hook+f)
			}
			out = append(out, c+hook+"sleep.seconds")
		}
	}
	return out
}

// fieldTable is a set of mapped patterns and of their prefixes, which the
// walk descends into.
type fieldTable struct {
	mapped, inner map[string]bool
	// why explains some unmapped fields better than "not supported".
	why map[string]string
}

func newFieldTable(patterns []string, why map[string]string) *fieldTable {
	t := &fieldTable{mapped: map[string]bool{}, inner: map[string]bool{}, why: why}
	for _, p := range patterns {
		t.mapped[p] = true
		for i := range p {
			if p[i] == '.' {
				t.inner[p[:i]] = true
			}
			if p[i] == '[' {
				t.inner[p[:i]] = true
				t.inner[p[:i+2]] = true
			}
		}
	}
	return t
}

var (
	quantityType   = reflect.TypeFor[resource.Quantity]()
	timeType       = reflect.TypeFor[metav1.Time]()
	intOrStrType   = reflect.TypeFor[intstr.IntOrString]()
	leafStructType = map[reflect.Type]bool{quantityType: true, timeType: true, intOrStrType: true}
)

// unmapped walks v (a decoded object) and calls report for every field
// that is set and that the table neither maps nor leads to.
func (t *fieldTable) unmapped(v reflect.Value, report func(path, pattern string)) {
	t.walk(v, "", "", report)
}

func (t *fieldTable) walk(v reflect.Value, path, pattern string, report func(path, pattern string)) {
	if t.mapped[pattern] {
		return
	}
	if pattern != "" && !t.inner[pattern] {
		if !isEmpty(v) {
			report(path, pattern)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			t.walk(v.Elem(), path, pattern, report)
		}
	case reflect.Struct:
		if leafStructType[v.Type()] {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			name, inline := jsonName(v.Type().Field(i))
			if name == "" && !inline {
				continue
			}
			p, pat := path, pattern
			if !inline {
				p, pat = join(path, name), join(pattern, name)
			}
			t.walk(v.Field(i), p, pat, report)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			t.walk(v.Index(i), path+"["+strconv.Itoa(i)+"]", pattern+"[]", report)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// jsonName is a struct field's name in YAML, and whether its fields are
// inlined into the parent (TypeMeta, ObjectMeta's embedding).
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" {
		return "", false
	}
	if name == "" && (strings.Contains(opts, "inline") || f.Anonymous) {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// isEmpty reports whether a field was left out of the manifest: decoding
// leaves an absent field at its zero value, and an empty list or map is as
// good as absent.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}
