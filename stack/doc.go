// Package stack owns the assembly of what podsup up runs, as a library:
// one call (Start, or New and Run) gives a Go program the supervisor over
// the whole runtime stack, exactly as podsup up has it. From the kernel
// up:
//
//   - SandboxRuntime, the supervisor's adapter to package sandbox: one
//     sandbox per group (its namespaces and cgroup; a cgroup-only one for
//     a group without a sandbox block), one cgroup per process;
//     hostrt.Runtime, the adapter for plain host processes, is what
//     SandboxRuntime falls back to without cgroups;
//   - output capture (package logs): every process's stdout and stderr,
//     to Options.Output, the tails and followers (Stack.Logs) and log_dir;
//   - journal output for log { journal = true } when Options.Journal says
//     journald is there (package systemd);
//   - readiness protocols and socket activation (package notify), with
//     Options.ActivationFiles;
//   - the supervisor (package supervisor) on top.
//
// The binary keeps what is the process's or the user's: flags, the
// control socket and its API server, podsup's own log output, sd_notify
// to a systemd above it, PID 1's duties. A Go program does the same with
// what it needs of them.
//
// A minimal program (TestStartRunsASandboxedGroupWithCapturedOutput runs
// one in full):
//
//	func main() {
//		stack.ReexecMain() // the stack's sandbox holders are this program
//		st, err := stack.Start(ctx, cfg, stack.Options{Instance: "myapp", Output: os.Stdout})
//		if err != nil { ... }
//		defer st.Shutdown(ctx) // graceful; SIGKILL what is left when ctx ends
//		lines, err := st.Logs().Tail("web", "app", 10, false)
//		...
//	}
//
// New documents the stack's process-wide effects (the one reaper, the
// child subreaper) and what they forbid to the rest of the program.
package stack
