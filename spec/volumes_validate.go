package spec

import (
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
)

// volumes checks a group's volumes and its processes' volume mounts.
// Mounts are made in the group's sandbox, whose mount namespace every
// process shares: two mounts of one path must mount the same thing.
func (ch *checker) volumes(p []string, g *Group) {
	if g.FSGroup != "" && strings.ContainsAny(g.FSGroup, " \t\n:") {
		ch.add(at(p, "fs_group"), "fs_group must be a group name or number, got %q", g.FSGroup)
	}
	seen := map[string]bool{}
	for i := range g.Volumes {
		v := &g.Volumes[i]
		vp := at(p, "volume", v.Name)
		if !ValidName(v.Name) {
			ch.add(vp, "volume name %q is not valid: use 1-63 letters, digits, '-', '_' or '.', starting with a letter or digit", v.Name)
		}
		if seen[v.Name] {
			ch.add(vp, "duplicate volume %q: volume names must be unique in a group", v.Name)
		}
		seen[v.Name] = true
		ch.volume(vp, v)
	}
	type mounted struct {
		vm   VolumeMount
		path []string
	}
	byPath := map[string]mounted{}
	for _, list := range []struct {
		kind  string
		procs []Process
	}{{"init", g.Init}, {"process", g.Processes}} {
		for _, pr := range list.procs {
			for i, vm := range pr.VolumeMounts {
				mp := at(p, list.kind, pr.Name, "volume_mount", strconv.Itoa(i))
				if !g.Sandbox.HasNamespace("mount") {
					ch.add(at(mp, "volume"), "a volume_mount needs the group's sandbox to have the \"mount\" namespace (sandbox { namespaces = [\"mount\"] }), or it would mount on the host")
				}
				if g.Volume(vm.Volume) == nil {
					ch.add(at(mp, "volume"), "volume %q is not a volume of group %q", vm.Volume, g.Name)
				}
				if !path.IsAbs(vm.Path) || path.Clean(vm.Path) != vm.Path {
					ch.add(at(mp, "path"), "path must be a clean absolute path, got %q", vm.Path)
				} else if vm.Path == "/" {
					ch.add(at(mp, "path"), "path \"/\" would hide the sandbox's root")
				}
				if vm.SubPath != "" && !relativeInside(vm.SubPath) {
					ch.add(at(mp, "sub_path"), "sub_path must be a relative path inside the volume, without \"..\", got %q", vm.SubPath)
				}
				if prev, ok := byPath[vm.Path]; ok && prev.vm != vm {
					ch.add(at(mp, "path"), "%s is also mounted by %s with another volume_mount: the group's processes share its sandbox's mounts, so one path mounts one thing", vm.Path, strings.Join(prev.path[2:4], " "))
				}
				if _, ok := byPath[vm.Path]; !ok {
					byPath[vm.Path] = mounted{vm, mp}
				}
			}
		}
	}
}

func (ch *checker) volume(p []string, v *Volume) {
	if !slices.Contains(VolumeTypes, v.Type) {
		ch.add(at(p, "type"), "volume type %q is not one of %s", v.Type, strings.Join(quote(VolumeTypes), ", "))
		return
	}
	if v.Type != VolumeEmptyDir && (v.Medium != "" || v.SizeLimit != 0) {
		ch.add(p, "medium and size_limit are an empty_dir's, not a %s's", v.Type)
	}
	if v.Type != VolumeHostPath && (v.Path != "" || v.HostPathType != "") {
		ch.add(p, "path and host_path_type are a host_path's, not a %s's", v.Type)
	}
	if v.Type != VolumeConfig && v.Type != VolumeSecret && len(v.Files) > 0 {
		ch.add(p, "file blocks are a config's or a secret's, not a %s's", v.Type)
	}
	if v.Type != VolumeConfig && v.Type != VolumeSecret && v.Mode != 0 {
		ch.add(at(p, "mode"), "mode is a config's or a secret's: it sets the mode of their files")
	}
	if v.Mode > 0o777 {
		ch.add(at(p, "mode"), "mode must be permission bits, from \"0000\" to \"0777\", got %s", FormatUmask(v.Mode))
	}
	if v.Type != VolumeConfig && v.Type != VolumeSecret && v.RestartOnChange {
		ch.add(at(p, "restart_on_change"), "restart_on_change is a config's or a secret's: a %s's files are not rewritten by a reload", v.Type)
	}
	switch v.Type {
	case VolumeEmptyDir:
		if v.Medium != "" && v.Medium != "memory" {
			ch.add(at(p, "medium"), "medium must be \"memory\" or left out (a directory on disk), got %q", v.Medium)
		}
		if v.SizeLimit < 0 {
			ch.add(at(p, "size_limit"), "size_limit must not be negative")
		}
		if v.SizeLimit > 0 && v.Medium != "memory" {
			ch.add(at(p, "size_limit"), "size_limit caps a medium = \"memory\" empty_dir (a tmpfs); podsup does not count a disk empty_dir's use")
		}
	case VolumeHostPath:
		if !path.IsAbs(v.Path) || path.Clean(v.Path) != v.Path {
			ch.add(at(p, "path"), "a host_path needs a clean absolute path, got %q", v.Path)
		}
		if v.HostPathType != "" && !slices.Contains(HostPathTypes, v.HostPathType) {
			ch.add(at(p, "host_path_type"), "host_path_type %q is not one of %s", v.HostPathType, strings.Join(quote(HostPathTypes), ", "))
		}
	case VolumeConfig, VolumeSecret:
		names := map[string]bool{}
		for _, f := range v.Files {
			fp := at(p, "file", f.Name)
			// Names starting with ".." are the writer's own (..data).
			if !relativeInside(f.Name) || strings.HasPrefix(f.Name, "..") {
				ch.add(fp, "file name must be a relative path inside the volume, not starting with \"..\", got %q", f.Name)
			}
			if names[f.Name] {
				ch.add(fp, "duplicate file %q in volume %q", f.Name, v.Name)
			}
			names[f.Name] = true
			if f.Source != "" && f.Content != "" {
				ch.add(fp, "a file takes content or source, not both")
			}
			if f.Source != "" && !path.IsAbs(f.Source) {
				ch.add(at(fp, "source"), "source must be an absolute path, got %q", f.Source)
			}
		}
		for n := range names {
			for dir := path.Dir(n); dir != "."; dir = path.Dir(dir) {
				if names[dir] {
					ch.add(at(p, "file", n), "file %q is inside file %q", n, dir)
				}
			}
		}
	}
}

// relativeInside reports whether s is a clean relative path that stays
// inside the directory it is relative to.
func relativeInside(s string) bool {
	if s == "" || path.IsAbs(s) || path.Clean(s) != s {
		return false
	}
	return s != ".." && !strings.HasPrefix(s, "../")
}

// names checks a sandbox's /etc/hosts and /etc/resolv.conf settings.
func (ch *checker) names(p []string, s *Sandbox) {
	if (len(s.HostAliases) > 0 || s.DNS != nil) && !s.HasNamespace("mount") {
		ch.add(p, "host_alias and dns write the sandbox's own /etc/hosts and /etc/resolv.conf, which needs the \"mount\" namespace")
	}
	for i, ha := range s.HostAliases {
		hp := at(p, "host_alias", strconv.Itoa(i))
		if net.ParseIP(ha.IP) == nil {
			ch.add(at(hp, "ip"), "ip must be an IP address, got %q", ha.IP)
		}
		if len(ha.Hostnames) == 0 {
			ch.add(at(hp, "hostnames"), "a host_alias needs at least one hostname")
		}
		for _, h := range ha.Hostnames {
			if !validHostname(h) {
				ch.add(at(hp, "hostnames"), "hostname %q is not a DNS name", h)
			}
		}
	}
	if d := s.DNS; d != nil {
		dp := at(p, "dns")
		for _, ns := range d.Nameservers {
			if net.ParseIP(ns) == nil {
				ch.add(at(dp, "nameservers"), "nameserver %q is not an IP address", ns)
			}
		}
		// resolv(5) reads at most 3 nameservers and 6 search domains
		// (kubelet's limits too).
		if len(d.Nameservers) > 3 {
			ch.add(at(dp, "nameservers"), "at most 3 nameservers are used by the resolver, got %d", len(d.Nameservers))
		}
		if len(d.Searches) > 32 {
			ch.add(at(dp, "searches"), "at most 32 search domains, got %d", len(d.Searches))
		}
		for _, sd := range d.Searches {
			if !validHostname(strings.TrimSuffix(sd, ".")) {
				ch.add(at(dp, "searches"), "search domain %q is not a DNS name", sd)
			}
		}
		for _, o := range d.Options {
			if o == "" || strings.ContainsAny(o, " \t\n") {
				ch.add(at(dp, "options"), "option %q must be one word, \"name\" or \"name:value\"", o)
			}
		}
	}
}

// validHostname reports whether h is a DNS name: dot-separated labels of
// letters, digits and '-', none starting or ending with '-'.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
