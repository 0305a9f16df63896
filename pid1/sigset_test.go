package pid1

import (
	"testing"
	"unsafe"
)

// The layout matches the kernel's on this architecture: 128 bytes, si_pid
// where the pointer-aligned union starts.
func TestSiginfoLayout(t *testing.T) {
	var info siginfo
	word := unsafe.Sizeof(uintptr(0))
	if got, want := unsafe.Offsetof(info.Pid), (12+word-1)&^(word-1); got != want {
		t.Errorf("si_pid at offset %d, want %d", got, want)
	}
	if got := unsafe.Sizeof(info); got != 128 {
		t.Errorf("siginfo is %d bytes, want 128", got)
	}
}
