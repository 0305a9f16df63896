package proc_test

import (
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/sandbox/seccomp"
	"golang.org/x/sys/unix"
)

// runcDefaultCaps are the 14 capabilities runc and containerd give a
// container by default.
var runcDefaultCaps = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
	"SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// BenchmarkSpawnDefaultProfile is BenchmarkSpawnUntilExitKnown with and
// without the whole default profile (runc's capabilities, no_new_privs,
// seccomp runtime/default), interleaved spawn by spawn so that both see
// the same machine; it reports each one's time per spawn and their ratio:
//
//	go test -run '^$' -bench SpawnDefaultProfile -benchtime 3000x -count 5 ./sandbox/proc
func BenchmarkSpawnDefaultProfile(b *testing.B) {
	var caps proc.CapSet
	for _, c := range runcDefaultCaps {
		n, _ := seccomp.CapNumber(c)
		caps |= 1 << n
	}
	filter, err := seccomp.Named(seccomp.RuntimeDefault, caps)
	if err != nil {
		b.Fatal(err)
	}
	profile := &proc.Security{Capabilities: &caps, NoNewPrivs: true, Seccomp: filter}
	// The same profile through the pre-exec shim (an exec of this binary
	// first): the path a spawn into a cgroup v2 directory takes, where the
	// fork is a clone3 that runtime/default would deny on the profile's
	// thread. An rlimit that changes nothing puts it there on any host.
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		b.Fatal(err)
	}
	shimmed := *profile
	shimmed.Rlimits = []proc.Rlimit{{Resource: unix.RLIMIT_NOFILE, Soft: nofile.Cur, Hard: nofile.Max}}
	spawn := func(sec *proc.Security) time.Duration {
		t0 := time.Now()
		p, err := proc.Start(&proc.Cmd{Path: "/bin/true", Args: []string{"true"}, Security: sec})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
		return time.Since(t0)
	}
	spawn(profile) // the profile thread's set-up, once per profile
	spawn(&shimmed)
	var none, def, shim time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		switch i % 3 { // rotate which goes first
		case 0:
			none += spawn(nil)
			def += spawn(profile)
			shim += spawn(&shimmed)
		case 1:
			def += spawn(profile)
			shim += spawn(&shimmed)
			none += spawn(nil)
		default:
			shim += spawn(&shimmed)
			none += spawn(nil)
			def += spawn(profile)
		}
	}
	b.ReportMetric(float64(none.Nanoseconds())/float64(b.N), "ns/spawn-none")
	b.ReportMetric(float64(def.Nanoseconds())/float64(b.N), "ns/spawn-default")
	b.ReportMetric(float64(shim.Nanoseconds())/float64(b.N), "ns/spawn-default-shim")
	b.ReportMetric(float64(def)/float64(none), "default/none")
	b.ReportMetric(float64(shim)/float64(none), "shim/none")
}
