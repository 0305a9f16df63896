package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
)

// A process's exposure, in the manner of systemd-analyze security: each
// setting that narrows what the process may do has a weight; a setting
// that is off counts its whole weight, one half on counts part of it
// (capabilities); the exposure is the share of the weights counted, from
// 0.0 (every setting on) to 10.0 (wide open). It is computed here, from
// what `podsup describe` returns (the running process's /proc status and
// its group's sandbox), as systemd-analyze computes its own from the
// unit's properties: the server only reports, and one description holds
// everything the rating needs. The weights are podsup's; the rating words
// and their thresholds are systemd's (exposureRating).

// exposureSetting is one line of a process's exposure table.
type exposureSetting struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// On is whether the setting narrows the process fully; Exposure is
	// the share of Weight it counts (0 when on, 1 when off, between for
	// a capability set narrowed only to the default one).
	On       bool    `json:"on"`
	Weight   int     `json:"weight"`
	Exposure float64 `json:"exposure"`
}

// processExposure is one process's rating. A process that is not running
// has none: its identity, capabilities and seccomp mode are read from
// /proc, not guessed from the configuration.
type processExposure struct {
	Group    string            `json:"group"`
	Process  string            `json:"process"`
	Running  bool              `json:"running"`
	Exposure *float64          `json:"exposure,omitempty"`
	Rating   string            `json:"rating,omitempty"`
	Settings []exposureSetting `json:"settings,omitempty"`
}

// exposureRating is systemd-analyze security's word for an exposure
// (src/analyze/analyze-security.c): 10.0 DANGEROUS, from 9.0 UNSAFE, from
// 7.5 EXPOSED, from 5.0 MEDIUM, from 1.0 OK, from 0.1 SAFE, below that
// PERFECT.
func exposureRating(e float64) string {
	switch {
	case e >= 10:
		return "DANGEROUS"
	case e >= 9:
		return "UNSAFE"
	case e >= 7.5:
		return "EXPOSED"
	case e >= 5:
		return "MEDIUM"
	case e >= 1:
		return "OK"
	case e >= 0.1:
		return "SAFE"
	}
	return "PERFECT"
}

// rateProcess rates process p of group g (whose Sandbox may be nil).
func rateProcess(g api.GroupDescription, p api.ProcessDescription) processExposure {
	out := processExposure{Group: g.Name, Process: p.Name}
	if p.Security == nil || p.Security.Live == nil {
		return out
	}
	out.Running = true
	s, l := p.Security, p.Security.Live
	var ns []string
	var groupLimits api.Limits
	if sb := g.Sandbox; sb != nil {
		ns = sb.Namespaces
		if sb.Limits != nil {
			groupLimits = *sb.Limits
		}
	}
	var own api.Limits
	if p.Limits != nil {
		own = *p.Limits
	}
	add := func(name string, weight int, on bool, yes, no string) {
		d, e := no, 1.0
		if on {
			d, e = yes, 0
		}
		out.Settings = append(out.Settings, exposureSetting{Name: name, Description: d, On: on, Weight: weight, Exposure: e})
	}
	add("user", 15, l.UID != 0, fmt.Sprintf("runs as uid %d, not root", l.UID), "runs as root (uid 0)")
	add("no_new_privileges", 10, l.NoNewPrivs, "no_new_privs: setuid and file capabilities raise nothing", "may gain privileges through setuid or file capabilities")
	out.Settings = append(out.Settings, rateCapabilities(l.CapBounding))
	filter := l.Seccomp
	if s.Seccomp != "" {
		filter += ", " + s.Seccomp
	}
	add("seccomp", 15, l.Seccomp != "disabled", "system calls filtered ("+filter+")", "every system call allowed")
	add("read_only_root_filesystem", 8, s.ReadOnlyRootFilesystem, "the root is read-only", "the root is writable")
	add("private_tmp", 4, s.PrivateTmp, "/tmp and /var/tmp are its own", "shares the host's /tmp")
	add("masked_proc", 4, s.MaskedProc, "runc's masked /proc paths are hidden", "sees /proc/kcore, /proc/keys, /sys/firmware, ...")
	for _, n := range []struct {
		name   string
		weight int
		what   string
	}{{"pid", 4, "processes"}, {"net", 5, "network"}, {"mount", 4, "mounts"}, {"ipc", 2, "IPC objects"}, {"uts", 1, "hostname"}} {
		add(n.name+"_namespace", n.weight, slices.Contains(ns, n.name), "its own "+n.what+" ("+n.name+" namespace)", "the host's "+n.what)
	}
	add("memory_limit", 3, own.MemoryBytes > 0 || groupLimits.MemoryBytes > 0, "memory is limited", "no memory limit")
	add("pids_limit", 3, own.Pids > 0 || groupLimits.Pids > 0, "the number of processes is limited", "no limit on processes (a fork bomb)")
	add("user_namespace", 2, s.UserNamespace, "root inside is unprivileged on the host", "no user namespace: root inside is root on the host (a sandbox's user_namespace = true, or a rootless podsup, gives one)")
	var sum, total float64
	for _, st := range out.Settings {
		sum += float64(st.Weight) * st.Exposure
		total += float64(st.Weight)
	}
	e := math.Round(sum/total*100) / 10
	out.Exposure, out.Rating = &e, exposureRating(e)
	return out
}

// rateCapabilities rates the bounding set, which caps what the process
// and everything it execs can ever hold: empty, within the container
// engines' default 14 (half exposed), or beyond it.
func rateCapabilities(bounding []string) exposureSetting {
	st := exposureSetting{Name: "capabilities", Weight: 20}
	extra := 0
	for _, c := range bounding {
		if !slices.Contains(spec.DefaultCapabilities, c) {
			extra++
		}
	}
	switch {
	case len(bounding) == 0:
		st.On, st.Description = true, "bounding set empty"
	case extra == 0:
		st.Exposure, st.Description = 0.5, fmt.Sprintf("bounding set within the default %d: %d", len(spec.DefaultCapabilities), len(bounding))
	case len(bounding) >= len(spec.CapabilityNames):
		st.Exposure, st.Description = 1, fmt.Sprintf("bounding set has all %d", len(bounding))
	default:
		st.Exposure, st.Description = 1, fmt.Sprintf("bounding set has %d, %d beyond the default", len(bounding), extra)
	}
	return st
}
