package sandbox

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// keptCgroup is a process cgroup that outlives the process records placed
// in it, one after another: the instances of one supervised process
// (ProcessConfig.Cgroup). The first CreateProcess naming it creates it;
// later ones reuse it, so a restart costs no mkdir or rmdir. Its placement
// is opened for each start and closed after it (an open and a close per
// restart): kept open, it cost podsup an fd per process for the process's
// whole life, and 10,000 processes would not fit in a 20,000-fd limit.
// DeleteSandbox removes it.
type keptCgroup struct {
	name string
	cg   *cgroups.Process

	// mu is held across every signal to the cgroup's tree and across a
	// change of holder: a kill on behalf of an old record that checked it
	// still held the cgroup cannot run on into the next instance.
	mu sync.Mutex
	// holder is the latest record placed in it; its tree is the cgroup's.
	// nil once that record is removed. Guarded by mu.
	holder *procRec
	// oomSeen and cpuSeen (guarded by rt.mu) are the cgroup's cumulative OOM-kill count and
	// CPU time read at the last exit: the baselines of the next instance,
	// whose own figures are the differences.
	oomSeen uint64
	cpuSeen time.Duration
	// limits are the resources last written to it (guarded by the
	// sandbox's keptMu): a holder with other limits (a reloaded process)
	// rewrites them.
	limits spec.Resources
	// last (guarded by rt.mu) is the CPU figure of the latest exit, where
	// the next instance's own CPU time begins; nil before any exit.
	last *exitFigures
	// ready, once a holder asked for it (ProcessConfig.KeepReady), keeps
	// the cgroup's directory and cgroup.events open; set once, under the
	// sandbox's keptMu, and closed with the cgroup's record.
	ready atomic.Pointer[cgroups.Ready]
}

// keepReady opens k's ready files once, where they can be kept; a cgroup
// whose files cannot be kept ready opens each anew, as before. The caller
// holds the sandbox's keptMu.
func (k *keptCgroup) keepReady() {
	if k.ready.Load() != nil {
		return
	}
	if r, err := k.cg.OpenReady(); err == nil {
		k.ready.Store(r)
		proc.HoldFDs(2)
	}
}

// closeReady closes k's ready files, if any. The caller holds the
// sandbox's keptMu.
func (k *keptCgroup) closeReady() {
	if r := k.ready.Swap(nil); r != nil {
		r.Close()
		proc.HoldFDs(-2)
	}
}

// exitFigures is a kept cgroup's cumulative CPU time read after an exit:
// the exited instance's figure ends there and the next one's begins.
//
// It is read after the exit is reported, not before, and the next
// instance's fork does not wait for it: cgroup2's cpu.stat flushes the
// kernel's per-CPU counters first, which right after an exit was the
// largest single cost of a restart above the fork+exec floor
// (docs/benchmarks.md, S1). The read begins at once and is done, as a rule,
// long before the next fork; when it is not, the CPU the new instance used
// until then (a few microseconds of its exec) counts as its predecessor's.
type exitFigures struct {
	read chan struct{} // closed once cpu is set
	cpu  time.Duration // guarded by read
}

// keepCgroup finds or creates sb's kept cgroup name with limits r and
// makes pr its holder; ready keeps its files open from now on
// (ProcessConfig.KeepReady). A cgroup whose holder has not exited yet is
// refused: two live records in one cgroup could not tell their trees, OOM
// kills or usage apart.
func (rt *Runtime) keepCgroup(sb *sandboxRec, name string, r spec.Resources, ready bool, pr *procRec) (*keptCgroup, error) {
	if err := validID("cgroup", name); err != nil {
		return nil, err
	}
	sb.keptMu.Lock()
	defer sb.keptMu.Unlock()
	rt.mu.Lock()
	k := sb.kept[name]
	rt.mu.Unlock()
	if k != nil {
		if err := rt.takeOver(k, pr); err != nil {
			return nil, err
		}
		if k.limits != r {
			// Its holder has exited: nothing runs under the old limits.
			if err := k.cg.SetResources(r); err != nil {
				k.mu.Lock()
				k.holder = nil // pr is not created: nothing holds it
				k.mu.Unlock()
				return nil, err
			}
			k.limits = r
		}
		if ready {
			k.keepReady()
		}
		return k, nil
	}
	cg, err := sb.group.NewProcess(name)
	if err == nil && r != (spec.Resources{}) {
		if err = cg.SetResources(r); err != nil {
			_ = cg.Delete() // just made and empty; the limit's error is the one to report
		}
	}
	if err != nil {
		if errors.Is(err, cgroups.ErrExist) {
			err = fmt.Errorf("%w: %w", ErrAlreadyExists, err)
		}
		return nil, err
	}
	k = &keptCgroup{name: name, cg: cg, holder: pr, limits: r}
	if ready {
		k.keepReady()
	}
	rt.mu.Lock()
	sb.kept[name] = k
	rt.mu.Unlock()
	return k, nil
}

// takeOver makes pr the holder of k once the previous holder has exited.
func (rt *Runtime) takeOver(k *keptCgroup, pr *procRec) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if h := k.holder; h != nil {
		rt.mu.Lock()
		state, ended := h.stateLocked(), h.ended
		rt.mu.Unlock()
		if !ended {
			return fmt.Errorf("cgroup %q is held by process %q (%s): %w", k.name, h.id, state, ErrFailedPrecondition)
		}
	}
	k.holder = pr
	return nil
}

// releaseKept lets go of pr's hold on its kept cgroup (the cgroup stays).
func (rt *Runtime) releaseKept(pr *procRec) {
	if pr.kept == nil {
		return
	}
	pr.kept.mu.Lock()
	if pr.kept.holder == pr {
		pr.kept.holder = nil
	}
	pr.kept.mu.Unlock()
}

// forgetKept forgets pr's kept cgroup once its directory is removed
// (RetireProcess): a later process naming it makes it anew.
func (rt *Runtime) forgetKept(pr *procRec) {
	k := pr.kept
	if k == nil {
		return
	}
	sb := pr.sb
	sb.keptMu.Lock()
	defer sb.keptMu.Unlock()
	rt.mu.Lock()
	if sb.kept[k.name] == k {
		delete(sb.kept, k.name)
	}
	rt.mu.Unlock()
	k.closeReady()
}

// closeKept forgets sb's kept cgroups; DeleteSandbox removes the
// directories with the group's.
func (rt *Runtime) closeKept(sb *sandboxRec) {
	sb.keptMu.Lock()
	defer sb.keptMu.Unlock()
	for _, k := range sb.kept {
		k.closeReady()
	}
	clear(sb.kept)
}

// keptTree is the tree of a record in a kept cgroup: the cgroup while the
// record holds it. Once a newer record holds it the old one's tree is
// gone (what it left was killed before the newer one started, or belongs
// to the newer one's tree now), so signalling it reaches nothing rather
// than the newer instance.
type keptTree struct {
	rt *Runtime
	pr *procRec
}

func (t keptTree) KillTree(sig syscall.Signal) error {
	k := t.pr.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.holder != t.pr {
		return proc.ErrProcessDone
	}
	return k.cg.KillTree(sig)
}

// oomSince tells from the cgroup's cumulative OOM-kill count at an exit
// whether that instance was OOM-killed, and moves the baseline on. The
// caller holds rt.mu.
func (k *keptCgroup) oomSince(kills uint64) bool {
	oom := kills > k.oomSeen
	k.oomSeen = kills
	return oom
}

// cpuSince turns the cgroup's cumulative CPU time after an exit into the
// instance's own and moves the baseline on. The caller holds rt.mu.
func (k *keptCgroup) cpuSince(cpu time.Duration) time.Duration {
	own := max(cpu-k.cpuSeen, 0)
	k.cpuSeen = cpu
	return own
}
