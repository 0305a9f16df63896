package kube

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/podsup/podsup/spec"
	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
)

// SeccompRoot is where kubelet looks for a Localhost seccomp profile
// (its --root-dir's seccomp directory): a localhostProfile is relative
// to it.
const SeccompRoot = "/var/lib/kubelet/seccomp"

// podSecurity is the group's security context: the pod-level
// securityContext's fields that are its containers' defaults (runAsUser
// and runAsGroup go to each process, identity).
func (c *converter) podSecurity() spec.Security {
	var s spec.Security
	sc := c.w.pod.SecurityContext
	if sc == nil {
		return s
	}
	s.RunAsNonRoot = sc.RunAsNonRoot
	for _, g := range sc.SupplementalGroups {
		s.SupplementalGroups = append(s.SupplementalGroups, strconv.FormatInt(g, 10))
	}
	s.Seccomp = c.seccomp(sc.SeccompProfile, "spec.securityContext.seccompProfile")
	return s
}

// containerSecurity is a process's own security context, from its
// container's securityContext at path at.
func (c *converter) containerSecurity(sc *corev1.SecurityContext, at string) spec.Security {
	var s spec.Security
	if sc == nil {
		return s
	}
	s.RunAsNonRoot = sc.RunAsNonRoot
	s.Privileged = sc.Privileged
	if sc.AllowPrivilegeEscalation != nil {
		s.NoNewPrivileges = spec.Bool(!*sc.AllowPrivilegeEscalation)
	}
	if caps := sc.Capabilities; caps != nil {
		s.Capabilities = &spec.Capabilities{}
		for _, n := range caps.Add {
			s.Capabilities.Add = append(s.Capabilities.Add, string(n))
		}
		for _, n := range caps.Drop {
			s.Capabilities.Drop = append(s.Capabilities.Drop, string(n))
		}
	}
	s.Seccomp = c.seccomp(sc.SeccompProfile, at+".seccompProfile")
	return s
}

// filesystem sets the sandbox's read-only root and proc mount from the
// containers' readOnlyRootFilesystem and procMount. A group's processes
// share one mount namespace, so each is the sandbox's only when every
// container (init containers too) asks for it; a container that asks
// alone is warned of by path, and gets what the others get.
func (c *converter) filesystem(s *spec.Sandbox, ns map[string]bool) {
	type ctr struct {
		sc *corev1.SecurityContext
		at string
	}
	var all []ctr
	pod := &c.w.pod
	for i := range pod.InitContainers {
		all = append(all, ctr{pod.InitContainers[i].SecurityContext, fmt.Sprintf("spec.initContainers[%d].securityContext", i)})
	}
	for i := range pod.Containers {
		all = append(all, ctr{pod.Containers[i].SecurityContext, fmt.Sprintf("spec.containers[%d].securityContext", i)})
	}
	readOnly := func(sc *corev1.SecurityContext) bool {
		return sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	}
	unmasked := func(sc *corev1.SecurityContext) bool {
		return sc != nil && sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount
	}
	every := func(f func(*corev1.SecurityContext) bool) bool {
		for _, ct := range all {
			if !f(ct.sc) {
				return false
			}
		}
		return len(all) > 0
	}
	if every(readOnly) {
		s.ReadOnlyRootFilesystem, ns["mount"] = true, true
	} else {
		for _, ct := range all {
			if readOnly(ct.sc) {
				c.r.warn(c.path(ct.at+".readOnlyRootFilesystem"), "the pod's containers share one root, read-only only when every container sets readOnlyRootFilesystem: the root stays writable")
			}
		}
	}
	if every(unmasked) {
		s.ProcMount = spec.ProcMountUnmasked
	} else {
		for _, ct := range all {
			if unmasked(ct.sc) {
				c.r.warn(c.path(ct.at+".procMount"), "the pod's containers share one /proc, unmasked only when every container sets procMount: Unmasked: its paths stay masked")
			}
		}
	}
}

// seccomp is a seccompProfile as podsup's seccomp setting.
func (c *converter) seccomp(p *corev1.SeccompProfile, at string) string {
	if p == nil {
		return ""
	}
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return spec.SeccompRuntimeDefault
	case corev1.SeccompProfileTypeUnconfined:
		return spec.SeccompUnconfined
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			c.r.fail(c.path(at+".localhostProfile"), "a Localhost profile needs localhostProfile")
			return ""
		}
		if filepath.IsAbs(*p.LocalhostProfile) {
			return *p.LocalhostProfile
		}
		return filepath.Join(SeccompRoot, *p.LocalhostProfile)
	}
	c.r.fail(c.path(at+".type"), "%q is not RuntimeDefault, Unconfined or Localhost", p.Type)
	return ""
}

// podSecurityContext is the pod-level securityContext of g's security
// context: what Kubernetes has a field for (the rest goes in an
// annotation).
func podSecurityContext(s spec.Security) *corev1.PodSecurityContext {
	var sc corev1.PodSecurityContext
	sc.RunAsNonRoot = s.RunAsNonRoot
	for _, g := range s.SupplementalGroups {
		if n, err := strconv.ParseInt(g, 10, 64); err == nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, n)
		}
	}
	sc.SeccompProfile = seccompProfile(s.Seccomp)
	if sc.RunAsNonRoot == nil && sc.SupplementalGroups == nil && sc.SeccompProfile == nil {
		return nil
	}
	return &sc
}

// containerSecurityContext fills a container's securityContext from a
// process's own security context.
func containerSecurityContext(sc *corev1.SecurityContext, s spec.Security) *corev1.SecurityContext {
	out := corev1.SecurityContext{}
	if sc != nil {
		out = *sc
	}
	out.RunAsNonRoot = s.RunAsNonRoot
	out.Privileged = s.Privileged
	if s.NoNewPrivileges != nil {
		out.AllowPrivilegeEscalation = spec.Bool(!*s.NoNewPrivileges)
	}
	if c := s.Capabilities; c != nil {
		out.Capabilities = &corev1.Capabilities{}
		for _, n := range c.Add {
			out.Capabilities.Add = append(out.Capabilities.Add, corev1.Capability(n))
		}
		for _, n := range c.Drop {
			out.Capabilities.Drop = append(out.Capabilities.Drop, corev1.Capability(n))
		}
	}
	out.SeccompProfile = seccompProfile(s.Seccomp)
	if out == (corev1.SecurityContext{}) {
		return nil
	}
	return &out
}

func seccompProfile(s string) *corev1.SeccompProfile {
	switch s {
	case "":
		return nil
	case spec.SeccompRuntimeDefault:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	case spec.SeccompUnconfined:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}
	p := s
	if rel, err := filepath.Rel(SeccompRoot, s); err == nil && !slices.Contains([]string{".", ".."}, rel) && rel[:min(3, len(rel))] != "../" {
		p = rel
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &p}
}

// writeSecurity writes the security context's fields that s sets.
func writeSecurity(b *hclwrite.Body, s spec.Security) {
	if s.RunAsNonRoot != nil {
		b.SetAttributeValue("run_as_non_root", cty.BoolVal(*s.RunAsNonRoot))
	}
	if len(s.SupplementalGroups) > 0 {
		b.SetAttributeValue("supplemental_groups", strList(s.SupplementalGroups))
	}
	if s.Umask != nil {
		str(b, "umask", spec.FormatUmask(*s.Umask))
	}
	if s.Privileged != nil {
		b.SetAttributeValue("privileged", cty.BoolVal(*s.Privileged))
	}
	if s.NoNewPrivileges != nil {
		b.SetAttributeValue("no_new_privileges", cty.BoolVal(*s.NoNewPrivileges))
	}
	str(b, "seccomp", s.Seccomp)
	if s.OOMScoreAdj != nil {
		b.SetAttributeValue("oom_score_adj", cty.NumberIntVal(int64(*s.OOMScoreAdj)))
	}
	if c := s.Capabilities; c != nil {
		cb := b.AppendNewBlock("capabilities", nil).Body()
		if len(c.Drop) > 0 {
			cb.SetAttributeValue("drop", strList(c.Drop))
		}
		if len(c.Add) > 0 {
			cb.SetAttributeValue("add", strList(c.Add))
		}
	}
	if len(s.Rlimits) > 0 {
		rb := b.AppendNewBlock("rlimits", nil).Body()
		for _, n := range s.SortedRlimitNames() {
			r := s.Rlimits[n]
			if r.Soft == r.Hard && r.Soft != spec.RlimitInfinity {
				rb.SetAttributeValue(n, cty.NumberUIntVal(r.Soft))
			} else {
				rb.SetAttributeValue(n, cty.StringVal(r.String()))
			}
		}
	}
}
