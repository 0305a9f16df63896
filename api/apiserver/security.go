package apiserver

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
)

// readSecurity reads a running process's security context from /proc;
// tests replace it to describe processes whose pids are not theirs.
var readSecurity = procSecurity

// describeSecurity is a process's security context: live from /proc
// when pid > 0 (a running process), the rest from its effective context
// (sec) and its group's sandbox (sb, nil for a host group).
func describeSecurity(pid int, sec spec.Security, sb *spec.Sandbox) *api.SecurityDescription {
	d := &api.SecurityDescription{
		RunAsNonRoot: spec.IsSet(sec.RunAsNonRoot), Privileged: spec.IsSet(sec.Privileged),
		NoNewPrivileges: spec.IsSet(sec.NoNewPrivileges), Seccomp: sec.Seccomp,
		SupplementalGroups: sec.SupplementalGroups,
	}
	if sb != nil {
		d.ReadOnlyRootFilesystem, d.PrivateTmp, d.MaskedProc = sb.ReadOnlyRootFilesystem, sb.PrivateTmp, sb.MaskProc()
		d.ProcMount = sb.ProcMount
		if d.ProcMount == "" {
			d.ProcMount = spec.ProcMountDefault
		}
	}
	if pid > 0 {
		if live, ok := readSecurity(pid); ok {
			d.Live = live
		}
		d.UserNamespace = readUserNamespaced(pid)
	}
	return d
}

// readUserNamespaced reads whether pid's root is another uid on the host;
// tests replace it as readSecurity.
var readUserNamespaced = rootMappedAway

// rootMappedAway reports whether uid 0 of pid's user namespace is not uid
// 0 of the namespace above it: a rootless podsup's processes (package
// rootless). Read from the same namespace, /proc/PID/uid_map shows the
// ids of the parent namespace; from an ancestor, its own.
func rootMappedAway(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/uid_map")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		inside, err1 := strconv.ParseUint(f[0], 10, 32)
		outside, err2 := strconv.ParseUint(f[1], 10, 32)
		count, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil && err3 == nil && inside == 0 && count > 0 {
			return outside != 0
		}
	}
	return false
}

// procSecurity parses /proc/PID/status: the effective uid and gid, the
// supplementary groups, the effective, bounding and ambient capability
// sets, NoNewPrivs and the seccomp mode. false when the process is gone
// (or the kernel's status lacks the capability lines).
func procSecurity(pid int) (*api.LiveSecurity, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, false
	}
	return parseStatus(pid, b)
}

func parseStatus(pid int, b []byte) (*api.LiveSecurity, bool) {
	out := &api.LiveSecurity{Pid: pid, Groups: []int{}, Seccomp: "disabled"}
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		switch key {
		case "Uid", "Gid":
			if len(f) < 2 {
				return nil, false
			}
			n, err := strconv.Atoi(f[1]) // real, effective, saved, fs
			if err != nil {
				return nil, false
			}
			if key == "Uid" {
				out.UID = n
			} else {
				out.GID = n
			}
		case "Groups":
			for _, g := range f {
				if n, err := strconv.Atoi(g); err == nil {
					out.Groups = append(out.Groups, n)
				}
			}
		case "CapEff", "CapBnd", "CapAmb":
			if len(f) != 1 {
				return nil, false
			}
			set, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				return nil, false
			}
			seen++
			names := capNames(set)
			switch key {
			case "CapEff":
				out.CapEffective = names
			case "CapBnd":
				out.CapBounding = names
			default:
				out.CapAmbient = names
			}
		case "NoNewPrivs":
			out.NoNewPrivs = len(f) == 1 && f[0] == "1"
		case "Seccomp":
			if len(f) == 1 {
				switch f[0] {
				case "1":
					out.Seccomp = "strict"
				case "2":
					out.Seccomp = "filter"
				}
			}
		}
	}
	return out, seen == 3
}

// capNames names the capabilities of a set, in number order, without
// CAP_; never nil, so that an empty set is [] in JSON.
func capNames(set uint64) []string {
	out := []string{}
	for i := 0; i < 64; i++ {
		if set&(1<<i) == 0 {
			continue
		}
		if i < len(spec.CapabilityNames) {
			out = append(out, spec.CapabilityNames[i])
		} else {
			out = append(out, "CAP_"+strconv.Itoa(i))
		}
	}
	return out
}
