package kube

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsup/podsup/spec"
)

// Volumes, volume mounts and the sandbox's names, both ways:
//
//	spec.volumes[].emptyDir            volume type = "empty_dir" (medium Memory →
//	                                   "memory", sizeLimit → size_limit)
//	spec.volumes[].hostPath            volume type = "host_path" (path, type →
//	                                   host_path_type)
//	spec.volumes[].configMap, secret   volume type = "config", "secret": one file per
//	                                   item (or per key), from the ConfigMap or Secret
//	                                   document of the same manifest
//	containers[].volumeMounts[]        volume_mount (name, mountPath, readOnly, subPath)
//	spec.hostAliases, spec.dnsConfig   sandbox host_alias blocks, dns block
//	spec.subdomain                     the sandbox hostname's domain: hostname.subdomain
//	configMap/secret defaultMode       volume mode (unset: a secret's files are 0400)
//	spec.securityContext.fsGroup       fs_group
//
// A pod that mounts a volume or sets its names gets the mount namespace
// (podsup writes /etc/hosts and /etc/resolv.conf in it). Other volume
// kinds (persistentVolumeClaim, projected, downwardAPI, ...) are warnings
// by path, and so are the mounts of them.

// dataObject is a ConfigMap's or a Secret's data: what configMap and
// secret volumes are written from.
type dataObject struct {
	kind, name string
	data       map[string][]byte
}

// dataObjects are a manifest's ConfigMaps and Secrets by kind and name.
type dataObjects map[[2]string]*dataObject

func configMapData(m *corev1.ConfigMap) *dataObject {
	d := &dataObject{kind: "ConfigMap", name: m.Name, data: map[string][]byte{}}
	for k, v := range m.Data {
		d.data[k] = []byte(v)
	}
	for k, v := range m.BinaryData {
		d.data[k] = v
	}
	return d
}

// secretData is a Secret's data as the API server stores it: data with
// stringData written over it.
func secretVolumeData(m *corev1.Secret) *dataObject {
	d := &dataObject{kind: "Secret", name: m.Name, data: map[string][]byte{}}
	for k, v := range m.Data {
		d.data[k] = v
	}
	for k, v := range m.StringData {
		d.data[k] = []byte(v)
	}
	return d
}

// volumePodFields and volumeContainerFields are the mapping table's
// entries for volumes and names (walk.go).
var (
	volumePodFields = []string{
		"spec.volumes[].name",
		"spec.volumes[].emptyDir.medium", "spec.volumes[].emptyDir.sizeLimit",
		"spec.volumes[].hostPath.path", "spec.volumes[].hostPath.type",
		"spec.volumes[].configMap.name", "spec.volumes[].configMap.items[].key", "spec.volumes[].configMap.items[].path",
		"spec.volumes[].configMap.optional", "spec.volumes[].configMap.defaultMode",
		"spec.volumes[].secret.secretName", "spec.volumes[].secret.items[].key", "spec.volumes[].secret.items[].path",
		"spec.volumes[].secret.optional", "spec.volumes[].secret.defaultMode",
		"spec.hostAliases[].ip", "spec.hostAliases[].hostnames",
		"spec.dnsConfig.nameservers", "spec.dnsConfig.searches",
		"spec.dnsConfig.options[].name", "spec.dnsConfig.options[].value",
		"spec.subdomain", "spec.dnsPolicy", "spec.securityContext.fsGroup",
	}
	volumeContainerFields = []string{
		"volumeMounts[].name", "volumeMounts[].mountPath", "volumeMounts[].readOnly", "volumeMounts[].subPath",
	}
)

// volumes sets g's volumes, the pod's of the kinds podsup has (the names
// of the others, which the walk reports by path, go to c.dropped), and
// its fs_group.
func (c *converter) volumes(g *spec.Group) {
	if sc := c.w.pod.SecurityContext; sc != nil && sc.FSGroup != nil {
		g.FSGroup = strconv.FormatInt(*sc.FSGroup, 10)
	}
	var out []spec.Volume
	for i := range c.w.pod.Volumes {
		kv := &c.w.pod.Volumes[i]
		at := fmt.Sprintf("spec.volumes[%d]", i)
		v := spec.Volume{Name: kv.Name}
		switch {
		case kv.Name == "":
			// What the API server refuses is dropped, with a warning, so
			// that the rest of the volume is reported too.
			c.r.warn(c.path(at+".name"), "a volume needs a name (Kubernetes refuses it without one): ignored")
			continue
		case kv.EmptyDir != nil:
			v.Type = spec.VolumeEmptyDir
			switch kv.EmptyDir.Medium {
			case corev1.StorageMediumDefault:
			case corev1.StorageMediumMemory:
				v.Medium = "memory"
			default:
				c.r.warn(c.path(at+".emptyDir.medium"), "podsup has no medium %q: a directory on disk", kv.EmptyDir.Medium)
			}
			if q := kv.EmptyDir.SizeLimit; q != nil {
				if v.Medium == "memory" {
					v.SizeLimit = q.Value()
				} else {
					c.r.warn(c.path(at+".emptyDir.sizeLimit"), "podsup caps only a Memory emptyDir (its tmpfs), not the use of a directory on disk: ignored")
				}
			}
		case kv.HostPath != nil:
			v.Type, v.Path = spec.VolumeHostPath, path.Clean(kv.HostPath.Path)
			if t := kv.HostPath.Type; t != nil {
				v.HostPathType = string(*t)
			}
		case kv.ConfigMap != nil:
			v.Type = spec.VolumeConfig
			s := kv.ConfigMap
			v.Files = c.volumeFiles("ConfigMap", s.Name, s.Items, s.Optional, at+".configMap")
			v.Mode = fileMode(s.DefaultMode)
		case kv.Secret != nil:
			v.Type = spec.VolumeSecret
			s := kv.Secret
			v.Files = c.volumeFiles("Secret", s.SecretName, s.Items, s.Optional, at+".secret")
			v.Mode = fileMode(s.DefaultMode)
		default:
			// The walk names the kind's field, with fieldWhy's reason.
			if c.dropped == nil {
				c.dropped = map[string]string{}
			}
			c.dropped[kv.Name] = at
			continue
		}
		out = append(out, v)
	}
	g.Volumes = out
}

// fileMode is a defaultMode as a volume's mode (0: podsup's default, which
// for a secret is 0400, not Kubernetes' 0644).
func fileMode(m *int32) uint32 {
	if m == nil {
		return 0
	}
	return uint32(*m) & 0o777
}

// volumeFiles are a configMap or secret volume's files, from the
// manifest's object of that kind and name: the items, or every key.
func (c *converter) volumeFiles(kind, name string, items []corev1.KeyToPath, optional *bool, at string) []spec.VolumeFile {
	obj := c.data[[2]string{kind, name}]
	if obj == nil {
		field := map[string]string{"ConfigMap": ".name", "Secret": ".secretName"}[kind]
		if name == "" {
			c.r.warn(c.path(at+field), "a %s volume needs the %s's name (Kubernetes refuses it without one): the volume is empty", strings.ToLower(kind[:1])+kind[1:], kind)
			return nil
		}
		if optional == nil || !*optional {
			c.r.fail(c.path(at+field), "the manifest has no %s %q: put it in the same file (a document of its own), podsup writes the volume's files from it", kind, name)
		}
		return nil // optional: an empty volume, as kubelet makes it
	}
	var out []spec.VolumeFile
	add := func(key, file, itemAt string) {
		b, ok := obj.data[key]
		if !ok {
			if optional == nil || !*optional {
				c.r.fail(c.path(itemAt), "%s %q has no key %q", kind, name, key)
			}
			return
		}
		if !utf8.Valid(b) {
			c.r.fail(c.path(itemAt), "%s %q: key %q is not text; podsup's config holds text: write the file on the host and give it as a file's source", kind, name, key)
			return
		}
		out = append(out, spec.VolumeFile{Name: path.Clean(file), Content: string(b)})
	}
	if len(items) == 0 {
		keys := make([]string, 0, len(obj.data))
		for k := range obj.data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			add(k, k, at)
		}
		return out
	}
	for i, it := range items {
		add(it.Key, it.Path, fmt.Sprintf("%s.items[%d].key", at, i))
	}
	return out
}

// volumeMounts are a container's volume mounts; a mount of a volume the
// bridge dropped is dropped too, with a warning.
func (c *converter) volumeMounts(ct *corev1.Container, at string) []spec.VolumeMount {
	var out []spec.VolumeMount
	for i, m := range ct.VolumeMounts {
		mat := fmt.Sprintf("%s.volumeMounts[%d]", at, i)
		if vat, ok := c.dropped[m.Name]; ok {
			c.r.warn(c.path(mat), "volume %q is not carried over (%s): not mounted", m.Name, c.path(vat))
			continue
		}
		if m.Name == "" || !slices.ContainsFunc(c.w.pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			c.r.warn(c.path(mat+".name"), "the pod has no volume %q (Kubernetes refuses the pod): not mounted", m.Name)
			continue
		}
		out = append(out, spec.VolumeMount{Volume: m.Name, Path: path.Clean(m.MountPath), ReadOnly: m.ReadOnly, SubPath: m.SubPath})
	}
	return out
}

// names sets the sandbox's hostname domain, hosts lines and resolver
// from the pod, and the mount namespace where the sandbox needs it: for
// a volume mount or for its own /etc/hosts and /etc/resolv.conf.
func (c *converter) names(s *spec.Sandbox, ns map[string]bool, g *spec.Group) {
	pod := &c.w.pod
	if pod.Subdomain != "" {
		host := pod.Hostname
		if host == "" {
			host = c.w.name // kubelet's: the pod's name
		}
		ns["uts"] = true
		s.Hostname = host + "." + pod.Subdomain
	}
	for _, ha := range pod.HostAliases {
		s.HostAliases = append(s.HostAliases, spec.HostAlias{IP: ha.IP, Hostnames: ha.Hostnames})
	}
	if d := pod.DNSConfig; d != nil {
		dns := &spec.DNSConfig{Nameservers: d.Nameservers, Searches: d.Searches}
		for _, o := range d.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			dns.Options = append(dns.Options, opt)
		}
		s.DNS = dns
		if p := pod.DNSPolicy; p != "" && p != corev1.DNSNone {
			c.r.warn(c.path("spec.dnsPolicy"), "podsup's dns block is the sandbox's whole /etc/resolv.conf, as with dnsPolicy None: the host's resolvers are not added to dnsConfig's")
		}
	}
	mounts := false
	for _, list := range [][]spec.Process{g.Init, g.Processes} {
		for _, p := range list {
			mounts = mounts || len(p.VolumeMounts) > 0
		}
	}
	if mounts || len(s.HostAliases) > 0 || s.DNS != nil {
		ns["mount"] = true
	}
}

// configMapKey is a ConfigMap's (and a Secret's) key syntax.
var configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// exportVolumes writes g's volumes, volume mounts and names into the Pod
// ps, and returns the ConfigMaps and Secrets that its config and secret
// volumes read, one per volume, named GROUP-VOLUME. A file with a source
// (a host file) has no place in them: Export's comparison puts its
// volume in the group's annotation.
func exportVolumes(g *spec.Group, ps *corev1.PodSpec) []any {
	var objs []any
	for _, v := range g.Volumes {
		kv := corev1.Volume{Name: v.Name}
		switch v.Type {
		case spec.VolumeEmptyDir:
			kv.EmptyDir = &corev1.EmptyDirVolumeSource{}
			if v.Medium == "memory" {
				kv.EmptyDir.Medium = corev1.StorageMediumMemory
			}
			if v.SizeLimit != 0 {
				kv.EmptyDir.SizeLimit = resource.NewQuantity(v.SizeLimit, resource.BinarySI)
			}
		case spec.VolumeHostPath:
			kv.HostPath = &corev1.HostPathVolumeSource{Path: v.Path}
			if v.HostPathType != "" {
				t := corev1.HostPathType(v.HostPathType)
				kv.HostPath.Type = &t
			}
		case spec.VolumeConfig, spec.VolumeSecret:
			name := g.Name + "-" + v.Name
			data := map[string]string{}
			var items []corev1.KeyToPath
			for _, f := range v.Files {
				if f.Source != "" {
					continue
				}
				key := f.Name
				if !configMapKey.MatchString(key) {
					key = strings.ReplaceAll(key, "/", "_")
				}
				for data[key] != "" || slices.ContainsFunc(items, func(it corev1.KeyToPath) bool { return it.Key == key }) {
					key = "_" + key
				}
				data[key] = f.Content
				items = append(items, corev1.KeyToPath{Key: key, Path: f.Name})
			}
			meta := metav1.ObjectMeta{Name: name}
			var mode *int32
			if v.Mode != 0 {
				m := int32(v.Mode)
				mode = &m
			}
			if v.Type == spec.VolumeConfig {
				kv.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items, DefaultMode: mode}
				objs = append(objs, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta, Data: data})
			} else {
				kv.Secret = &corev1.SecretVolumeSource{SecretName: name, Items: items, DefaultMode: mode}
				objs = append(objs, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta, StringData: data})
			}
		}
		ps.Volumes = append(ps.Volumes, kv)
	}
	if gid, err := strconv.ParseInt(g.FSGroup, 10, 64); err == nil {
		if ps.SecurityContext == nil {
			ps.SecurityContext = &corev1.PodSecurityContext{}
		}
		ps.SecurityContext.FSGroup = &gid
	}
	for _, list := range []struct {
		procs []spec.Process
		cts   []corev1.Container
	}{{g.Init, ps.InitContainers}, {g.Processes, ps.Containers}} {
		for i := range list.procs {
			for _, m := range list.procs[i].VolumeMounts {
				list.cts[i].VolumeMounts = append(list.cts[i].VolumeMounts, corev1.VolumeMount{Name: m.Volume, MountPath: m.Path, ReadOnly: m.ReadOnly, SubPath: m.SubPath})
			}
		}
	}
	if s := g.Sandbox; s != nil {
		// A Pod's hostname is one DNS label: a podsup hostname with a
		// domain is the pod's hostname and subdomain.
		if host, domain, ok := strings.Cut(ps.Hostname, "."); ok {
			ps.Hostname, ps.Subdomain = host, domain
		}
		for _, ha := range s.HostAliases {
			ps.HostAliases = append(ps.HostAliases, corev1.HostAlias{IP: ha.IP, Hostnames: ha.Hostnames})
		}
		if d := s.DNS; d != nil {
			// dnsPolicy None: the pod's resolv.conf is dnsConfig alone, as
			// a dns block is the sandbox's whole resolv.conf.
			ps.DNSPolicy = corev1.DNSNone
			ps.DNSConfig = &corev1.PodDNSConfig{Nameservers: d.Nameservers, Searches: d.Searches}
			for _, o := range d.Options {
				name, value, ok := strings.Cut(o, ":")
				opt := corev1.PodDNSConfigOption{Name: name}
				if ok {
					opt.Value = &value
				}
				ps.DNSConfig.Options = append(ps.DNSConfig.Options, opt)
			}
		}
	}
	return objs
}

// exportedData are objs (exportVolumes') as Convert reads them.
func exportedData(objs []any) dataObjects {
	out := dataObjects{}
	for _, o := range objs {
		var d *dataObject
		switch o := o.(type) {
		case *corev1.ConfigMap:
			d = configMapData(o)
		case *corev1.Secret:
			d = secretVolumeData(o)
		}
		out[[2]string{d.kind, d.name}] = d
	}
	return out
}

// volumesDelta are the volumes of want that got lacks or has otherwise:
// what the group annotation carries.
func volumesDelta(want, got []spec.Volume) []spec.Volume {
	var out []spec.Volume
	for _, v := range want {
		i := slices.IndexFunc(got, func(g spec.Volume) bool { return g.Name == v.Name })
		if i < 0 || !volumeEqual(v, got[i]) {
			out = append(out, v)
		}
	}
	return out
}

func volumeEqual(a, b spec.Volume) bool { return reflect.DeepEqual(a, b) }

// overlayVolumes replaces g's volumes by an annotation's of the same
// name and adds the others.
func overlayVolumes(g *spec.Group, frag []spec.Volume) {
	for _, v := range frag {
		if i := slices.IndexFunc(g.Volumes, func(g spec.Volume) bool { return g.Name == v.Name }); i >= 0 {
			g.Volumes[i] = v
		} else {
			g.Volumes = append(g.Volumes, v)
		}
	}
}
