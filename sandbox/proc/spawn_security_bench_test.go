package proc_test

import (
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/sandbox/seccomp"
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
	var none, def time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 { // alternate which goes first
			none += spawn(nil)
			def += spawn(profile)
		} else {
			def += spawn(profile)
			none += spawn(nil)
		}
	}
	b.ReportMetric(float64(none.Nanoseconds())/float64(b.N), "ns/spawn-none")
	b.ReportMetric(float64(def.Nanoseconds())/float64(b.N), "ns/spawn-default")
	b.ReportMetric(float64(def)/float64(none), "default/none")
}
