package apiserver

import (
	"os"
	"slices"
	"testing"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()
	status := "Name:\tsleep\nUid:\t0\t65534\t65534\t65534\nGid:\t0\t65534\t65534\t65534\nGroups:\t65534 4242 \n" +
		"CapInh:\t0000000000000000\nCapPrm:\t0000000000000400\nCapEff:\t0000000000000400\n" +
		"CapBnd:\t0000000000000401\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
	got, ok := parseStatus(7, []byte(status))
	if !ok || got.UID != 65534 || got.GID != 65534 || !slices.Equal(got.Groups, []int{65534, 4242}) ||
		!slices.Equal(got.CapEffective, []string{"NET_BIND_SERVICE"}) || !slices.Equal(got.CapBounding, []string{"CHOWN", "NET_BIND_SERVICE"}) ||
		len(got.CapAmbient) != 0 || got.CapAmbient == nil || !got.NoNewPrivs || got.Seccomp != "filter" {
		t.Errorf("parseStatus = %+v, %v", got, ok)
	}
	if _, ok := parseStatus(7, []byte("Name:\tx\nUid:\t0\t0\t0\t0\n")); ok {
		t.Error("a status without capability lines read as a security context")
	}
	// podsup's own test binary: what the kernel says of it.
	me, ok := procSecurity(os.Getpid())
	if !ok || me.UID != os.Geteuid() || me.Pid != os.Getpid() {
		t.Errorf("procSecurity(self) = %+v, %v", me, ok)
	}
	if _, ok := procSecurity(1 << 30); ok {
		t.Error("a pid that does not exist has a security context")
	}
}
