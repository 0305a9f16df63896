package seccomp

import (
	"encoding/binary"
	"fmt"

	"github.com/podsup/podsup/sandbox/proc"
	"golang.org/x/sys/unix"
)

// Classic BPF as seccomp takes it, assembled with labels: a conditional
// jump reaches at most 255 instructions ahead, so every jump the compiler
// needs further is an unconditional ja (32-bit) behind a conditional skip
// of one instruction.

type label int

type insn struct {
	f      proc.SockFilter
	target label // for ja: the label to reach; 0: none
}

type asm struct {
	code   []insn
	labels map[label]int
	next   label
}

func newAsm() *asm { return &asm{labels: map[label]int{}} }

func (a *asm) newLabel() label { a.next++; return a.next }
func (a *asm) mark(l label)    { a.labels[l] = len(a.code) }

func (a *asm) stmt(code uint16, k uint32) {
	a.code = append(a.code, insn{f: proc.SockFilter{Code: code, K: k}})
}

// jmp is a conditional jump with short offsets (0 or 1 here).
func (a *asm) jmp(code uint16, k uint32, jt, jf uint8) {
	a.code = append(a.code, insn{f: proc.SockFilter{Code: unix.BPF_JMP | code | unix.BPF_K, K: k, Jt: jt, Jf: jf}})
}

func (a *asm) ja(l label) {
	a.code = append(a.code, insn{f: proc.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA}, target: l})
}

func (a *asm) ret(v uint32)  { a.stmt(unix.BPF_RET|unix.BPF_K, v) }
func (a *asm) ld(off uint32) { a.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

func (a *asm) program() ([]proc.SockFilter, error) {
	if len(a.code) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("the filter needs %d instructions, more than the kernel's %d", len(a.code), unix.BPF_MAXINSNS)
	}
	prog := make([]proc.SockFilter, len(a.code))
	for i, in := range a.code {
		prog[i] = in.f
		if in.target != 0 {
			to, ok := a.labels[in.target]
			if !ok || to <= i {
				return nil, fmt.Errorf("internal error: jump to an unplaced label")
			}
			prog[i].K = uint32(to - i - 1)
		}
	}
	return prog, nil
}

// Data is struct seccomp_data: what a filter sees of a system call.
type Data struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// Run interprets prog over d, as the kernel would, and returns the action
// it returns (SECCOMP_RET_*). It knows the instructions this package
// emits, which is what its tests and its check of ForkSyscalls need.
func Run(prog []proc.SockFilter, d Data, bigEndian bool) (uint32, error) {
	var buf [64]byte
	order := binary.ByteOrder(binary.LittleEndian)
	if bigEndian {
		order = binary.BigEndian
	}
	order.PutUint32(buf[0:], uint32(d.Nr))
	order.PutUint32(buf[4:], d.Arch)
	order.PutUint64(buf[8:], d.InstructionPointer)
	for i, a := range d.Args {
		order.PutUint64(buf[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K > 60 || in.K%4 != 0 {
				return 0, fmt.Errorf("pc %d: load at %d", pc, in.K)
			}
			acc = order.Uint32(buf[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_RET | unix.BPF_K:
			return in.K, nil
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			var taken bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				taken = acc == in.K
			case unix.BPF_JGT:
				taken = acc > in.K
			case unix.BPF_JGE:
				taken = acc >= in.K
			}
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			return 0, fmt.Errorf("pc %d: instruction %#x not interpreted", pc, in.Code)
		}
	}
	return 0, fmt.Errorf("the program ran off its end")
}
