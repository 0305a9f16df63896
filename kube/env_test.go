package kube

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// valueFrom and envFrom are resolved as kubelet resolves them: from the
// ConfigMaps and Secrets of the same input or of Options.EnvSources, the
// pod's own fields and the container's resources; optional references to
// what is missing give nothing; valueFrom is never expanded, and a value
// that refers to it is.
func TestConvertResolvesValueFromAndEnvFrom(t *testing.T) {
	t.Parallel()
	manifest := `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {LEVEL: debug, MODE: "$(LEVEL)", URL: "http://db"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
data: {token: czNjcjN0}
stringData: {user: admin}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web, tier: front}
      annotations: {podsup.dev/process.app: 'critical = true'}
    spec:
      serviceAccountName: robot
      containers:
      - name: app
        command: [app, "$(TOKEN)", "$(DB_URL)"]
        envFrom:
        - configMapRef: {name: settings}
        - prefix: DB_
          configMapRef: {name: more}
        - prefix: SECRET_
          secretRef: {name: creds}
        - secretRef: {name: absent, optional: true}
        env:
        - {name: TOKEN, valueFrom: {secretKeyRef: {name: creds, key: token}}}
        - {name: USER, valueFrom: {secretKeyRef: {name: creds, key: user}}}
        - {name: MISSING, valueFrom: {configMapKeyRef: {name: settings, key: nope, optional: true}}}
        - {name: GONE, valueFrom: {configMapKeyRef: {name: nowhere, key: nope, optional: true}}}
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
        - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
        - {name: NOTE, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['podsup.dev/process.app']"}}}
        - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
        - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 100m}}}
        - {name: MEM, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
        - {name: SIDE_MEM, valueFrom: {resourceFieldRef: {containerName: side, resource: limits.memory}}}
        - {name: RAW, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
        - {name: QUOTED, value: "$(POD)/$(MODE)"}
        resources:
          limits: {cpu: 250m, memory: 64Mi}
      - name: side
        command: [side]
        resources:
          limits: {memory: 1Ki}
`
	more := `apiVersion: v1
kind: ConfigMap
metadata: {name: more}
data: {URL: "postgres://db"}
`
	srcs, err := DecodeEnvSources(strings.NewReader(more), "ConfigMap")
	if err != nil {
		t.Fatal(err)
	}
	cfg, res := convertAndParse(t, manifest, Options{EnvSources: srcs, NodeName: "node-1"})
	if len(cfg.Groups) != 1 || cfg.Groups[0].Name != "web" {
		t.Fatalf("the ConfigMap and Secret are groups, or the Deployment is not: %s", show(cfg.Groups))
	}
	if got := findingsText(res.Findings); strings.Contains(got, "envFrom") || strings.Contains(got, "ConfigMap") || strings.Contains(got, "Secret") || strings.Contains(got, "namespace") {
		t.Errorf("warnings about what was resolved:\n%s", got)
	}
	p := cfg.Groups[0].Processes[0]
	want := map[string]string{
		"LEVEL": "debug", "MODE": "$(LEVEL)", "URL": "http://db", "DB_URL": "postgres://db",
		"SECRET_token": "s3cr3t", "SECRET_user": "admin", "TOKEN": "s3cr3t", "USER": "admin",
		"POD": "web", "NS": "shop", "TIER": "front", "NOTE": "critical = true", "NODE": "node-1", "SA": "robot",
		"CPU": "3", "MEM": "64", "SIDE_MEM": "1024", "RAW": "web", "QUOTED": "web/$(LEVEL)",
	}
	for k, v := range want {
		if got, ok := p.Env[k]; !ok || got != v {
			t.Errorf("env %s = %q (%v), want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"MISSING", "GONE"} {
		if _, ok := p.Env[k]; ok {
			t.Errorf("optional %s is set: %q", k, p.Env[k])
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(p.Env["UID"]) {
		t.Errorf("UID = %q, want a UUID", p.Env["UID"])
	}
	if wantCmd := []string{"app", "s3cr3t", "postgres://db"}; !equal(p.Command, wantCmd) {
		t.Errorf("command = %q, want %q (expanded with envFrom's and valueFrom's variables)", p.Command, wantCmd)
	}
}

// What cannot be known is refused, each by its path, all in one pass.
func TestConvertRefusesUnknowableValues(t *testing.T) {
	t.Parallel()
	_, err := Convert(strings.NewReader(`apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {A: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: app
    command: [app]
    envFrom:
    - configMapRef: {name: other}
    env:
    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: K, valueFrom: {configMapKeyRef: {name: settings, key: B}}}
    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: X, valueFrom: {fieldRef: {fieldPath: spec.schedulerName}}}
`), Options{})
	var fe *FindingsError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a FindingsError", err)
	}
	for _, w := range []string{
		`Pod/p: spec.containers[0].envFrom[0].configMapRef: no ConfigMap "other": add it to the manifest as a document of its own, or give its file with --configmap FILE`,
		`Pod/p: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: "status.hostIP": podsup gives a pod no address of its own`,
		`Pod/p: spec.containers[0].env[1].valueFrom.configMapKeyRef.key: ConfigMap "settings" has no key "B"`,
		`Pod/p: spec.containers[0].env[2].valueFrom.resourceFieldRef.resource: container "app" sets no limits.cpu`,
		`Pod/p: spec.containers[0].env[3].valueFrom.fieldRef.fieldPath: "spec.schedulerName" is not a field the downward API gives`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

func TestDecodeEnvSourcesWantsThatKind(t *testing.T) {
	t.Parallel()
	if _, err := DecodeEnvSources(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), "Secret"); err == nil || !strings.Contains(err.Error(), "a ConfigMap, not a Secret") {
		t.Errorf("err = %v", err)
	}
	if _, err := DecodeEnvSources(strings.NewReader("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ndatum: {}\n"), "Secret"); err == nil || !strings.Contains(err.Error(), "datum") {
		t.Errorf("err = %v, want the unknown field", err)
	}
	if _, err := Convert(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), Options{}); err == nil || !strings.Contains(err.Error(), "holds no object") {
		t.Errorf("a ConfigMap alone: err = %v", err)
	}
}

// Every container gets HOSTNAME, the pod's hostname, as under kubelet,
// unless it sets its own; $(HOSTNAME) is not expanded (kubelet expands
// before the runtime adds it); a hostNetwork pod's is the node's, unknown
// here. Export leaves the implied one out, and export → convert → export
// is byte-identical.
func TestConvertSetsKubernetesStandardEnv(t *testing.T) {
	t.Parallel()
	cfg, _ := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: command-demo}
spec:
  containers:
  - name: a
    command: [printenv, HOSTNAME, "$(HOSTNAME)"]
  - name: b
    command: [b]
    env: [{name: HOSTNAME, value: mine}]
---
apiVersion: v1
kind: Pod
metadata: {name: p2}
spec:
  hostname: custom
  initContainers: [{name: i, command: [i]}]
  containers: [{name: c, command: [c]}]
---
apiVersion: v1
kind: Pod
metadata: {name: host}
spec:
  hostNetwork: true
  containers: [{name: c, command: [c]}]
`, Options{})
	g := cfg.Groups
	for _, c := range []struct {
		got, want string
	}{
		{g[0].Processes[0].Env["HOSTNAME"], "command-demo"},
		{g[0].Processes[1].Env["HOSTNAME"], "mine"},
		{g[1].Init[0].Env["HOSTNAME"], "custom"},
		{g[1].Processes[0].Env["HOSTNAME"], "custom"},
	} {
		if c.got != c.want {
			t.Errorf("HOSTNAME = %q, want %q", c.got, c.want)
		}
	}
	if _, ok := g[2].Processes[0].Env["HOSTNAME"]; ok {
		t.Errorf("a hostNetwork pod's HOSTNAME is set: %q", g[2].Processes[0].Env["HOSTNAME"])
	}
	if got := g[0].Processes[0].Command[2]; got != "$(HOSTNAME)" {
		t.Errorf("$(HOSTNAME) expanded to %q: kubelet does not see the runtime's variables", got)
	}
	var y1, y2 bytes.Buffer
	giveImages(cfg) // a Pod's containers need one
	if _, err := Export(&y1, cfg, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(y1.String(), "value: command-demo") || strings.Contains(y1.String(), "value: custom") {
		t.Errorf("export writes the HOSTNAME kubelet sets anyway:\n%s", y1.String())
	}
	if !strings.Contains(y1.String(), "value: mine") {
		t.Errorf("export drops a HOSTNAME of the container's own:\n%s", y1.String())
	}
	back, err := Convert(bytes.NewReader(y1.Bytes()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Export(&y2, back.Config, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if y1.String() != y2.String() {
		t.Errorf("export → convert → export changed the YAML:\n%s\n---- then ----\n%s", y1.String(), y2.String())
	}
}

// status.podIP and status.hostIP are what --pod-ip and --host-ip say;
// without them the refusal names the flag (issue 31: it said only
// "write the value").
func TestDownwardAPIAddresses(t *testing.T) {
	t.Parallel()
	const manifest = `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: a
    image: busybox
    command: [sleep, "60"]
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
`
	cfg, _ := convertAndParse(t, manifest, Options{PodIP: "10.0.0.7", HostIP: "192.0.2.1"})
	env := cfg.Groups[0].Processes[0].Env
	if env["POD_IP"] != "10.0.0.7" || env["POD_IPS"] != "10.0.0.7" || env["HOST_IP"] != "192.0.2.1" {
		t.Errorf("env = %v", env)
	}
	_, err := Convert(strings.NewReader(manifest), Options{})
	if err == nil || !strings.Contains(err.Error(), "give that address with --pod-ip ADDR") || !strings.Contains(err.Error(), "give that with --host-ip ADDR") {
		t.Errorf("without the flags: %v", err)
	}
	bridged := strings.Replace(manifest, "    env:\n", "    ports: [{containerPort: 80, hostPort: 8080}]\n    env:\n", 1)
	if _, err := Convert(strings.NewReader(bridged), Options{}); err == nil || !strings.Contains(err.Error(), "only then): give the address its processes are reached at with --pod-ip ADDR") {
		t.Errorf("a bridged pod without --pod-ip: %v", err)
	}
}

// An Indexed Job's one pod is index 0's: JOB_COMPLETION_INDEX=0, as the
// Job controller sets it (kubernetes/website's indexed-job reads it).
func TestIndexedJobCompletionIndex(t *testing.T) {
	t.Parallel()
	const job = `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  completionMode: MODE
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: a
        image: busybox
        command: [sh, -c, "echo $JOB_COMPLETION_INDEX"]
`
	cfg, res := convertAndParse(t, strings.Replace(job, "MODE", "Indexed", 1), Options{})
	if v, ok := cfg.Groups[0].Processes[0].Env["JOB_COMPLETION_INDEX"]; !ok || v != "0" {
		t.Errorf("env = %v", cfg.Groups[0].Processes[0].Env)
	}
	if got := findingsText(res.Findings); !strings.Contains(got, "note: Job/j: spec.completionMode: Indexed: podsup runs one pod") {
		t.Errorf("findings:\n%s", got)
	}
	cfg, _ = convertAndParse(t, strings.Replace(job, "MODE", "NonIndexed", 1), Options{})
	if _, ok := cfg.Groups[0].Processes[0].Env["JOB_COMPLETION_INDEX"]; ok {
		t.Errorf("a NonIndexed Job's env = %v", cfg.Groups[0].Processes[0].Env)
	}
}
