// Package cgroups owns podsup's cgroup tree: finding the mounted hierarchies,
// creating one root per podsup instance with a cgroup per group and a child
// cgroup per process, writing resource limits, placing a child in its cgroup
// at fork, killing a whole tree, reading usage and OOM kills, and removing
// everything again (also what a crashed podsup left behind).
//
// It writes the cgroupfs files directly; it imports no cgroup library and
// nothing of package sandbox (sandbox imports it).
//
// # Hierarchies
//
// Three host layouts exist and all are handled; Detect reads them from
// /proc/self/mountinfo and /proc/self/cgroup:
//
//   - pure v2: one cgroup2 mount holding the controllers;
//   - hybrid (these machines): v1 controllers each on their own mount plus a
//     cgroup2 mount without controllers;
//   - pure v1: v1 controllers only.
//
// Each controller podsup uses (memory, cpu, pids; cpuacct and freezer only
// without v2) is taken from the v2 hierarchy when podsup's cgroup there
// offers it, else from the v1 mount that has it. The v2 hierarchy, when
// mounted, is always used: with or without controllers it gives atomic
// placement at fork (clone3 CLONE_INTO_CGROUP), cgroup.kill, cgroup.procs of
// the whole tree, cgroup.events and cpu.stat.
//
// With v2 mounted, a group (and its process cgroups) exists in a v1
// hierarchy only when it has a limit that hierarchy's controller enforces:
// v2 alone tracks, kills and accounts the tree, and entering v1 cgroups at
// each fork is most of what a placed start costs. A group without limits
// then has no memory figures or OOM verdict unless v2 offers the memory
// controller, and SetResources cannot add a limit it was created without.
// Without v2, every v1 hierarchy is used for every group.
//
// # Layout
//
// Under podsup's own cgroup in every hierarchy used (as /proc/self/cgroup
// names it, so nested podsups and cgroup namespaces work):
//
//	<own>/podsup-<instance>/              the Manager's root, no processes
//	<own>/podsup-<instance>/<group>/      a Group, with its limits; no processes
//	<own>/podsup-<instance>/<group>/<p>/  a Process; children are placed here only
//	<own>/podsup-<instance>/_supervisor/  podsup itself, only when it had to move (below)
//
// Processes are placed only in leaves (Process cgroups), which respects
// cgroup v2's "no internal processes" rule. To hand v2 controllers down to
// its root, podsup must enable them in <own>/cgroup.subtree_control. The
// kernel refuses that (EBUSY) while <own> holds processes, and podsup itself
// is one of them, unless <own> is the real root cgroup. On EBUSY podsup
// moves itself (its whole thread group, via cgroup.procs) into the
// _supervisor leaf and tries again; if other processes keep <own> busy it
// moves back and goes on without v2 controllers. Close moves it back to
// <own> (first disabling the controllers it enabled there, if the kernel
// insists) and removes the leaf. Names starting with '_' are reserved for
// this; spec names cannot start with one.
//
// # Placement
//
// See Placement: on any host with cgroup2 the child gets the v2 directory fd
// through SysProcAttr.UseCgroupFD/CgroupFD; v1 controllers have no such
// thing, so the forking OS thread enters the v1 cgroups, forks (the child
// inherits the thread's cgroups) and moves back.
//
// # Killing
//
// Kill is SIGKILL to every process in the subtree, repeated until the
// kernel lists none: cgroup.kill on v2; v1 freezes the tree (freezer.state
// FROZEN), signals every listed pid through a pidfd and thaws, so nothing
// forks in between. KillTree, the kill of a Process cgroup that will take
// the next instance of its process, freezes on v2 too: on Linux (seen on 6.18)
// a cgroup once killed through cgroup.kill SIGKILLs every child later
// cloned into it. Every signal goes through a pidfd opened while the pid
// was listed and checked against a second listing, never to pid <= 0 or
// podsup's own pid.
//
// # Leftovers
//
// Sweep kills and removes what an earlier podsup of the same instance left
// (SIGKILLed, OOM-killed) and reports each cgroup with the pids it killed.
//
// # Unavailable
//
// When podsup may not create cgroups (no mount, EACCES/EPERM/EROFS as in an
// unprivileged container) New returns an error wrapping ErrUnavailable; the
// caller says so once and falls back to process groups.
package cgroups
