package sandbox

import (
	"slices"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// Spawn cost, measured as "start /bin/true until its exit is known":
//
//	go test -run '^$' -bench 'Spawn|SandboxCreateDelete|Exec' -benchtime 2000x ./sandbox/
//
// BenchmarkSpawnHost is the floor: Start on the host, no cgroup.
// BenchmarkSpawnSandbox forks through a sandbox's namespace thread into
// all five namespaces, still without a cgroup: the price of namespaces.
// BenchmarkSpawnSandboxPlaced adds the placement into an existing cgroup
// (what StartProcess does). BenchmarkExec is the whole Exec: a fresh
// cgroup per command, output pipe, cleanup.

func BenchmarkSpawnHost(b *testing.B) {
	for i := 0; i < b.N; i++ {
		spawnTrue(b, &proc.Cmd{Path: "/bin/true"})
	}
}

func benchSandbox(b *testing.B) (*Runtime, *sandboxRec) {
	testproc.NeedRoot(b)
	rt := newTestRuntime(b)
	mustCreateSandbox(b, rt, "bench", spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc", "net"}})
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt, rt.sandboxes["bench"]
}

func BenchmarkSpawnSandbox(b *testing.B) {
	_, sb := benchSandbox(b)
	f := sandboxForker{ns: sb.holder.ns}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		spawnTrue(b, &proc.Cmd{Path: "/bin/true", Forker: f})
	}
}

func BenchmarkSpawnSandboxPlaced(b *testing.B) {
	rt, sb := benchSandbox(b)
	if sb.group == nil {
		b.Skip("needs cgroups")
	}
	cg, err := sb.group.NewProcess("placed")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, fd, release, err := rt.forker(sb, cg, nil)
		if err != nil {
			b.Fatal(err)
		}
		spawnTrue(b, &proc.Cmd{Path: "/bin/true", Forker: f, UseCgroupFD: fd >= 0, CgroupFD: fd})
		release()
	}
}

func BenchmarkExec(b *testing.B) {
	rt, _ := benchSandbox(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := runIn(testCtx(b), rt, "bench", execrun.Request{Argv: []string{"/bin/true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkSandboxCreateDelete(b *testing.B) {
	testproc.NeedRoot(b)
	rt := newTestRuntime(b)
	cfg := spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc", "net"}, Hostname: "bench",
		Mounts: []spec.Mount{{Type: "proc", Target: "/proc"}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mustCreateSandbox(b, rt, "cd", cfg)
		if err := rt.DeleteSandbox(testCtx(b), "cd"); err != nil {
			b.Fatal(err)
		}
	}
}

func spawnTrue(b *testing.B, c *proc.Cmd) {
	p, err := proc.Start(c)
	if err != nil {
		b.Fatal(err)
	}
	<-p.Done()
	if p.Exit().Code() != 0 {
		b.Fatal(p.Exit())
	}
}

// Sandbox creation with a bridge network, and the CNI ADD's share of it
// (issue 30; docs/benchmarks.md):
//
//	go test -run '^$' -bench 'SandboxCreateBridge' -benchtime 50x ./sandbox/
//
// Each creation is a holder with the pid, mount and net namespaces and a
// cgroup, then the plugins' ADD (bridge with host-local IPAM, portmap with
// one published port, firewall); the deletion (DEL) is not timed.
func BenchmarkSandboxCreateBridge(b *testing.B) {
	needCNI(b)
	const bridge, subnet = "pst-bench", "10.231.9.0/24"
	rt := newNetRuntime(b, netTestOptions(b, testInstancePrefix()+"benchnet"))
	cfg := bridged(bridge, subnet, spec.Port{Name: "p", ContainerPort: 80, HostPort: 18239})
	creates := make([]time.Duration, 0, b.N)
	adds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		mustCreateSandbox(b, rt, "cb", cfg)
		creates = append(creates, time.Since(start))
		b.StopTimer()
		rt.mu.Lock()
		adds = append(adds, rt.sandboxes["cb"].net.addTook)
		rt.mu.Unlock()
		if err := rt.DeleteSandbox(testCtx(b), "cb"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	c, a := p50(creates), p50(adds)
	b.ReportMetric(float64(c.Microseconds())/1000, "p50-create-ms")
	b.ReportMetric(float64(a.Microseconds())/1000, "p50-add-ms")
	b.ReportMetric(100*float64(a)/float64(c), "add-%")
}
