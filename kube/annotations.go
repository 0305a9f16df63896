package kube

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/spec"
)

// Annotations carry what a Pod cannot say: a group's or a process's
// podsup-only fields (back-off, the sandbox's namespaces and mounts,
// sub-second durations, the hooks beyond postStart and preStop, ...),
// written as the HCL that podsup's own file would hold for them.
//
//	podsup.dev/group            the group's fields (restart_policy,
//	                            termination_grace_period, backoff, sandbox,
//	                            depends_on)
//	podsup.dev/process.NAME     fields of the process for container NAME
//	podsup.dev/init.NAME        fields of the init for init container NAME
//
// A field written there replaces whatever the Pod's own fields gave it.
const (
	annotationPrefix  = "podsup.dev/"
	groupAnnotation   = annotationPrefix + "group"
	processAnnotation = annotationPrefix + "process."
	initAnnotation    = annotationPrefix + "init."
)

// placeholderCommand completes a process fragment so that it parses: a
// fragment never sets command (the Pod always carries it).
var placeholderCommand = []string{"/podsup.dev/fragment"}

// annotations applies the pod's podsup.dev/ annotations to g and warns
// about the others.
func (c *converter) annotations(g *spec.Group) {
	at := func(key string) string { return c.path("metadata.annotations[" + key + "]") }
	keys := make([]string, 0, len(c.w.meta.Annotations))
	for k := range c.w.meta.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := c.w.meta.Annotations[k]
		switch {
		case !strings.HasPrefix(k, annotationPrefix):
			c.r.warn(at(k), "only podsup.dev/ annotations mean something to podsup: ignored")
		case k == groupAnnotation:
			frag, err := parseFragment(groupFragment(v))
			if err != nil {
				c.r.fail(at(k), "%v", err)
				continue
			}
			overlayGroup(g, &frag.Groups[0])
		case strings.HasPrefix(k, processAnnotation), strings.HasPrefix(k, initAnnotation):
			isInit := strings.HasPrefix(k, initAnnotation)
			name := strings.TrimPrefix(strings.TrimPrefix(k, processAnnotation), initAnnotation)
			list := &g.Processes
			if isInit {
				list = &g.Init
			}
			i := slices.IndexFunc(*list, func(p spec.Process) bool { return p.Name == name })
			if i < 0 {
				c.r.fail(at(k), "the pod has no %s named %q", map[bool]string{true: "init container", false: "container"}[isInit], name)
				continue
			}
			frag, err := parseFragment(processFragment(v, isInit, isInit && spec.IsSidecar(&(*list)[i])))
			if err != nil {
				c.r.fail(at(k), "%v", err)
				continue
			}
			overlayProcess(&(*list)[i], fragmentProcess(&frag.Groups[0], isInit))
		default:
			c.r.fail(at(k), "unknown podsup annotation: want %s, %sNAME or %sNAME", groupAnnotation, processAnnotation, initAnnotation)
		}
	}
}

// groupFragment is a group annotation's body as a whole file. The groups
// its depends_on blocks name are stubs after it, so that the fragment
// validates on its own (W2); they end with the fragment.
func groupFragment(body string) string {
	s := fmt.Sprintf("group \"fragment\" {\n%s\nprocess \"fragment\" {\ncommand = %s\n}\n}\n", body, hclList(placeholderCommand))
	labels, _, _ := readBody(body)
	for _, name := range labels {
		if name != "fragment" {
			s += fmt.Sprintf("group %q {\nprocess \"stub\" {\ncommand = %s\nrestart_policy = \"never\"\n}\n}\n", name, hclList(placeholderCommand))
		}
	}
	return s
}

// readBody reads an annotation's body without validating it (the
// fragment's parse reports what is wrong with it): the names its
// depends_on blocks give, whether it sets restart_policy itself, and
// whether it has a resources block.
func readBody(body string) (labels []string, setsRestart, hasResources bool) {
	f, diags := hclsyntax.ParseConfig([]byte(body), "annotation", hcl.InitialPos)
	if diags.HasErrors() {
		return nil, false, false
	}
	b := f.Body.(*hclsyntax.Body)
	for _, blk := range b.Blocks {
		if blk.Type == "depends_on" && len(blk.Labels) == 1 && !slices.Contains(labels, blk.Labels[0]) {
			labels = append(labels, blk.Labels[0])
		}
		hasResources = hasResources || blk.Type == "resources"
	}
	_, setsRestart = b.Attributes["restart_policy"]
	return labels, setsRestart, hasResources
}

// stubProcesses are the processes (or, for an init, the inits before it)
// that a process annotation's depends_on blocks name (labels), one-shots so that
// any condition validates.
func stubProcesses(labels []string, kind string) string {
	var s string
	for _, name := range labels {
		if name == "fragment" || kind == "init" && name == "main" { // an init's fragment has its own "main"
			continue
		}
		policy := "" // an init stub is a plain init: it runs once
		if kind == "process" {
			policy = "restart_policy = \"never\"\n"
		}
		s += fmt.Sprintf("%s %q {\ncommand = %s\n%s}\n", kind, name, hclList(placeholderCommand), policy)
	}
	return s
}

// processFragment is an annotation's body as a whole file. For a
// sidecar's, the fragment is a sidecar too, so that the probes a sidecar
// may have validate (O5), and a process with resources is in a group with
// a sandbox; the lines go after the body, which keeps the positions of
// its errors.
func processFragment(body string, isInit, sidecar bool) string {
	kind := "process"
	if isInit {
		kind = "init"
	}
	labels, setsRestart, hasResources := readBody(body)
	if sidecar && !setsRestart {
		body += "\nrestart_policy = \"always\""
	}
	// An init's stubs are earlier inits (I1: an init may depend only on
	// those); they come first and shift its lines.
	var before, after string
	if isInit {
		before = stubProcesses(labels, "init")
	} else {
		after = stubProcesses(labels, "process")
	}
	if hasResources {
		// A process's own cgroup is inside its group's: the group the
		// annotation belongs to has a sandbox (its annotation says so).
		after += "sandbox {}\n"
	}
	s := fmt.Sprintf("group \"fragment\" {\n%s%s \"fragment\" {\ncommand = %s\n%s\n}\n%s", before, kind, hclList(placeholderCommand), body, after)
	if isInit {
		s += fmt.Sprintf("process \"main\" {\ncommand = %s\n}\n", hclList(placeholderCommand))
	}
	return s + "}\n"
}

func hclList(l []string) string {
	return string(hclwrite.TokensForValue(strList(l)).Bytes())
}

// parseFragment reads an annotation's HCL through podsup's own loader,
// so that it is checked exactly as a file would be.
func parseFragment(src string) (*spec.Config, error) {
	cfg, err := config.Parse([]byte(src), "annotation")
	if err != nil {
		return nil, fmt.Errorf("not valid podsup HCL: %w", err)
	}
	return cfg, nil
}

// overlayGroup sets on g every group-level field that frag sets.
func overlayGroup(g, frag *spec.Group) {
	if frag.RestartPolicy != "" {
		g.RestartPolicy = frag.RestartPolicy
	}
	if frag.TerminationGracePeriod != nil {
		g.TerminationGracePeriod = frag.TerminationGracePeriod
	}
	if frag.Backoff != nil {
		g.Backoff = frag.Backoff
	}
	if frag.BackoffLimit != nil {
		g.BackoffLimit = frag.BackoffLimit
	}
	if frag.Sandbox != nil {
		g.Sandbox = frag.Sandbox
	}
	if frag.DependsOn != nil {
		g.DependsOn = frag.DependsOn
	}
	overlayVolumes(g, frag.Volumes)
	if frag.FSGroup != "" {
		g.FSGroup = frag.FSGroup
	}
	if !frag.Security.IsZero() {
		g.Security = frag.Security // whole: the export writes it whole
	}
}

// overlayProcess sets on p every field that frag sets, but its name and
// command (a fragment's are placeholders).
func overlayProcess(p, frag *spec.Process) {
	pv, fv := reflect.ValueOf(p).Elem(), reflect.ValueOf(frag).Elem()
	for i := 0; i < fv.NumField(); i++ {
		switch fv.Type().Field(i).Name {
		case "Name", "Command":
			continue
		}
		if !fv.Field(i).IsZero() {
			pv.Field(i).Set(fv.Field(i))
		}
	}
}

// processDelta is the process holding only the fields of want that got
// differs in (name and command aside).
func processDelta(want, got *spec.Process) spec.Process {
	var out spec.Process
	wv, gv, ov := reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem(), reflect.ValueOf(&out).Elem()
	for i := 0; i < wv.NumField(); i++ {
		switch wv.Type().Field(i).Name {
		case "Name", "Command":
			continue
		}
		if !reflect.DeepEqual(wv.Field(i).Interface(), gv.Field(i).Interface()) {
			ov.Field(i).Set(wv.Field(i))
		}
	}
	return out
}

// fragmentBody is the HCL that write writes, formatted, without the
// file's trailing newline: an annotation's value.
func fragmentBody(write func(*hclwrite.Body)) string {
	f := hclwrite.NewEmptyFile()
	write(f.Body())
	return strings.TrimSpace(string(hclwrite.Format(f.Bytes())))
}

// fragmentProcess is the process (or init) named "fragment" of a parsed
// fragment: the stubs its depends_on blocks brought are others.
func fragmentProcess(g *spec.Group, isInit bool) *spec.Process {
	list := g.Processes
	if isInit {
		list = g.Init
	}
	for i := range list {
		if list[i].Name == "fragment" {
			return &list[i]
		}
	}
	return &list[0] // cannot happen: the fragment names it so
}
