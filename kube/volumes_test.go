package kube

import (
	"errors"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

const volumesManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  app.conf: "level = info\n"
  other: "not mounted"
---
apiVersion: v1
kind: Secret
metadata: {name: token}
data:
  token: c2VjcmV0
stringData:
  user: admin
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostname: web-1
      subdomain: edge
      securityContext: {fsGroup: 2000}
      hostAliases:
      - {ip: 10.0.0.5, hostnames: [db, db.local]}
      dnsPolicy: None
      dnsConfig:
        nameservers: [10.0.0.53]
        searches: [svc.local]
        options:
        - {name: ndots, value: "2"}
        - {name: edns0}
      volumes:
      - name: cache
        emptyDir: {medium: Memory, sizeLimit: 64Mi}
      - name: logs
        hostPath: {path: /var/log/web/, type: DirectoryOrCreate}
      - name: settings
        configMap:
          name: settings
          items: [{key: app.conf, path: conf/app.conf}]
      - name: token
        secret: {secretName: token, defaultMode: 0440}
      initContainers:
      - name: prepare
        command: ["true"]
        volumeMounts:
        - {name: cache, mountPath: /cache}
      containers:
      - name: app
        command: [sleep, "60"]
        volumeMounts:
        - {name: cache, mountPath: /cache}
        - {name: logs, mountPath: /var/log/app/, subPath: app}
        - {name: settings, mountPath: /etc/app, readOnly: true}
        - {name: token, mountPath: /run/secrets}
`

// Issue #30 item 6: the four volume kinds, their mounts and the pod's
// names convert to podsup's, with nothing left over (--strict), from the
// ConfigMap and Secret documents beside the workload.
func TestConvertVolumesAndNames(t *testing.T) {
	t.Parallel()
	cfg, _ := convertAndParse(t, volumesManifest, Options{Strict: true})
	g := cfg.Groups[0]
	wantVols := []spec.Volume{
		{Name: "cache", Type: spec.VolumeEmptyDir, Medium: "memory", SizeLimit: 64 << 20},
		{Name: "logs", Type: spec.VolumeHostPath, Path: "/var/log/web", HostPathType: "DirectoryOrCreate"},
		{Name: "settings", Type: spec.VolumeConfig, Files: []spec.VolumeFile{{Name: "conf/app.conf", Content: "level = info\n"}}},
		{Name: "token", Type: spec.VolumeSecret, Mode: 0o440, Files: []spec.VolumeFile{{Name: "token", Content: "secret"}, {Name: "user", Content: "admin"}}},
	}
	if g.FSGroup != "2000" {
		t.Errorf("fs_group %q, want the pod's fsGroup 2000", g.FSGroup)
	}
	if !equal(g.Volumes, wantVols) {
		t.Errorf("volumes\n got %s\nwant %s", show(g.Volumes), show(wantVols))
	}
	wantMounts := []spec.VolumeMount{
		{Volume: "cache", Path: "/cache"},
		{Volume: "logs", Path: "/var/log/app", SubPath: "app"},
		{Volume: "settings", Path: "/etc/app", ReadOnly: true},
		{Volume: "token", Path: "/run/secrets"},
	}
	if got := g.Processes[0].VolumeMounts; !equal(got, wantMounts) {
		t.Errorf("mounts\n got %s\nwant %s", show(got), show(wantMounts))
	}
	if got := g.Init[0].VolumeMounts; !equal(got, wantMounts[:1]) {
		t.Errorf("init mounts %s", show(got))
	}
	s := g.Sandbox
	if s == nil || !s.HasNamespace("mount") || !s.HasNamespace("uts") || s.Hostname != "web-1.edge" {
		t.Fatalf("sandbox %s: want the mount and uts namespaces, hostname web-1.edge", show(s))
	}
	if want := []spec.HostAlias{{IP: "10.0.0.5", Hostnames: []string{"db", "db.local"}}}; !equal(s.HostAliases, want) {
		t.Errorf("host aliases %s", show(s.HostAliases))
	}
	if want := (&spec.DNSConfig{Nameservers: []string{"10.0.0.53"}, Searches: []string{"svc.local"}, Options: []string{"ndots:2", "edns0"}}); !equal(s.DNS, want) {
		t.Errorf("dns %s", show(s.DNS))
	}

	// And back: the export of what it converted to uses the Pod's own
	// fields (no annotation) and converts back to the same group.
	back, yml := roundTrip(t, cfg, "pod")
	if strings.Contains(yml, "podsup.dev/") {
		t.Errorf("the export used annotations for Kubernetes' own fields:\n%s", yml)
	}
	for _, want := range []string{"kind: ConfigMap", "kind: Secret", "subdomain: edge", "hostname: web-1", "medium: Memory", "type: DirectoryOrCreate", "dnsPolicy: None", "subPath: app", "fsGroup: 2000", "defaultMode: 288"} {
		if !strings.Contains(yml, want) {
			t.Errorf("the export lacks %q:\n%s", want, yml)
		}
	}
	if !equal(groupsWithBackoff(cfg), groupsWithBackoff(back)) {
		t.Errorf("round trip: want %s\ngot %s", show(cfg.Groups), show(back.Groups))
	}
}

// The volume kinds podsup has not are warnings by path, and so are the
// mounts of them; a missing ConfigMap is an error, unless optional.
func TestConvertVolumeFindings(t *testing.T) {
	t.Parallel()
	res, err := Convert(strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes:
  - name: claim
    persistentVolumeClaim: {claimName: data}
  - name: token
    projected: {sources: [{serviceAccountToken: {path: token}}]}
  - name: info
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  - name: maybe
    configMap: {name: absent, optional: true}
  containers:
  - name: app
    command: [sleep, "1"]
    volumeMounts:
    - {name: claim, mountPath: /data}
    - {name: token, mountPath: /var/run/secrets/tokens}
    - {name: maybe, mountPath: /etc/maybe, mountPropagation: HostToContainer}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := findingsText(res.Findings)
	for _, want := range []string{
		"warning: Pod/p: spec.volumes[0].persistentVolumeClaim: podsup has no PersistentVolumeClaims",
		"warning: Pod/p: spec.volumes[1].projected: podsup has no projected volumes",
		"warning: Pod/p: spec.volumes[2].downwardAPI: podsup has no downward API",
		`warning: Pod/p: spec.containers[0].volumeMounts[0]: volume "claim" is not carried over (spec.volumes[0]): not mounted`,
		`warning: Pod/p: spec.containers[0].volumeMounts[1]: volume "token" is not carried over (spec.volumes[1]): not mounted`,
		"warning: Pod/p: spec.containers[0].volumeMounts[2].mountPropagation: not supported by podsup",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("findings lack %q:\n%s", want, got)
		}
	}
	g := res.Config.Groups[0]
	if len(g.Volumes) != 1 || g.Volumes[0].Name != "maybe" || len(g.Volumes[0].Files) != 0 || len(g.Processes[0].VolumeMounts) != 1 {
		t.Errorf("want only the optional, empty config volume, mounted: %s %s", show(g.Volumes), show(g.Processes[0].VolumeMounts))
	}

	_, err = Convert(strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes:
  - name: conf
    configMap: {name: absent}
  - name: s
    secret: {secretName: present, items: [{key: nope, path: x}]}
  containers:
  - {name: app, command: [sleep, "1"]}
---
apiVersion: v1
kind: Secret
metadata: {name: present}
stringData: {yes: "1"}
`), Options{})
	var fe *FindingsError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a FindingsError", err)
	}
	for _, want := range []string{
		`error: Pod/p: spec.volumes[0].configMap.name: the manifest has no ConfigMap "absent"`,
		`error: Pod/p: spec.volumes[1].secret.items[0].key: Secret "present" has no key "nope"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
