package kube

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// frontier lists, from the Kubernetes type t itself, every field that the
// mapping table neither maps nor descends into: the fields the walk must
// report. It walks types, not values, so a field a newer k8s.io/api adds
// is in the list without anyone writing it down.
func frontier(t reflect.Type, table *fieldTable) []string {
	var out []string
	var visit func(t reflect.Type, pattern string)
	visit = func(t reflect.Type, pattern string) {
		if table.mapped[pattern] {
			return
		}
		if pattern != "" && !table.inner[pattern] {
			out = append(out, pattern)
			return
		}
		switch t.Kind() {
		case reflect.Pointer:
			visit(t.Elem(), pattern)
		case reflect.Slice:
			visit(t.Elem(), pattern+"[]")
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				name, inline := jsonName(t.Field(i))
				switch {
				case inline:
					visit(t.Field(i).Type, pattern)
				case name != "":
					visit(t.Field(i).Type, join(pattern, name))
				}
			}
		}
	}
	visit(t, "")
	return out
}

// setAt sets the field that pattern names in v (a pointer to an object) to
// a value that is not empty, creating what leads to it; list elements are
// the first. It returns the concrete path.
func setAt(t *testing.T, v reflect.Value, pattern string) string {
	t.Helper()
	var path []string
	for _, seg := range strings.Split(pattern, ".") {
		name, list := strings.CutSuffix(seg, "[]")
		v = reflect.Indirect(alloc(v))
		f, ok := fieldByJSON(v, name)
		if !ok {
			t.Fatalf("%s: no field %q in %s", pattern, name, v.Type())
		}
		v = f
		if list {
			v = alloc(v)
			if v.Len() == 0 {
				v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
			}
			v = v.Index(0)
			seg = name + "[0]"
		}
		path = append(path, seg)
	}
	fill(t, v, 0)
	return strings.Join(path, ".")
}

func alloc(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return v.Elem()
	}
	return v
}

func fieldByJSON(v reflect.Value, name string) (reflect.Value, bool) {
	for i := 0; i < v.NumField(); i++ {
		n, inline := jsonName(v.Type().Field(i))
		if inline {
			if f, ok := fieldByJSON(reflect.Indirect(alloc(v.Field(i))), name); ok {
				return f, true
			}
		}
		if n == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// fill makes v hold something a manifest could say.
func fill(t *testing.T, v reflect.Value, depth int) {
	if depth > 30 {
		t.Fatalf("cannot fill %s", v.Type())
	}
	switch v.Type() {
	case quantityType:
		v.Set(reflect.ValueOf(resource.MustParse("1")))
		return
	case timeType:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1700000000, 0))))
		return
	case intOrStrType:
		v.Set(reflect.ValueOf(intstr.FromInt32(1)))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		fill(t, alloc(v), depth+1)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		fill(t, e, depth+1)
		v.Set(reflect.Append(v, e))
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		k.SetString("x")
		fill(t, e, depth+1)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		if v.NumField() == 0 {
			// A marker, set by its presence through a pointer ({} in
			// YAML): k8s.io/api 0.37's WorkloadPodGroupBasicSchedulingPolicy.
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if name, _ := jsonName(v.Type().Field(i)); name != "" {
				fill(t, v.Field(i), depth+1)
				return
			}
		}
		t.Fatalf("cannot fill %s", v.Type())
	default:
		t.Fatalf("cannot fill %s (%s)", v.Type(), v.Kind())
	}
}

const basePod = `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
  - {name: i, command: ["true"]}
  containers:
  - {name: c, command: ["sleep", "1"]}
`

// every unmapped field of the type, set in an otherwise convertible
// object, is reported with its path, as a warning or an error.
func checkEveryUnmappedFieldIsReported(t *testing.T, base string, obj any, prefix string, own []string) {
	table := newFieldTable(append(append(mappedPodPatterns(prefix), "apiVersion", "kind"), own...), nil)
	fields := frontier(reflect.TypeOf(obj).Elem(), table)
	if len(fields) < 80 {
		t.Fatalf("only %d unmapped fields found in %T: the type walk is broken", len(fields), obj)
	}
	for _, pattern := range fields {
		if err := yaml.Unmarshal([]byte(base), obj); err != nil {
			t.Fatal(err)
		}
		o := reflect.New(reflect.TypeOf(obj).Elem())
		o.Elem().Set(reflect.ValueOf(obj).Elem())
		path := setAt(t, o, pattern)
		src, err := yaml.Marshal(o.Interface())
		if err != nil {
			t.Fatal(err)
		}
		res, err := Convert(strings.NewReader(string(src)), Options{})
		var got string
		if err != nil {
			got = err.Error()
		} else {
			got = findingsText(res.Findings)
		}
		if !strings.Contains(got, ": "+path+": ") && !strings.Contains(got, ": "+path+"[") && !strings.Contains(got, ": "+path+".") {
			t.Errorf("setting %s is not reported; findings:\n%s", path, got)
		}
		reflect.ValueOf(obj).Elem().SetZero()
	}
	t.Logf("%d unmapped fields of %T, each reported", len(fields), obj)
}

func TestEveryUnmappedPodFieldIsReported(t *testing.T) {
	t.Parallel()
	checkEveryUnmappedFieldIsReported(t, basePod, &corev1.Pod{}, "", nil)
}

// The same for every workload kind: the pod template's fields, and the
// workload's own fields outside it, each reported or listed as ignored
// on purpose (the workload's ownFields, see templated).
func TestEveryUnmappedWorkloadFieldIsReported(t *testing.T) {
	const template = `
    metadata: {labels: {app: w}}
    spec:
      initContainers:
      - {name: i, command: ["true"]}
      containers:
      - {name: c, command: ["sleep", "1"]}
`
	for _, c := range []struct{ apiVersion, kind, spec string }{
		{"apps/v1", "Deployment", "  selector: {matchLabels: {app: w}}\n  template:"},
		{"apps/v1", "StatefulSet", "  selector: {matchLabels: {app: w}}\n  serviceName: w\n  template:"},
		{"apps/v1", "DaemonSet", "  selector: {matchLabels: {app: w}}\n  template:"},
		{"apps/v1", "ReplicaSet", "  selector: {matchLabels: {app: w}}\n  template:"},
		{"batch/v1", "Job", "  template:"},
		{"batch/v1", "CronJob", "  jobTemplate:\n    spec:\n      template:"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			tmpl := template
			if c.kind == "CronJob" { // two levels deeper
				tmpl = strings.ReplaceAll(template, "\n    ", "\n        ")
			}
			base := "apiVersion: " + c.apiVersion + "\nkind: " + c.kind + "\nmetadata: {name: w}\nspec:\n" + c.spec + tmpl
			mk, ok := kinds[[2]string{c.apiVersion, c.kind}]
			if !ok {
				t.Fatalf("the bridge does not read %s", c.kind)
			}
			obj, extract := mk()
			if err := yaml.UnmarshalStrict([]byte(base), obj); err != nil {
				t.Fatalf("base manifest: %v\n%s", err, base)
			}
			w := extract(obj)
			if _, err := Convert(strings.NewReader(base), Options{Strict: true}); err != nil {
				t.Fatalf("the base %s does not convert cleanly: %v\n%s", c.kind, err, base)
			}
			fresh, _ := mk()
			checkEveryUnmappedFieldIsReported(t, base, fresh, w.prefix, w.ownFields)
		})
	}
}

// A workload's own fields that the walk leaves alone are few, and each
// has its reason in templated's doc or its kind's entry: selectors and
// labels are Kubernetes' controllers' business, a StatefulSet's
// serviceName names a Service, spec.replicas and metadata.namespace (the
// downward API's) are read.
func TestWorkloadsIgnoreOnlyTheirListedFields(t *testing.T) {
	allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true, "metadata.labels": true, "spec.selector": true,
		"spec.serviceName": true, "spec.replicas": true, "spec.jobTemplate.spec.selector": true,
		"spec.backoffLimit": true, "spec.jobTemplate.spec.backoffLimit": true} // read: the group's backoff_limit
	for key, mk := range kinds {
		obj, extract := mk()
		w := extract(obj)
		for _, f := range w.ownFields {
			if !allowed[f] && f != w.prefix+"metadata.labels" {
				t.Errorf("%s ignores %s without a reason", key[1], f)
			}
		}
	}
}
