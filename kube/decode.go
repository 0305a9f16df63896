package kube

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// workload is one object of a manifest reduced to what becomes a group:
// its name and its pod template, plus the object itself for the walk that
// reports every field the table does not map.
type workload struct {
	kind, name string
	meta       metav1.ObjectMeta // the pod's (a template's) metadata
	pod        corev1.PodSpec
	// prefix is where the pod sits in the object: "" for a Pod,
	// "spec.template." for a Deployment.
	prefix string
	object any
	// ownFields are the object's own fields outside the pod that mean
	// nothing to podsup but are part of a well-formed object (the
	// selector), and why reports fields with a message of their own.
	ownFields []string
	why       map[string]string
	// replicas is the workload's spec.replicas, when it has one: podsup
	// runs one copy, so only another number is worth a warning.
	replicas *int32
	// data is set, and the rest empty, for a ConfigMap or a Secret: what
	// the workloads' configMap and secret volumes read, not a workload.
	data *dataObject
}

func (w *workload) label() string { return w.kind + "/" + w.name }

// kinds are the objects the bridge reads, by apiVersion and kind.
var kinds = map[[2]string]func() (any, func(obj any) *workload){
	{"v1", "Pod"}: func() (any, func(any) *workload) {
		return &corev1.Pod{}, func(o any) *workload {
			p := o.(*corev1.Pod)
			return &workload{kind: "Pod", name: p.Name, meta: p.ObjectMeta, pod: p.Spec}
		}
	},
	{"v1", "ConfigMap"}: func() (any, func(any) *workload) {
		return &corev1.ConfigMap{}, func(o any) *workload {
			m := o.(*corev1.ConfigMap)
			return &workload{kind: "ConfigMap", name: m.Name, data: configMapData(m)}
		}
	},
	{"v1", "Secret"}: func() (any, func(any) *workload) {
		return &corev1.Secret{}, func(o any) *workload {
			m := o.(*corev1.Secret)
			return &workload{kind: "Secret", name: m.Name, data: secretData(m)}
		}
	},
	{"apps/v1", "Deployment"}: func() (any, func(any) *workload) {
		return &appsv1.Deployment{}, func(o any) *workload {
			d := o.(*appsv1.Deployment)
			return replicated(templated("Deployment", d.ObjectMeta, d.Spec.Template, "spec.template.", "spec.selector"), d.Spec.Replicas)
		}
	},
	{"apps/v1", "StatefulSet"}: func() (any, func(any) *workload) {
		return &appsv1.StatefulSet{}, func(o any) *workload {
			d := o.(*appsv1.StatefulSet)
			// serviceName names the headless Service that gives the pods
			// their DNS names: nothing to do outside a cluster.
			return replicated(templated("StatefulSet", d.ObjectMeta, d.Spec.Template, "spec.template.", "spec.selector", "spec.serviceName"), d.Spec.Replicas)
		}
	},
	{"apps/v1", "DaemonSet"}: func() (any, func(any) *workload) {
		return &appsv1.DaemonSet{}, func(o any) *workload {
			d := o.(*appsv1.DaemonSet)
			return templated("DaemonSet", d.ObjectMeta, d.Spec.Template, "spec.template.", "spec.selector")
		}
	},
	{"apps/v1", "ReplicaSet"}: func() (any, func(any) *workload) {
		return &appsv1.ReplicaSet{}, func(o any) *workload {
			d := o.(*appsv1.ReplicaSet)
			return replicated(templated("ReplicaSet", d.ObjectMeta, d.Spec.Template, "spec.template.", "spec.selector"), d.Spec.Replicas)
		}
	},
	{"batch/v1", "Job"}: func() (any, func(any) *workload) {
		return &batchv1.Job{}, func(o any) *workload {
			d := o.(*batchv1.Job)
			return templated("Job", d.ObjectMeta, d.Spec.Template, "spec.template.", "spec.selector")
		}
	},
	{"batch/v1", "CronJob"}: func() (any, func(any) *workload) {
		return &batchv1.CronJob{}, func(o any) *workload {
			d := o.(*batchv1.CronJob)
			w := templated("CronJob", d.ObjectMeta, d.Spec.JobTemplate.Spec.Template, "spec.jobTemplate.spec.template.", "spec.jobTemplate.spec.selector")
			w.why = map[string]string{"spec.schedule": "podsup has no schedule: the group runs the job once, when podsup starts it"}
			return w
		}
	},
}

// templated is a workload whose pod is a template: the group is named
// after the workload, and one copy of the pod runs (podsup is one node).
func templated(kind string, meta metav1.ObjectMeta, t corev1.PodTemplateSpec, prefix string, own ...string) *workload {
	m := t.ObjectMeta
	m.Name = meta.Name
	return &workload{kind: kind, name: meta.Name, meta: m, pod: t.Spec, prefix: prefix, ownFields: append(own, "metadata.name", "metadata.labels", prefix+"metadata.labels"),
		why: map[string]string{
			"spec.replicas":          "podsup runs one copy of the pod",
			"metadata.annotations":   "the workload's own annotations are not read: podsup.dev/ annotations belong on the pod template",
			prefix + "metadata.name": "the group is named after the workload",
		}}
}

// replicated is w with a spec.replicas that the walk leaves to
// unmappedFields.
func replicated(w *workload, n *int32) *workload {
	w.replicas = n
	w.ownFields = append(w.ownFields, "spec.replicas")
	return w
}

// decodeAll splits a multi-document YAML stream and decodes each document
// strictly into its Kubernetes type: an unknown or duplicated field is an
// error naming its path. Empty documents are skipped.
func decodeAll(src io.Reader) ([]*workload, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(src))
	var out []*workload
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", n, err)
		}
		w, err := decodeOne(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if w != nil {
			out = append(out, w)
		}
	}
	if !slices.ContainsFunc(out, func(w *workload) bool { return w.data == nil }) {
		return nil, errors.New("the manifest holds no object: want a Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob")
	}
	return out, nil
}

func decodeOne(doc []byte) (*workload, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	mk, ok := kinds[[2]string{tm.APIVersion, tm.Kind}]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q is not something podsup runs: want a Pod, or a ConfigMap or Secret for its volumes (v1), a Deployment, StatefulSet, DaemonSet or ReplicaSet (apps/v1), or a Job or CronJob (batch/v1)", tm.APIVersion, tm.Kind)
	}
	obj, extract := mk()
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", tm.Kind, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("decoding %s: %w", tm.Kind, errors.Join(strict...))
	}
	w := extract(obj)
	w.object = obj
	if w.name == "" {
		return nil, fmt.Errorf("%s has no metadata.name: the group is named after it", tm.Kind)
	}
	return w, nil
}

// unmappedFields reports every field of w's object that the mapping table
// does not list.
func (w *workload) unmappedFields(r *reporter) {
	patterns := append(mappedPodPatterns(w.prefix), "apiVersion", "kind")
	patterns = append(patterns, w.ownFields...)
	if w.replicas != nil && *w.replicas != 1 {
		r.warn("spec.replicas", "podsup runs one copy of the pod, not %d: ignored", *w.replicas)
	}
	t := newFieldTable(patterns, w.why)
	t.unmapped(reflect.ValueOf(w.object), func(path, pattern string) {
		msg := "not supported by podsup: ignored"
		if why, ok := w.why[pattern]; ok {
			msg = why + ": ignored"
		} else if why, ok := fieldWhy[trimPrefix(pattern, w.prefix)]; ok {
			msg = why
		}
		r.warn(path, "%s", msg)
	})
}

func trimPrefix(s, prefix string) string {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

// fieldWhy says more than "not supported" for fields users often write.
var fieldWhy = map[string]string{
	"spec.containers[].ports":                           "podsup publishes no ports: processes listen on the host's network: ignored",
	"spec.containers[].imagePullPolicy":                 "podsup pulls no images: ignored",
	"spec.hostNetwork":                                  "podsup's processes always use the host's network: ignored",
	"spec.containers[].envFrom":                         "podsup has no ConfigMaps or Secrets: write the variables in env: ignored",
	"spec.containers[].lifecycle.postStart.tcpSocket":   "kubelet never runs a tcpSocket hook (deprecated): ignored",
	"spec.containers[].lifecycle.preStop.tcpSocket":     "kubelet never runs a tcpSocket hook (deprecated): ignored",
	"spec.securityContext.seLinuxOptions":               "podsup sets no SELinux label: ignored",
	"spec.securityContext.appArmorProfile":              "podsup loads no AppArmor profile: ignored",
	"spec.securityContext.windowsOptions":               "podsup runs Linux processes: ignored",
	"spec.securityContext.sysctls":                      "podsup sets no sysctls for a group: ignored",
	"spec.volumes[].persistentVolumeClaim":              "podsup has no PersistentVolumeClaims: use a host_path or empty_dir volume: ignored",
	"spec.volumes[].projected":                          "podsup has no projected volumes (service account tokens, downward API): ignored",
	"spec.volumes[].downwardAPI":                        "podsup has no downward API: write the values in a config volume: ignored",
	"spec.volumes[].ephemeral":                          "podsup provisions no storage: use an empty_dir volume: ignored",
	"spec.volumes[].csi":                                "podsup has no CSI drivers: ignored",
	"spec.volumes[].nfs":                                "podsup mounts no NFS: mount it on the host and use a host_path volume: ignored",
	"spec.volumes[].image":                              "podsup runs no images: ignored",
	"spec.containers[].securityContext.seLinuxOptions":  "podsup sets no SELinux label: ignored",
	"spec.containers[].securityContext.appArmorProfile": "podsup loads no AppArmor profile: ignored",
	"spec.containers[].securityContext.windowsOptions":  "podsup runs Linux processes: ignored",
}
