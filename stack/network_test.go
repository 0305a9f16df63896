package stack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// A CNI ADD that fails is the start's failure (X14): the Failed event
// carries the plugin's error, the group's back-off times the next try, and
// nothing of the attachment stays.
func TestFailedCNIAddIsAFailedStartWithBackOff(t *testing.T) {
	testproc.NeedRoot(t)
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		if _, err := os.Stat("/opt/cni/bin/bridge"); err != nil {
			t.Skip("the CNI plugins are not installed (apt-get install containernetworking-plugins iptables)")
		}
	}
	conf := t.TempDir()
	const list = `{"cniVersion": "1.0.0", "name": "stack-broken", "plugins": [
		{"type": "bridge", "bridge": "pst-stackbad", "mtu": "not a number"}]}`
	if err := os.WriteFile(filepath.Join(conf, "broken.conflist"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	instance := newInstance()
	cfg := spec.Config{
		Backoff: spec.Backoff{Initial: 200 * time.Millisecond, Max: time.Second, Reset: time.Minute},
		Groups: []spec.Group{{Name: "net", RestartPolicy: spec.RestartAlways,
			Sandbox: &spec.Sandbox{Namespaces: []string{"net"},
				Network: &spec.Network{Mode: spec.NetworkCNI, Name: "stack-broken", ConfDir: conf}},
			Processes: []spec.Process{{Name: "app", Command: []string{"sleep", "600"}}},
		}}}
	st, err := stack.Start(context.Background(), cfg, stack.Options{Instance: instance, Output: newLineWriter(t), RuntimeDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sub := st.Supervisor().Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	failed, backoff := 0, 0
	for failed < 2 || backoff < 1 {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("saw %d Failed and %d BackOff events: %v", failed, backoff, err)
		}
		switch e.Reason {
		case lifecycle.EventFailed:
			if !strings.Contains(e.Message, "CNI ADD") || !strings.Contains(e.Message, "failed to load netconf") {
				t.Errorf("Failed event without the plugin's error: %q", e.Message)
			}
			failed++
		case lifecycle.EventBackOff:
			backoff++
		}
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if err := st.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	// The plugin fails on its configuration, before it makes anything.
	if _, err := os.Stat("/sys/class/net/pst-stackbad"); err == nil {
		t.Error("the failed ADD left its bridge")
	}
}
