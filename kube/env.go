package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// environment is a container's variables as kubelet computes them, with
// the order in which the manifest declares them.
type environment struct {
	names []string // in the manifest's order, each once
	vars  map[string]string
}

func (e *environment) set(name, value string) {
	if e.vars == nil {
		e.vars = map[string]string{}
	}
	if _, ok := e.vars[name]; !ok {
		e.names = append(e.names, name)
	}
	e.vars[name] = value // a later entry wins, as in kubelet
}

func (e *environment) lookup(name string) (string, bool) {
	v, ok := e.vars[name]
	return v, ok
}

// values is the process's env. Every $(VAR) is already expanded, each
// value with the variables declared before it, so the map's lack of order
// (podsup's env is a map, and HCL's too once read) no longer changes what
// a process gets: the order in the HCL is for whoever reads the file.
func (e *environment) values() map[string]string {
	if len(e.vars) == 0 {
		return nil
	}
	return e.vars
}

// environment follows kubelet's makeEnvironmentVariables: each env entry
// in order, its value expanded with the entries before it (a reference
// to a later or unknown one stays as written).
func (c *converter) environment(ct *corev1.Container, at string) *environment {
	env := &environment{}
	for i, e := range ct.Env {
		if e.ValueFrom != nil {
			c.r.fail(c.path(fmt.Sprintf("%s.env[%d].valueFrom", at, i)), "podsup has no downward API, ConfigMaps or Secrets: write the value of %s", e.Name)
			continue
		}
		env.set(e.Name, expand(e.Value, env.lookup))
	}
	return env
}
