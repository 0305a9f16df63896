package kube

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
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
	// source is set, and the rest empty, for a ConfigMap or a Secret:
	// data for the workloads' env, not a workload.
	source *EnvSource
	// replicas is the workload's spec.replicas, when it has one: podsup
	// runs one copy, so only another number is worth a warning.
	replicas *int32
	// data is set too for a ConfigMap or a Secret: what the workloads'
	// configMap and secret volumes read (volumes.go).
	data *dataObject
	// readAs says how an apiVersion Kubernetes no longer serves was read.
	readAs string
	// job is set for a Job's pod template (a CronJob's too), with the
	// Job's backoffLimit and where it sits: the group's backoff_limit.
	job          bool
	backoffLimit *int32
	backoffAt    string
	// indexedAt is where an Indexed Job says so: its one pod is the
	// completion index 0's (JOB_COMPLETION_INDEX).
	indexedAt string
}

// indexed marks w as an Indexed Job's pod when mode, at path at, says so.
func indexed(w *workload, mode *batchv1.CompletionMode, at string) *workload {
	if mode != nil && *mode == batchv1.IndexedCompletion {
		w.indexedAt = at
		w.ownFields = append(w.ownFields, at)
	}
	return w
}

// jobbed is w as a Job's pod, with the Job's backoffLimit at path at.
func jobbed(w *workload, limit *int32, at string) *workload {
	w.job, w.backoffLimit, w.backoffAt = true, limit, at
	w.ownFields = append(w.ownFields, at)
	return w
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
			return &workload{kind: "ConfigMap", name: m.Name, source: &EnvSource{Kind: "ConfigMap", Name: m.Name, Namespace: m.Namespace, Data: m.Data}, data: configMapData(m)}
		}
	},
	{"v1", "Secret"}: func() (any, func(any) *workload) {
		return &corev1.Secret{}, func(o any) *workload {
			m := o.(*corev1.Secret)
			return &workload{kind: "Secret", name: m.Name, source: &EnvSource{Kind: "Secret", Name: m.Name, Namespace: m.Namespace, Data: secretData(m)}, data: secretVolumeData(m)}
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
			w := jobbed(templated("Job", d.ObjectMeta, d.Spec.Template, "spec.template.", "spec.selector"), d.Spec.BackoffLimit, "spec.backoffLimit")
			return indexed(w, d.Spec.CompletionMode, "spec.completionMode")
		}
	},
	{"batch/v1", "CronJob"}: cronJob(""),
	// batch/v1beta1's CronJob has a subset of batch/v1's fields: the
	// manifests written for Kubernetes before 1.25 run as they are.
	{"batch/v1beta1", "CronJob"}: cronJob("batch/v1beta1 CronJob is no longer served (Kubernetes 1.25 removed it): read as batch/v1, which has the same fields; write apiVersion: batch/v1"),
}

func cronJob(readAs string) func() (any, func(any) *workload) {
	return func() (any, func(any) *workload) {
		return &batchv1.CronJob{}, func(o any) *workload {
			d := o.(*batchv1.CronJob)
			w := templated("CronJob", d.ObjectMeta, d.Spec.JobTemplate.Spec.Template, "spec.jobTemplate.spec.template.", "spec.jobTemplate.spec.selector")
			w.why = map[string]string{"spec.schedule": "podsup has no schedule: the group runs the job once, when podsup starts it"}
			w.readAs = readAs
			return indexed(jobbed(w, d.Spec.JobTemplate.Spec.BackoffLimit, "spec.jobTemplate.spec.backoffLimit"), d.Spec.JobTemplate.Spec.CompletionMode, "spec.jobTemplate.spec.completionMode")
		}
	}
}

// skippedKinds are the objects a manifest holds beside its workloads
// that run no process: skipped with a note, as podman's kube play does,
// not refused, so that a file written for kubectl apply converts whole.
var skippedKinds = map[string]string{
	"Service":                 "podsup's processes listen on the host's network (or their sandbox's): there is no Service in front of them",
	"PersistentVolumeClaim":   "podsup has no volumes: processes see the host's (or the rootfs') files",
	"PersistentVolume":        "podsup has no volumes: processes see the host's (or the rootfs') files",
	"StorageClass":            "podsup provisions no storage",
	"PodDisruptionBudget":     "podsup runs one node and evicts nothing",
	"HorizontalPodAutoscaler": "podsup runs one copy of each pod",
	"ServiceAccount":          "podsup has no API server to authenticate to",
	"Role":                    "podsup has no API server to authorize",
	"RoleBinding":             "podsup has no API server to authorize",
	"ClusterRole":             "podsup has no API server to authorize",
	"ClusterRoleBinding":      "podsup has no API server to authorize",
	"Namespace":               "podsup's groups live in one configuration, not in namespaces",
	"NetworkPolicy":           "podsup routes no traffic between pods",
	"Ingress":                 "podsup routes no traffic to its processes",
	"ResourceQuota":           "podsup's limits are each group's sandbox resources",
	"LimitRange":              "podsup's limits are each group's sandbox resources",
	"PriorityClass":           "podsup schedules nothing",
}

// templated is a workload whose pod is a template: the group is named
// after the workload, and one copy of the pod runs (podsup is one node).
func templated(kind string, meta metav1.ObjectMeta, t corev1.PodTemplateSpec, prefix string, own ...string) *workload {
	m := t.ObjectMeta
	m.Name = meta.Name
	if m.Namespace == "" { // the pods are in the workload's
		m.Namespace = meta.Namespace
	}
	return &workload{kind: kind, name: meta.Name, meta: m, pod: t.Spec, prefix: prefix, ownFields: append(own, "metadata.name", "metadata.namespace", "metadata.labels", prefix+"metadata.labels"),
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
// Each document of a kind in skippedKinds is a note naming it.
func decodeAll(src io.Reader) ([]*workload, []Finding, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(src))
	var out []*workload
	var skipped []Finding
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading document %d: %w", n, err)
		}
		w, skip, err := decodeOne(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", n, err)
		}
		if skip != nil {
			skip.Path = fmt.Sprintf("document %d", n)
			skipped = append(skipped, *skip)
		}
		if w != nil {
			out = append(out, w)
		}
	}
	if !slices.ContainsFunc(out, func(w *workload) bool { return w.source == nil }) {
		return nil, nil, errors.New("the manifest holds no object podsup runs: want a Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob")
	}
	return out, skipped, nil
}

// secretData is a Secret's data as the API server stores it: data
// (base64 in the manifest) with stringData written over it.
func secretData(m *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range m.Data {
		out[k] = string(v)
	}
	maps.Copy(out, m.StringData)
	return out
}

// DecodeEnvSources reads the ConfigMaps (kind "ConfigMap") or Secrets
// (kind "Secret") of a YAML stream, for Options.EnvSources: every
// document must be one.
func DecodeEnvSources(src io.Reader, kind string) ([]EnvSource, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(src))
	var out []EnvSource
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", n, err)
		}
		w, skip, err := decodeOne(doc)
		switch {
		case err != nil:
		case skip != nil:
			err = fmt.Errorf("%s, not a %s", skip.Object, kind)
		case w != nil && (w.source == nil || w.kind != kind):
			err = fmt.Errorf("a %s, not a %s", w.kind, kind)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if w != nil {
			out = append(out, *w.source)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s in it", kind)
	}
	return out, nil
}

// decodeOne is a document's workload, or the note that skips it.
func decodeOne(doc []byte) (*workload, *Finding, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return nil, nil, nil
	}
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &head); err != nil {
		return nil, nil, fmt.Errorf("parsing YAML: %w", err)
	}
	tm := head.TypeMeta
	if why, ok := skippedKinds[tm.Kind]; ok {
		return nil, &Finding{Object: tm.Kind + "/" + head.Metadata.Name, Msg: "skipped: " + why, Note: true}, nil
	}
	mk, ok := kinds[[2]string{tm.APIVersion, tm.Kind}]
	if !ok {
		return nil, nil, fmt.Errorf("apiVersion %q kind %q is not something podsup runs: want a Pod, ConfigMap or Secret (v1), a Deployment, StatefulSet, DaemonSet or ReplicaSet (apps/v1), or a Job or CronJob (batch/v1)", tm.APIVersion, tm.Kind)
	}
	obj, extract := mk()
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", tm.Kind, err)
	}
	if len(strict) > 0 {
		return nil, nil, fmt.Errorf("decoding %s: %w", tm.Kind, errors.Join(strict...))
	}
	w := extract(obj)
	w.object = obj
	if w.name == "" {
		return nil, nil, fmt.Errorf("%s has no metadata.name: the group is named after it", tm.Kind)
	}
	return w, nil, nil
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
	"spec.containers[].imagePullPolicy":                 "podsup pulls no images: ignored",
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
