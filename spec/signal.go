package spec

import "syscall"

// Signal is a signal number as the kernel knows it: syscall.Signal under a
// name of this package, so that code that only describes and decides about
// processes (the supervisor's decision core) can name signals without
// importing syscall itself.
type Signal = syscall.Signal

// SIGKILL is the signal that cannot be caught: the end of every grace
// period (K5) and of every tree kill (X10).
const SIGKILL = syscall.SIGKILL
