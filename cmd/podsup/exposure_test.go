package main

import (
	"testing"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
)

func TestExposureRatesSettings(t *testing.T) {
	t.Parallel()
	open := api.ProcessDescription{ProcessStatus: api.ProcessStatus{Name: "p"}, Security: &api.SecurityDescription{
		Live: &api.LiveSecurity{CapBounding: spec.CapabilityNames, Seccomp: "disabled"}}}
	r := rateProcess(api.GroupDescription{Name: "g"}, open)
	if r.Exposure == nil || *r.Exposure != 10 || r.Rating != "DANGEROUS" {
		t.Errorf("an unconfined root process: %+v", r)
	}
	locked := api.ProcessDescription{ProcessStatus: api.ProcessStatus{Name: "p"}, Limits: &api.Limits{Pids: 10},
		Security: &api.SecurityDescription{ReadOnlyRootFilesystem: true, PrivateTmp: true, MaskedProc: true,
			Live: &api.LiveSecurity{UID: 65534, CapBounding: []string{}, NoNewPrivs: true, Seccomp: "filter"}}}
	g := api.GroupDescription{Name: "g", Sandbox: &api.SandboxDescription{Namespaces: []string{"pid", "net", "mount", "ipc", "uts"}, Limits: &api.Limits{MemoryBytes: 1 << 20}}}
	r = rateProcess(g, locked)
	if r.Exposure == nil || *r.Exposure != 0.2 || r.Rating != "SAFE" {
		t.Errorf("everything but a user namespace: %+v", r)
	}
	// The default set counts half.
	locked.Security.Live.CapBounding = []string{"CHOWN", "KILL"}
	if r = rateProcess(g, locked); *r.Exposure != 1.2 {
		t.Errorf("the default set: %v", *r.Exposure)
	}
	if r = rateProcess(g, api.ProcessDescription{ProcessStatus: api.ProcessStatus{Name: "p"}}); r.Running || r.Exposure != nil {
		t.Errorf("a process not running is rated: %+v", r)
	}
	for e, want := range map[float64]string{0: "PERFECT", 0.1: "SAFE", 1: "OK", 4.9: "OK", 5: "MEDIUM", 7.5: "EXPOSED", 9: "UNSAFE", 10: "DANGEROUS"} {
		if got := exposureRating(e); got != want {
			t.Errorf("exposureRating(%v) = %s, want %s", e, got, want)
		}
	}
}
