package stack

import (
	"strings"
	"sync"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/podsup/podsup/hooks"
	"github.com/podsup/podsup/logs"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
)

// A hook's output reaches its process's log, marked, with a last line
// when more was written than a hook keeps; a process whose output goes to
// the journal has its hooks' there, in a stream of their own.
func TestHookOutputGoesWhereTheProcesssDoes(t *testing.T) {
	hub, err := logs.NewHub(logs.HubOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	var mu sync.Mutex
	var sent []string
	send := func(msg string, _ journal.Priority, f map[string]string) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, f["PODSUP_PROCESS"]+" "+f["PODSUP_STREAM"]+" "+msg)
		return nil
	}
	out := hookOutput(hub, send)

	a, err := hub.Attach("web", "api", "1", spec.Log{}) // the instance the hook runs for
	if err != nil {
		t.Fatal(err)
	}
	_ = a.CloseWriters()
	req := supervisor.HookRequest{Group: "web", InstanceID: "1", Point: spec.PostStart, Process: spec.Process{Name: "api"}}
	out(req, []byte(strings.Repeat("x", hooks.MaxOutput)), true)
	lines, err := hub.Tail("web", "api", 0, false)
	if err != nil || len(lines) != 2 || lines[0].Stream != logs.HookPostStart || len(lines[0].Text) != hooks.MaxOutput ||
		!strings.HasPrefix(lines[1].Text, "podsup: the rest of this hook's output was not kept") {
		t.Fatalf("%v %+v", err, lines)
	}

	req = supervisor.HookRequest{Group: "web", InstanceID: "1", Point: spec.PreStop, Process: spec.Process{Name: "j", Log: spec.Log{Journal: true}}}
	out(req, []byte("draining\nbye"), false)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"j hook:pre_stop draining", "j hook:pre_stop bye"}; strings.Join(sent, "|") != strings.Join(want, "|") {
		t.Fatalf("journal got %q, want %q", sent, want)
	}
	if _, err := hub.Tail("web", "j", 0, false); err == nil {
		t.Fatal("a journal process's hook output went to the hub too")
	}
}
