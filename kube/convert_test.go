package kube

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
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

// kubelet expands $(VAR) in env values, command and args: each env value
// with the entries before it, command and args with all of them; an
// undefined name (a shell's $(command) among them) stays as written and
// $$ is a $. The HCL keeps the manifest's env order.
func TestConvertExpandsVariableReferences(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    command: ["sh", "-c", "echo $(hostname) $$(GREETING) $HOME"]
    args: ["$(GREETING) world", "$(URL)", "$(NOPE)"]
    env:
    - {name: ZED, value: "$(GREETING)-early"}
    - {name: GREETING, value: hello}
    - {name: URL, value: "http://$(HOST):$(PORT)/$(GREETING)"}
    - {name: HOST, value: db}
    - {name: PRICE, value: "$$5 $(GREETING"}
    - {name: EMPTY, value: ""}
`, Options{})
	p := cfg.Groups[0].Processes[0]
	wantCmd := []string{"sh", "-c", "echo $(hostname) $(GREETING) $HOME", "hello world", "http://$(HOST):$(PORT)/hello", "$(NOPE)"}
	if !equal(p.Command, wantCmd) {
		t.Errorf("command = %q, want %q", p.Command, wantCmd)
	}
	wantEnv := map[string]string{"ZED": "$(GREETING)-early", "GREETING": "hello", "URL": "http://$(HOST):$(PORT)/hello", "HOST": "db", "PRICE": "$5 $(GREETING", "EMPTY": ""}
	for k, v := range wantEnv {
		if p.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, p.Env[k], v)
		}
	}
	if got := findingsText(res.Findings); strings.Contains(got, "$(") {
		t.Errorf("a warning about references kubelet expands:\n%s", got)
	}
	var hcl bytes.Buffer
	if err := WriteHCL(&hcl, res, "test.yaml"); err != nil {
		t.Fatal(err)
	}
	text := hcl.String()
	last := -1
	for _, name := range []string{"ZED", "GREETING", "URL", "HOST", "PRICE", "EMPTY"} {
		i := strings.Index(text, name+" ")
		if i < last {
			t.Errorf("the env is not in the manifest's order (%s):\n%s", name, text)
		}
		last = i
	}
}

// What podsup passes as written, export escapes, so that the Pod's
// container gets the same and converting it back gives the same process.
func TestExportEscapesVariableReferences(t *testing.T) {
	t.Parallel()
	cfg := &spec.Config{Backoff: spec.DefaultBackoff(), Groups: []spec.Group{{Name: "g", Processes: []spec.Process{{
		Name: "p", Command: []string{"sh", "-c", "echo $(A) $$ $(date) $HOME $", "$$(A)"},
		Env: map[string]string{"A": "1", "B": "$(A)$$", "C": "$(", "D": "$"},
	}}}}}
	back, yml := roundTrip(t, cfg, "pod")
	if want := asConverted(cfg.Groups); !equal(back.Groups, want) {
		t.Errorf("round trip: want %s\ngot %s\nYAML:\n%s", show(want), show(back.Groups), yml)
	}
	if !strings.Contains(yml, "echo $$(A) $$$ $$(date) $HOME $") {
		t.Errorf("the command is not escaped as kubelet reads it:\n%s", yml)
	}
}

func TestExpandAsKubelet(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	// Cases from kubelet's expansion tests.
	for in, want := range map[string]string{
		"$(VAR_A)":                 "A",
		"___$(VAR_B)___":           "___B___",
		"$(VAR_A)-$(VAR_A)":        "A-A",
		"$(VAR_A)$(VAR_B)$(VAR_C)": "ABC",
		"$(VAR_REF)":               "$(VAR_A)",
		"foo\\$(VAR_C)bar":         "foo\\Cbar",
		"$(VAR_EMPTY)":             "",
		"$(UNKNOWN)":               "$(UNKNOWN)",
		"$$(VAR_A)":                "$(VAR_A)",
		"$$$(VAR_A)":               "$A",
		"$$$$(VAR_A)":              "$$(VAR_A)",
		"$$":                       "$",
		"$":                        "$",
		"$VAR_A":                   "$VAR_A",
		"$(VAR_A":                  "$(VAR_A",
		"$(VAR_A$(VAR_B)":          "$(VAR_A$(VAR_B)",
		"$()":                      "$()",
		"f$(":                      "f$(",
		"$(VAR_A)$":                "A$",
		"x$$$":                     "x$$",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
		if got := expand(escapeExpansion(in), lookup); got != in {
			t.Errorf("expand(escapeExpansion(%q)) = %q", in, got)
		}
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
    - name: IP
      valueFrom:
        fieldRef: {fieldPath: status.podIP}
    - name: KEY
      valueFrom:
        secretKeyRef: {name: creds, key: token}
`), Options{}, []string{
			`error: Pod/p: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: "status.podIP": podsup gives a pod no address of its own`,
			`error: Pod/p: spec.containers[0].env[1].valueFrom.secretKeyRef: no Secret "creds": add it to the manifest as a document of its own, or give its file with --secret FILE`}},
		{"no command", pod(`  containers:
  - name: app
    image: nginx
    args: ["-g", "daemon off;"]
  - name: bare
`), Options{}, []string{
			`error: Pod/p: spec.containers[0].command: container "app" has no command: podsup runs no image, so it knows no entrypoint for "nginx": give the image's directory with --image nginx=DIR (an OCI image layout or an unpacked bundle), or its entrypoint with --entrypoint nginx=CMD`,
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
		{"unknown kind", "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: s}\n",
			`document 1: apiVersion "v1" kind "ReplicationController" is not something podsup runs`},
		{"only skipped kinds", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
			"the manifest holds no object podsup runs"},
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

// A pod with a hostPort gets a podsup bridge with its ports (named ones
// resolvable by probes); hostNetwork keeps the host's network; a pod with
// container ports alone stays on the host's network, where they are.
func TestConvertPortsAndHostNetwork(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: http
        image: nginx
        command: [python3, -m, http.server, "8080"]
        ports:
        - {name: http, containerPort: 8080, hostPort: 18080}
        - {containerPort: 9090, protocol: UDP}
        readinessProbe:
          tcpSocket: {port: http}
`, Options{})
	s := cfg.Groups[0].Sandbox
	if s == nil || s.Network == nil || s.Network.Mode != spec.NetworkBridge || !slices.Contains(s.Namespaces, "net") {
		t.Fatalf("sandbox = %s, want a bridge network in a net namespace", show(s))
	}
	want := []spec.Port{{Name: "http", ContainerPort: 8080, HostPort: 18080}, {Name: "http-9090", ContainerPort: 9090, Protocol: "udp"}}
	if !reflect.DeepEqual(s.Network.Ports, want) {
		t.Errorf("ports = %+v, want %+v", s.Network.Ports, want)
	}
	if p := cfg.Groups[0].Processes[0].ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port != 8080 {
		t.Errorf("readiness probe = %+v, want port 8080", p)
	}
	if got := findingsText(res.Findings); strings.Contains(got, "ports") || strings.Contains(got, "hostNetwork") {
		t.Errorf("ports are mapped, not findings:\n%s", got)
	}

	for _, y := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: h}\nspec:\n  hostNetwork: true\n  containers:\n  - {name: a, image: x, command: [sleep, \"1\"], ports: [{containerPort: 80, hostPort: 80}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: h}\nspec:\n  containers:\n  - {name: a, image: x, command: [sleep, \"1\"], ports: [{containerPort: 80}]}\n",
	} {
		cfg, _ := convertAndParse(t, y, Options{})
		if s := cfg.Groups[0].Sandbox; s != nil && s.Network != nil {
			t.Errorf("%s: network = %+v, want the host's", y, s.Network)
		}
	}
}

// A refused manifest lists its warnings with its errors: all in one pass
// (issue 31, item 4: cassandra showed 1 error, and 7 warnings only after
// it was fixed).
func TestConvertReportsEveryFindingInOnePass(t *testing.T) {
	t.Parallel()
	_, err := Convert(strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: app
    command: [sleep, "1"]
    volumeMounts:
    - {name: data, mountPath: /data}
    readinessProbe:
      httpGet: {port: http}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: c}}
`), Options{})
	var fe *FindingsError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a FindingsError", err)
	}
	for _, want := range []string{
		`error: Pod/p: spec.containers[0].readinessProbe.httpGet.port: container "app" has no port named "http"`,
		`warning: Pod/p: spec.containers[0].volumeMounts[0]: volume "data" is not carried over`,
		"warning: Pod/p: spec.volumes[0].persistentVolumeClaim: podsup has no PersistentVolumeClaims",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// The Services, claims, storage classes and budgets beside a workload
// are skipped with a note naming each document, not refused (issue 31,
// item 3); a note stays one under Strict.
func TestConvertSkipsKindsPodsupDoesNotRun(t *testing.T) {
	t.Parallel()
	manifest := `apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  ports: [{port: 3306}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: db, command: [sleep, "60"]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db-pdb}
spec: {maxUnavailable: 1}
---
kind: StorageClass
apiVersion: storage.k8s.io/v1
metadata: {name: fast}
provisioner: k8s.io/minikube-hostpath
`
	for _, strict := range []bool{false, true} {
		cfg, res := convertAndParse(t, manifest, Options{Strict: strict})
		if len(cfg.Groups) != 1 || cfg.Groups[0].Name != "db" {
			t.Fatalf("groups = %s, want the Deployment's alone", show(cfg.Groups))
		}
		got := findingsText(res.Findings)
		for _, want := range []string{
			"note: Service/db: document 1: skipped: ",
			"note: PersistentVolumeClaim/data: document 2: skipped: podsup has no volumes",
			"note: PodDisruptionBudget/db-pdb: document 4: skipped: ",
			"note: StorageClass/fast: document 5: skipped: ",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("strict=%v: findings lack %q:\n%s", strict, want, got)
			}
		}
	}
}

// A CronJob of batch/v1beta1, removed in Kubernetes 1.25 but still in
// the documentation's older examples, is read as batch/v1 with a warning.
func TestConvertAcceptsBatchV1beta1CronJob(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: hello}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: hello
            command: [/bin/sh, -c, date]
          restartPolicy: OnFailure
`, Options{})
	if g := cfg.Groups[0]; g.Name != "hello" || g.RestartPolicy != spec.RestartOnFailure {
		t.Errorf("group = %s", show(g))
	}
	if got := findingsText(res.Findings); !strings.Contains(got, "warning: CronJob/hello: apiVersion: batch/v1beta1 CronJob is no longer served") {
		t.Errorf("findings:\n%s", got)
	}
}

// limits.pids is the sandbox's pids, and a CPU request is kept as it was,
// not only as the weight derived from it (issue 31, item 8: a 200m
// request came back 182m).
func TestConvertMapsPidsAndKeepsTheCPURequest(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  resources:
    limits: {pids: "2048", memory: 64Mi}
  containers:
  - name: a
    image: busybox
    command: [sleep, "60"]
---
apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  containers:
  - name: a
    image: busybox
    command: [sleep, "60"]
    resources:
      requests: {cpu: 200m}
      limits: {pids: "64"}
`, Options{})
	if got := findingsText(res.Findings); strings.Contains(got, "pids") {
		t.Errorf("findings:\n%s", got)
	}
	p, q := cfg.Groups[0].Sandbox.Resources, cfg.Groups[1].Sandbox.Resources
	if p.Pids != 2048 || p.Memory != 64<<20 {
		t.Errorf("pod-level resources: %+v", p)
	}
	if q.Pids != 64 || q.CPURequest != 0.2 || q.CPUWeight != cpuWeight(200) {
		t.Errorf("container resources: %+v", q)
	}
	back, yml := roundTrip(t, cfg, "")
	for _, want := range []string{"pids: \"2048\"", "cpu: 200m", "pids: \"64\""} {
		if !strings.Contains(yml, want) {
			t.Errorf("export lacks %q:\n%s", want, yml)
		}
	}
	if strings.Contains(yml, "podsup.dev/") {
		t.Errorf("export needed annotations:\n%s", yml)
	}
	if !equal(back.Groups, cfg.Groups) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Groups))
	}
}

// A grpc probe is podsup's grpc action, both ways (issue 31, item 8:
// it was refused).
func TestGRPCProbeBothWays(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: etcd}
spec:
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5.1-0
    command: [etcd]
    livenessProbe:
      grpc: {port: 2379}
      initialDelaySeconds: 10
    readinessProbe:
      grpc: {port: 2379, service: ready}
`, Options{Strict: true})
	p := cfg.Groups[0].Processes[0]
	if g := p.LivenessProbe.GRPC; g == nil || g.Port != 2379 || g.Service != "" || p.LivenessProbe.InitialDelay != 10*time.Second {
		t.Errorf("liveness probe: %s", show(p.LivenessProbe))
	}
	if g := p.ReadinessProbe.GRPC; g == nil || g.Port != 2379 || g.Service != "ready" {
		t.Errorf("readiness probe: %s", show(p.ReadinessProbe))
	}
	for _, fd := range res.Findings {
		if !fd.Note {
			t.Errorf("finding: %s", fd)
		}
	}
	back, yml := roundTrip(t, cfg, "")
	if !strings.Contains(yml, "grpc:\n        port: 2379\n        service: ready") || strings.Contains(yml, "podsup.dev/") {
		t.Errorf("export:\n%s", yml)
	}
	if !equal(back.Groups, cfg.Groups) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Groups))
	}
}

// A Job's backoffLimit is the group's backoff_limit, 6 with a note when
// the Job sets none (the Job controller's default), and it travels back
// in the group annotation, a Pod having no such field (issue 31, item 8).
func TestJobBackoffLimitBothWays(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  backoffLimit: 4
  template:
    spec:
      containers:
      - {name: pi, image: perl, command: [perl, -e, "exit 1"]}
      restartPolicy: Never
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      containers:
      - {name: once, image: busybox, command: ["true"]}
      restartPolicy: OnFailure
`, Options{Strict: true})
	pi, once := cfg.Groups[0], cfg.Groups[1]
	if pi.BackoffLimit == nil || *pi.BackoffLimit != 4 || pi.RestartPolicy != spec.RestartNever {
		t.Errorf("pi: %s", show(pi))
	}
	if once.BackoffLimit == nil || *once.BackoffLimit != 6 || once.RestartPolicy != spec.RestartOnFailure {
		t.Errorf("once: %s", show(once))
	}
	if got := findingsText(res.Findings); !strings.Contains(got, "note: Job/once: spec.backoffLimit: not set: the Job controller retries a failed pod 6 times") || strings.Contains(got, "Job/pi: spec.backoffLimit") {
		t.Errorf("findings:\n%s", got)
	}
	back, yml := roundTrip(t, cfg, "")
	if !strings.Contains(yml, "backoff_limit") {
		t.Errorf("export lacks backoff_limit:\n%s", yml)
	}
	if !equal(back.Groups, cfg.Groups) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Groups))
	}
}

// A container's limits are its process's own cgroup's as well as part of
// the group's sum, as kubelet gives each container a cgroup inside the
// pod's (issue 29, item 6); export writes them back on the container,
// and the pod-level resources only where the containers' do not sum to
// the group's.
func TestContainerLimitsArePerProcess(t *testing.T) {
	t.Parallel()
	cfg, res := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: both}
spec:
  initContainers:
  - name: setup
    image: busybox
    command: ["true"]
    resources: {limits: {memory: 16Mi}}
  containers:
  - name: a
    image: busybox
    command: [sleep, "60"]
    resources:
      limits: {memory: 64Mi, cpu: 500m}
      requests: {cpu: 250m}
  - name: b
    image: busybox
    command: [sleep, "60"]
    resources: {limits: {memory: 32Mi, cpu: 100m}}
---
apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  containers:
  - name: a
    image: busybox
    command: [sleep, "60"]
    resources: {limits: {memory: 64Mi}}
  - name: b
    image: busybox
    command: [sleep, "60"]
`, Options{})
	both, one := cfg.Groups[0], cfg.Groups[1]
	if r := both.Sandbox.Resources; r.Memory != 96<<20 || r.CPU != 0.6 || r.CPURequest != 0.35 {
		t.Errorf("the group's sum: %+v", r)
	}
	for _, c := range []struct {
		got, want spec.Resources
	}{
		{both.Init[0].Resources, spec.Resources{Memory: 16 << 20}},
		{both.Processes[0].Resources, spec.Resources{Memory: 64 << 20, CPU: 0.5, CPURequest: 0.25, CPUWeight: cpuWeight(250)}},
		{both.Processes[1].Resources, spec.Resources{Memory: 32 << 20, CPU: 0.1, CPURequest: 0.1, CPUWeight: cpuWeight(100)}},
		{one.Processes[0].Resources, spec.Resources{Memory: 64 << 20}},
		{one.Processes[1].Resources, spec.Resources{}},
	} {
		if c.got != c.want {
			t.Errorf("a process's resources: %+v, want %+v", c.got, c.want)
		}
	}
	if one.Sandbox == nil || one.Sandbox.Resources != (spec.Resources{}) {
		t.Errorf("the group with one limited process: sandbox %s, want sandbox {} for its cgroup", show(one.Sandbox))
	}
	if got := findingsText(res.Findings); !strings.Contains(got, "only some containers set resources.limits.memory") {
		t.Errorf("findings:\n%s", got)
	}

	var yml bytes.Buffer
	if _, err := Export(&yml, cfg, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	out := yml.String()
	for _, want := range []string{"memory: 16Mi", "memory: 64Mi", "cpu: 500m", "cpu: 250m", "memory: 32Mi", "cpu: 100m"} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "96Mi") || strings.Contains(out, "podsup.dev/") {
		t.Errorf("export wrote the sum as pod-level resources, or needed annotations:\n%s", out)
	}
	back, err := Convert(strings.NewReader(out), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(back.Config.Groups, cfg.Groups) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Config.Groups))
	}
	var again bytes.Buffer
	if _, err := Export(&again, back.Config, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if again.String() != out {
		t.Errorf("export → convert → export changed:\n%s\nthen\n%s", out, again.String())
	}
}
