// Package seccomp compiles seccomp profiles into the classic-BPF filters
// package proc installs: the built-in runtime/default (Docker's and
// containerd's default profile, chosen by the capabilities the process
// keeps, as theirs is), and profiles in the OCI/Docker JSON format. Pure
// Go, for the running architecture only: its system call table is
// generated from golang.org/x/sys/unix (go generate; internal/gensysnum).
//
// The filter checks the architecture first (another one, or x32 on amd64,
// is killed), dispatches on the system call number through a binary
// search, then checks a call's argument conditions, each 64-bit
// comparison as two 32-bit halves. Names the architecture lacks are
// skipped, as runc skips them.
package seccomp

//go:generate sh -c "go run ./internal/gensysnum $(go list -m -f {{.Dir}} golang.org/x/sys)/unix"

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"

	"github.com/podsup/podsup/sandbox/proc"
	"golang.org/x/sys/unix"
)

// The profile names a config may give besides a path.
const (
	RuntimeDefault = "runtime/default"
	Unconfined     = "unconfined"
)

// Profile is a seccomp profile in the OCI/Docker JSON format.
type Profile struct {
	DefaultAction   string    `json:"defaultAction"`
	DefaultErrnoRet *uint     `json:"defaultErrnoRet,omitempty"`
	Architectures   []string  `json:"architectures,omitempty"`
	ArchMap         []ArchMap `json:"archMap,omitempty"`
	Syscalls        []Syscall `json:"syscalls"`
}

// ArchMap is Docker's form of Architectures.
type ArchMap struct {
	Architecture     string   `json:"architecture"`
	SubArchitectures []string `json:"subArchitectures"`
}

// Syscall is one rule: the calls it names, when its Args hold, get Action.
type Syscall struct {
	Names    []string `json:"names,omitempty"`
	Name     string   `json:"name,omitempty"` // the older form
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []Arg    `json:"args,omitempty"`
	Includes *Filter  `json:"includes,omitempty"`
	Excludes *Filter  `json:"excludes,omitempty"`
}

// Filter is Docker's condition on a rule: the capabilities the process
// keeps, the architecture.
type Filter struct {
	Caps   []string `json:"caps,omitempty"`
	Arches []string `json:"arches,omitempty"`
}

// Arg is a condition on argument Index.
type Arg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

// Load reads a profile file and compiles it for a process keeping caps.
func Load(path string, caps proc.CapSet) (*proc.SeccompFilter, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("seccomp profile %s: %w", path, err)
	}
	return Compile(&p, path, caps)
}

// Named compiles a profile named in a config: RuntimeDefault, Unconfined
// (nil: no filter) or a path.
func Named(name string, caps proc.CapSet) (*proc.SeccompFilter, error) {
	switch name {
	case Unconfined, "":
		return nil, nil
	case RuntimeDefault:
		return Compile(DefaultProfile(), RuntimeDefault, caps)
	}
	return Load(name, caps)
}

// goArchNames are the SCMP_ARCH_* names of the running architecture.
var goArchNames = map[string][]string{
	"amd64": {"SCMP_ARCH_X86_64", "amd64"}, "arm64": {"SCMP_ARCH_AARCH64", "arm64"},
	"386": {"SCMP_ARCH_X86", "x86"}, "arm": {"SCMP_ARCH_ARM", "arm"},
	"riscv64": {"SCMP_ARCH_RISCV64", "riscv64"}, "ppc64le": {"SCMP_ARCH_PPC64LE", "ppc64le"},
	"s390x": {"SCMP_ARCH_S390X", "s390x"},
}

// ErrForkSyscallDenied is a profile that denies a call podsup's spawning
// thread makes under the filter (proc.ForkSyscalls).
var ErrForkSyscallDenied = errors.New("denies a system call podsup makes to start the process")

// Compile compiles p for the running architecture and a process keeping
// caps (rules with includes/excludes of capabilities apply accordingly).
func Compile(p *Profile, name string, caps proc.CapSet) (*proc.SeccompFilter, error) {
	def, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile %s: defaultAction: %w", name, err)
	}
	if !archListed(p) {
		// The profile is for other architectures: nothing of ours is
		// allowed, as libseccomp would have it.
		return nil, fmt.Errorf("seccomp profile %s: not for %s", name, runtime.GOARCH)
	}
	rules := map[uint32][]rule{}
	for i, sc := range p.Syscalls {
		if !applies(sc, caps) {
			continue
		}
		act, err := action(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("seccomp profile %s: syscalls[%d]: %w", name, i, err)
		}
		for _, a := range sc.Args {
			if a.Index > 5 || opCode(a.Op) < 0 {
				return nil, fmt.Errorf("seccomp profile %s: syscalls[%d]: bad argument condition %+v", name, i, a)
			}
		}
		names := sc.Names
		if sc.Name != "" {
			names = append(slices.Clone(names), sc.Name)
		}
		for _, n := range names {
			nr, ok := syscalls[n]
			if !ok {
				continue // not on this architecture: skipped, as runc does
			}
			rules[nr] = append(rules[nr], rule{args: sc.Args, action: act})
		}
	}
	prog, err := assemble(rules, def)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile %s: %w", name, err)
	}
	f := &proc.SeccompFilter{Program: prog, Name: name}
	switch def {
	case unix.SECCOMP_RET_KILL_THREAD, unix.SECCOMP_RET_KILL_PROCESS, unix.SECCOMP_RET_TRAP:
		f.KillsUnlisted = true
	}
	if err := checkFork(prog); err != nil {
		return nil, fmt.Errorf("seccomp profile %s %w", name, err)
	}
	if nr, ok := syscalls["clone3"]; ok {
		act, _ := Run(prog, Data{Nr: int32(nr), Arch: auditArch}, bigEndian)
		f.AllowsClone3 = act == unix.SECCOMP_RET_ALLOW
	}
	return f, nil
}

func archListed(p *Profile) bool {
	if len(p.Architectures) == 0 && len(p.ArchMap) == 0 {
		return true
	}
	ours := goArchNames[runtime.GOARCH]
	for _, a := range p.Architectures {
		if slices.Contains(ours, a) {
			return true
		}
	}
	for _, m := range p.ArchMap {
		if slices.Contains(ours, m.Architecture) {
			return true
		}
	}
	return false
}

func applies(sc Syscall, caps proc.CapSet) bool {
	ours := goArchNames[runtime.GOARCH]
	if in := sc.Includes; in != nil {
		for _, c := range in.Caps {
			if n, ok := CapNumber(c); !ok || !caps.Has(n) {
				return false
			}
		}
		if len(in.Arches) > 0 && !slices.ContainsFunc(in.Arches, func(a string) bool { return slices.Contains(ours, a) }) {
			return false
		}
	}
	if ex := sc.Excludes; ex != nil {
		for _, c := range ex.Caps {
			if n, ok := CapNumber(c); ok && caps.Has(n) {
				return false
			}
		}
		if slices.ContainsFunc(ex.Arches, func(a string) bool { return slices.Contains(ours, a) }) {
			return false
		}
	}
	return true
}

type rule struct {
	args   []Arg
	action uint32
}

func action(name string, errnoRet *uint) (uint32, error) {
	errno := uint32(unix.EPERM)
	if errnoRet != nil {
		if *errnoRet > 0xffff {
			return 0, fmt.Errorf("errnoRet %d out of range", *errnoRet)
		}
		errno = uint32(*errnoRet)
	}
	switch name {
	case "SCMP_ACT_ALLOW":
		return unix.SECCOMP_RET_ALLOW, nil
	case "SCMP_ACT_ERRNO":
		return unix.SECCOMP_RET_ERRNO | errno, nil
	case "SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD":
		return unix.SECCOMP_RET_KILL_THREAD, nil
	case "SCMP_ACT_KILL_PROCESS":
		return unix.SECCOMP_RET_KILL_PROCESS, nil
	case "SCMP_ACT_TRAP":
		return unix.SECCOMP_RET_TRAP, nil
	case "SCMP_ACT_LOG":
		return unix.SECCOMP_RET_LOG, nil
	}
	return 0, fmt.Errorf("action %q is not one of SCMP_ACT_ALLOW, ERRNO, KILL, KILL_THREAD, KILL_PROCESS, TRAP, LOG", name)
}

func opCode(op string) int {
	return slices.Index([]string{"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"}, op)
}

// assemble lays out: the architecture check, a binary search on the
// number, then each call's rules in order (the first whose conditions
// all hold gives its action; none: the default).
func assemble(rules map[uint32][]rule, def uint32) ([]proc.SockFilter, error) {
	a := newAsm()
	a.ld(4)
	a.jmp(unix.BPF_JEQ, auditArch, 1, 0)
	a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	a.ld(0)
	if auditArch == 0xc000003e {
		// x32 calls carry the x86_64 audit arch and bit 30 of the number.
		a.jmp(unix.BPF_JGE, 0x40000000, 0, 1)
		a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	}
	nrs := make([]uint32, 0, len(rules))
	for nr := range rules {
		nrs = append(nrs, nr)
	}
	sort.Slice(nrs, func(i, j int) bool { return nrs[i] < nrs[j] })
	defLabel := a.newLabel()
	blocks := map[uint32]label{}
	for _, nr := range nrs {
		blocks[nr] = a.newLabel()
	}
	var search func(lo, hi int)
	search = func(lo, hi int) { // nrs[lo:hi], the number in the accumulator
		if hi-lo <= 4 {
			for _, nr := range nrs[lo:hi] {
				a.jmp(unix.BPF_JEQ, nr, 0, 1)
				a.ja(blocks[nr])
			}
			a.ja(defLabel)
			return
		}
		mid := (lo + hi) / 2
		right := a.newLabel()
		a.jmp(unix.BPF_JGE, nrs[mid], 0, 1)
		a.ja(right)
		search(lo, mid)
		a.mark(right)
		search(mid, hi)
	}
	search(0, len(nrs))
	for _, nr := range nrs {
		a.mark(blocks[nr])
		for _, r := range rules[nr] {
			fail := a.newLabel()
			for _, c := range r.args {
				argCheck(a, c, fail)
			}
			a.ret(r.action)
			a.mark(fail)
		}
		a.ret(def)
	}
	a.mark(defLabel)
	a.ret(def)
	return a.program()
}

// argCheck falls through when c holds and jumps to fail otherwise.
func argCheck(a *asm, c Arg, fail label) {
	lo, hi := 16+8*uint32(c.Index), 16+8*uint32(c.Index)+4
	if bigEndian {
		lo, hi = hi, lo
	}
	vl, vh := uint32(c.Value), uint32(c.Value>>32)
	pass := a.newLabel()
	switch c.Op {
	case "SCMP_CMP_EQ":
		a.ld(hi)
		a.jmp(unix.BPF_JEQ, vh, 1, 0)
		a.ja(fail)
		a.ld(lo)
		a.jmp(unix.BPF_JEQ, vl, 1, 0)
		a.ja(fail)
	case "SCMP_CMP_NE":
		a.ld(hi)
		a.jmp(unix.BPF_JEQ, vh, 1, 0)
		a.ja(pass)
		a.ld(lo)
		a.jmp(unix.BPF_JEQ, vl, 0, 1)
		a.ja(fail)
	case "SCMP_CMP_MASKED_EQ":
		dl, dh := uint32(c.ValueTwo), uint32(c.ValueTwo>>32)
		a.ld(hi)
		a.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, vh)
		a.jmp(unix.BPF_JEQ, dh, 1, 0)
		a.ja(fail)
		a.ld(lo)
		a.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, vl)
		a.jmp(unix.BPF_JEQ, dl, 1, 0)
		a.ja(fail)
	case "SCMP_CMP_GT", "SCMP_CMP_GE":
		a.ld(hi)
		a.jmp(unix.BPF_JGT, vh, 0, 1)
		a.ja(pass)
		a.jmp(unix.BPF_JEQ, vh, 1, 0)
		a.ja(fail)
		a.ld(lo)
		op := uint16(unix.BPF_JGT)
		if c.Op == "SCMP_CMP_GE" {
			op = unix.BPF_JGE
		}
		a.jmp(op, vl, 1, 0)
		a.ja(fail)
	case "SCMP_CMP_LT", "SCMP_CMP_LE":
		a.ld(hi)
		a.jmp(unix.BPF_JGE, vh, 1, 0)
		a.ja(pass)
		a.jmp(unix.BPF_JEQ, vh, 1, 0)
		a.ja(fail)
		a.ld(lo)
		op := uint16(unix.BPF_JGE)
		if c.Op == "SCMP_CMP_LE" {
			op = unix.BPF_JGT
		}
		a.jmp(op, vl, 0, 1)
		a.ja(fail)
	}
	a.mark(pass)
}

// forkProbes are the calls of proc.ForkSyscalls with the arguments Go
// makes them with, where a profile may look at them.
func forkProbes() map[string][6]uint64 {
	probes := map[string][6]uint64{
		"clone": {unix.CLONE_VM | unix.CLONE_VFORK | unix.CLONE_PIDFD | uint64(unix.SIGCHLD)},
		"ioctl": {0, unix.TIOCSPGRP},
		"prctl": {unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE},
	}
	if runtime.GOARCH == "s390x" { // clone(stack, flags, ...)
		probes["clone"] = [6]uint64{0, probes["clone"][0]}
	}
	return probes
}

// checkFork refuses a filter that denies one of proc.ForkSyscalls: it
// would fail every start, or kill podsup's spawning thread.
func checkFork(prog []proc.SockFilter) error {
	probes := forkProbes()
	for _, n := range proc.ForkSyscalls {
		nr, ok := syscalls[n]
		if !ok {
			continue
		}
		act, err := Run(prog, Data{Nr: int32(nr), Arch: auditArch, Args: probes[n]}, bigEndian)
		if err != nil {
			return err
		}
		if act != unix.SECCOMP_RET_ALLOW && act != unix.SECCOMP_RET_LOG {
			return fmt.Errorf("%w: %s", ErrForkSyscallDenied, n)
		}
	}
	return nil
}
