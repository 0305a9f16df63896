package kube

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
)

// convertAndParse converts a manifest, writes the HCL and reads it back
// with podsup's own loader: what podsup validate and podsup up would see.
func convertAndParse(t *testing.T, manifest string, o Options) (*spec.Config, *Result) {
	t.Helper()
	res, err := Convert(strings.NewReader(manifest), o)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	var hcl bytes.Buffer
	if err := WriteHCL(&hcl, res, "test.yaml"); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(hcl.Bytes(), "converted.hcl")
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			var b bytes.Buffer
			_ = ce.WriteText(&b, false)
			t.Fatalf("the converted HCL does not parse:\n%s\n%s", hcl.String(), b.String())
		}
		t.Fatal(err)
	}
	return cfg, res
}

// The manifests are written after the Kubernetes documentation's
// examples ("Configure Liveness, Readiness and Startup Probes", "Attach
// Handlers to Container Lifecycle Events", "Init Containers").
var manifests = []struct {
	name, yaml string
	check      func(t *testing.T, cfg *spec.Config)
}{
	{"exec liveness", `
apiVersion: v1
kind: Pod
metadata:
  name: liveness-exec
spec:
  containers:
  - name: liveness
    image: registry.k8s.io/busybox
    # The documentation leaves the command to busybox's (empty)
    # entrypoint and passes it as args; podsup needs it in command.
    command: ["/bin/sh", "-c"]
    args: ["touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"]
    livenessProbe:
      exec:
        command: ["cat", "/tmp/healthy"]
      initialDelaySeconds: 5
      periodSeconds: 5
`, nil},
	{"http liveness", `
apiVersion: v1
kind: Pod
metadata:
  name: liveness-http
spec:
  containers:
  - name: liveness
    image: registry.k8s.io/e2e-test-images/agnhost:2.40
    command: ["/agnhost"]
    args: ["liveness"]
    ports:
    - name: liveness-port
      containerPort: 8080
    livenessProbe:
      httpGet:
        path: /healthz
        port: liveness-port
        httpHeaders:
        - name: Custom-Header
          value: Awesome
      initialDelaySeconds: 3
      periodSeconds: 3
      timeoutSeconds: 2
      successThreshold: 1
      failureThreshold: 4
      terminationGracePeriodSeconds: 7
`, func(t *testing.T, cfg *spec.Config) {
		p := cfg.Groups[0].Processes[0]
		want := spec.Probe{
			Handler:      spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: 8080, Path: "/healthz", Headers: map[string]string{"Custom-Header": "Awesome"}}},
			InitialDelay: 3 * time.Second, Period: 3 * time.Second, Timeout: 2 * time.Second,
			SuccessThreshold: 1, FailureThreshold: 4, TerminationGracePeriod: spec.Durp(7 * time.Second),
		}
		if !equal(p.LivenessProbe, &want) {
			t.Errorf("liveness probe = %s, want %s", show(p.LivenessProbe), show(&want))
		}
		if strings.Join(p.Command, " ") != "/agnhost liveness" {
			t.Errorf("command = %q, want command then args", p.Command)
		}
	}},
	{"startup probe", `
apiVersion: v1
kind: Pod
metadata:
  name: startup
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    command: ["sleep", "600"]
    startupProbe:
      tcpSocket:
        port: 8080
      failureThreshold: 30
      periodSeconds: 10
    readinessProbe:
      tcpSocket:
        host: 127.0.0.1
        port: 8080
`, func(t *testing.T, cfg *spec.Config) {
		g := cfg.Groups[0]
		if g.RestartPolicy != spec.RestartOnFailure || g.Grace() != 3*time.Second {
			t.Errorf("restart policy %q grace %v, want on-failure 3s", g.RestartPolicy, g.Grace())
		}
		sp := g.Processes[0].StartupProbe
		if sp == nil || sp.TCPSocket == nil || sp.TCPSocket.Port != 8080 || sp.FailureThreshold != 30 || sp.Period != 10*time.Second {
			t.Errorf("startup probe = %s", show(sp))
		}
	}},
	{"lifecycle hooks", `
apiVersion: v1
kind: Pod
metadata:
  name: lifecycle-demo
spec:
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
  containers:
  - name: lifecycle-demo-container
    image: nginx
    command: ["nginx", "-g", "daemon off;"]
    workingDir: /srv
    env:
    - name: A
      value: one
    - name: A
      value: two
    securityContext:
      runAsUser: 1001
    lifecycle:
      postStart:
        exec:
          command: ["/bin/sh", "-c", "echo Hello from the postStart handler > /usr/share/message"]
      preStop:
        sleep:
          seconds: 2
      stopSignal: SIGQUIT
`, func(t *testing.T, cfg *spec.Config) {
		p := cfg.Groups[0].Processes[0]
		if p.PostStart == nil || p.PostStart.Exec == nil || p.PreStop == nil || p.PreStop.Sleep == nil || p.PreStop.Sleep.Duration != 2*time.Second {
			t.Errorf("hooks = %s, %s", show(p.PostStart), show(p.PreStop))
		}
		if p.StopSignal.String() != "quit" || p.User != "1001" || p.Group != "1000" || p.WorkingDir != "/srv" || p.Env["A"] != "two" {
			t.Errorf("process = %s", show(p))
		}
	}},
	{"init containers", `
apiVersion: v1
kind: Pod
metadata:
  name: myapp-pod
spec:
  containers:
  - name: myapp-container
    image: busybox:1.28
    command: ['sh', '-c', 'echo The app is running! && sleep 3600']
  initContainers:
  - name: init-myservice
    image: busybox:1.28
    command: ['sh', '-c', "until nslookup myservice; do echo waiting for myservice; sleep 2; done"]
  - name: init-mydb
    image: busybox:1.28
    command: ['sh', '-c', "until nslookup mydb; do echo waiting for mydb; sleep 2; done"]
`, func(t *testing.T, cfg *spec.Config) {
		g := cfg.Groups[0]
		if len(g.Init) != 2 || g.Init[0].Name != "init-myservice" || g.Init[1].Name != "init-mydb" {
			t.Errorf("init = %s", show(g.Init))
		}
	}},
	{"sidecar", `
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  restartPolicy: Never
  initContainers:
  - name: migrate
    command: [sh, -c, "exit 0"]
  - name: shipper
    command: [sh, -c, "tail -F /var/log/app.log"]
    restartPolicy: Always
    startupProbe:
      exec: {command: [test, -e, /var/log/app.log]}
    readinessProbe:
      exec: {command: ["true"]}
  containers:
  - name: job
    command: [sh, -c, "echo done >> /var/log/app.log"]
`, func(t *testing.T, cfg *spec.Config) {
		g := cfg.Groups[0]
		if len(g.Init) != 2 || g.Init[0].RestartPolicy != "" || g.Init[1].RestartPolicy != spec.RestartAlways {
			t.Fatalf("init = %s", show(g.Init))
		}
		if !spec.IsSidecar(&g.Init[1]) || g.Init[1].StartupProbe == nil || g.Init[1].ReadinessProbe == nil {
			t.Errorf("O1: the restartable init container is not a sidecar with its probes: %s", show(g.Init[1]))
		}
		if err := g.Validate(); err != nil {
			t.Errorf("the converted sidecar does not validate: %v", err)
		}
	}},
	{"deployment", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        command: ["nginx", "-g", "daemon off;"]
        resources:
          limits:
            memory: 64Mi
            cpu: 250m
`, func(t *testing.T, cfg *spec.Config) {
		g := cfg.Groups[0]
		if g.Name != "nginx-deployment" || g.Sandbox == nil || g.Sandbox.Resources.Memory != 64<<20 || g.Sandbox.Resources.CPU != 0.25 {
			t.Errorf("group = %s", show(g))
		}
		if w := g.Sandbox.Resources.CPUWeight; w != cpuWeight(250) || w != 10 {
			t.Errorf("cpu weight = %d, want kubelet's %d for 250m", w, cpuWeight(250))
		}
	}},
	{"multi-document", `
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  backoffLimit: 4
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        command: ["sh", "-c", "echo 3.14"]
---
# a comment-only document is skipped
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: hello
            command: ["date"]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        command: ["sleep", "600"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        command: ["sleep", "600"]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs
spec:
  selector:
    matchLabels: {app: rs}
  template:
    metadata:
      labels: {app: rs}
    spec:
      containers:
      - name: rs
        command: ["sleep", "600"]
`, func(t *testing.T, cfg *spec.Config) {
		var names []string
		for _, g := range cfg.Groups {
			names = append(names, g.Name)
		}
		if strings.Join(names, ",") != "pi,hello,db,agent,rs" {
			t.Errorf("groups = %v, want one per workload, named after it", names)
		}
		if cfg.Groups[0].RestartPolicy != spec.RestartNever || cfg.Groups[1].RestartPolicy != spec.RestartOnFailure {
			t.Errorf("restart policies %q %q", cfg.Groups[0].RestartPolicy, cfg.Groups[1].RestartPolicy)
		}
	}},
}

// Each documentation manifest converts to HCL that podsup validate
// accepts (convertAndParse: podsup's loader, spec validation included)
// and that podsup up's stack accepts (stack.New refuses what its runtime
// cannot honour); it is not run here (run_test.go runs manifests).
func TestConvertDocumentationManifests(t *testing.T) {
	t.Parallel()
	for _, m := range manifests {
		t.Run(m.name, func(t *testing.T) {
			cfg, _ := convertAndParse(t, m.yaml, Options{})
			if m.check != nil {
				m.check(t, cfg)
			}
			instance := fmt.Sprintf("kubetest-%d-%d", os.Getpid(), instances.Add(1))
			st, err := stack.New(*cfg, stack.Options{Instance: instance, RuntimeDir: t.TempDir()})
			if err != nil {
				t.Fatalf("podsup up would refuse the conversion: %v", err)
			}
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestConvertWarnsWithPaths(t *testing.T) {
	var deployment string
	for _, m := range manifests {
		if m.name == "deployment" {
			deployment = m.yaml
		}
	}
	_, res := convertAndParse(t, deployment, Options{})
	want := []string{
		"Deployment/nginx-deployment: spec.replicas: podsup runs one copy of the pod, not 3: ignored",
		"Deployment/nginx-deployment: spec.template.spec.containers[0].image: podsup runs no images",
	}
	got := findingsText(res.Findings)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("warnings lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "labels") || strings.Contains(got, "selector") {
		t.Errorf("labels and selectors are part of a well-formed Deployment, not findings:\n%s", got)
	}
}

// A field Kubernetes added after 1.34 decodes (the decoding is strict: a
// field k8s.io/api does not know fails as "unknown field") and gets what
// the mapping table says: httpGet.protocol (1.37) is HTTP/1.1, which
// podsup's probes speak, or a warning with its path.
func TestConvertKnowsFieldsOfKubernetes137(t *testing.T) {
	manifest := func(protocol string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: h2}
spec:
  containers:
  - name: web
    command: ["sleep", "60"]
    readinessProbe:
      httpGet: {path: /healthz, port: 8080, protocol: ` + protocol + `}
`
	}
	_, res := convertAndParse(t, manifest("HTTP2"), Options{})
	want := `Pod/h2: spec.containers[0].readinessProbe.httpGet.protocol: podsup's HTTP probes speak HTTP/1.1`
	if got := findingsText(res.Findings); !strings.Contains(got, want) {
		t.Errorf("warnings lack %q:\n%s", want, got)
	}
	cfg, res := convertAndParse(t, manifest("HTTP1"), Options{})
	if got := findingsText(res.Findings); strings.Contains(got, "protocol") {
		t.Errorf("HTTP1 is what podsup speaks, yet:\n%s", got)
	}
	if p := cfg.Groups[0].Processes[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Port != 8080 {
		t.Errorf("the probe is not converted: %+v", p)
	}
}

// kubelet expands $(VAR) when VAR is the container's; a shell's
// $(command) it leaves alone, as podsup does.
func TestConvertWarnsAboutVariableReferences(t *testing.T) {
	t.Parallel()
	_, res := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    command: ["sh", "-c", "echo $(hostname)"]
    args: ["$(GREETING) world"]
    env:
    - {name: GREETING, value: hello}
`, Options{})
	got := findingsText(res.Findings)
	if !strings.Contains(got, "Pod/p: spec.containers[0].args[0]: kubelet would replace $(GREETING) with its value") {
		t.Errorf("no warning for $(GREETING):\n%s", got)
	}
	if strings.Contains(got, "command[2]") {
		t.Errorf("$(hostname) names no variable, kubelet leaves it:\n%s", got)
	}
}

func findingsText(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

// Every refusal, and what it says.
func TestConvertRefusals(t *testing.T) {
	t.Parallel()
	pod := func(containers string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n" + containers
	}
	cases := []struct {
		name, yaml string
		o          Options
		want       []string
	}{
		{"init restart policy", pod(`  initContainers:
  - name: log
    command: [sleep, "1"]
    restartPolicy: OnFailure
  containers:
  - name: app
    command: [sleep, "1"]
`), Options{}, []string{`error: Pod/p: spec.initContainers[0].restartPolicy: "OnFailure": only Always is defined for an init container`}},
		{"valueFrom", pod(`  containers:
  - name: app
    command: [sleep, "1"]
    env:
    - name: NODE
      valueFrom:
        fieldRef: {fieldPath: spec.nodeName}
`), Options{}, []string{"error: Pod/p: spec.containers[0].env[0].valueFrom: podsup has no downward API, ConfigMaps or Secrets: write the value of NODE"}},
		{"grpc", pod(`  containers:
  - name: app
    command: [sleep, "1"]
    livenessProbe:
      grpc: {port: 2379}
`), Options{}, []string{"error: Pod/p: spec.containers[0].livenessProbe.grpc: podsup has no gRPC probe"}},
		{"no command", pod(`  containers:
  - name: app
    image: nginx
    args: ["-g", "daemon off;"]
  - name: bare
`), Options{}, []string{
			`error: Pod/p: spec.containers[0].command: container "app" has no command: podsup runs no image, so there is no entrypoint to fall back on`,
			`error: Pod/p: spec.containers[1].command: container "bare" has no command: the container has no image`}},
		{"named port", pod(`  containers:
  - name: app
    command: [sleep, "1"]
    readinessProbe:
      httpGet: {port: http}
`), Options{}, []string{`error: Pod/p: spec.containers[0].readinessProbe.httpGet.port: container "app" has no port named "http"`}},
		{"strict", pod(`  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
  containers:
  - name: app
    command: [sleep, "1"]
    volumeMounts:
    - {name: data, mountPath: /data}
`), Options{Strict: true}, []string{
			"error: Pod/p: spec.volumes[0].persistentVolumeClaim: podsup has no PersistentVolumeClaims",
			`error: Pod/p: spec.containers[0].volumeMounts[0]: volume "data" is not carried over (spec.volumes[0]): not mounted`}},
		{"two rootfs", pod(`  containers:
  - name: a
    image: one
    command: [sleep, "1"]
  - name: b
    image: two
    command: [sleep, "1"]
`), Options{Rootfs: map[string]string{"one": "/srv/one", "two": "/srv/two"}}, []string{
			`error: Pod/p: spec.containers[1].image: --rootfs gives "two" a root filesystem other than spec.containers[0]'s (/srv/one)`}},
		{"unknown annotation", `apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    podsup.dev/grace: 1s
spec:
  containers:
  - name: app
    command: [sleep, "1"]
`, Options{}, []string{"error: Pod/p: metadata.annotations[podsup.dev/grace]: unknown podsup annotation"}},
		{"bad annotation", `apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    podsup.dev/process.app: 'critical = "yes please"'
spec:
  containers:
  - name: app
    command: [sleep, "1"]
`, Options{}, []string{"error: Pod/p: metadata.annotations[podsup.dev/process.app]: not valid podsup HCL"}},
		{"bad restart policy", pod(`  restartPolicy: Sometimes
  containers:
  - name: app
    command: [sleep, "1"]
`), Options{}, []string{`spec.restartPolicy: "Sometimes" is not Always, OnFailure or Never`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Convert(strings.NewReader(c.yaml), c.o)
			var fe *FindingsError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a FindingsError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// Errors before conversion: the manifest's own shape.
func TestConvertRejectsMalformedManifests(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, yaml, want string }{
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    command: [x]\n    livenesProbe: {}\n",
			`document 1: decoding Pod: unknown field "spec.containers[0].livenesProbe"`},
		{"duplicate field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    command: [x]\n    command: [y]\n",
			`document 1: parsing YAML`},
		{"unknown kind", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
			`document 1: apiVersion "v1" kind "Service" is not something podsup runs`},
		{"no name", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    command: [x]\n",
			"document 1: Pod has no metadata.name"},
		{"empty", "# nothing\n", "the manifest holds no object"},
		{"second document", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, command: [x]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec: {bogus: 1}\n",
			`document 2: decoding Pod: unknown field "spec.bogus"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Convert(strings.NewReader(c.yaml), Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestConvertRootfs(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: a, image: alpine, command: [sleep, "1"]}
  - {name: b, image: alpine, command: [sleep, "2"]}
`, Options{Rootfs: map[string]string{"alpine": "/srv/alpine", "unused": "/srv/x"}})
	s := cfg.Groups[0].Sandbox
	if s == nil || s.Rootfs != "/srv/alpine" || strings.Join(s.Namespaces, ",") != "mount" {
		t.Errorf("sandbox = %s, want rootfs /srv/alpine in a mount namespace", show(s))
	}
	if got := findingsText(res.Findings); !strings.Contains(got, `--rootfs: no container runs image "unused"`) || strings.Contains(got, "podsup runs no images") {
		t.Errorf("findings:\n%s", got)
	}
}
