package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/internal/termsafe"
	"github.com/podsup/podsup/stack"
)

func newValidateCmd() *cobra.Command {
	var (
		cf     configFlags
		strict bool
	)
	cmd := &cobra.Command{
		Use:   "validate [-f FILE|DIR]... [--var NAME=VALUE]... [--var-file FILE]...",
		Short: "Check a configuration and print every problem with its file:line:col",
		Long: `Load a configuration as podsup up would, env files and variables included,
and print every problem with its file:line:col. It takes up's -f, --var and
--var-file: several -f load as one configuration, and -f DIR reads every *.hcl
file in DIR in lexical order.

As up and every reload do, it refuses a configuration over podsup's limits
(16 MiB and 1000 files in all, 10,000 groups, 10,000 processes; the list is
in podsup.hcl(5)), a file that is not a regular file (a FIFO, a device;
symlinks are followed), and values that could never run: a NUL byte in any
string, an env key with "=", a cpu, pids or 32-bit field beyond what the
kernel or Kubernetes takes, a log_dir that is not a directory, a
post_start or pre_stop sleep longer than the grace period. It and up refuse
a configuration with no group: it would run nothing (an empty file, as a
failed "podsup-kube convert > FILE" leaves, is the usual cause).

Then it warns of what this host, this user and this environment would not
run, each with its fix: namespaces without root (CAP_SYS_ADMIN), resource
limits without a cgroup podsup may write (root, or systemd's Delegate=yes),
sockets that were not passed (checked against LISTEN_FDNAMES), and a
command its process's user cannot find or execute. podsup up, run the same
way, refuses the first three; validate as the user and on the host podsup
will run on. --strict makes warnings errors. Exit codes: 0 valid (with
warnings unless --strict), 1 invalid.`,
		Example: `  podsup validate -f examples/web.hcl
  podsup validate -f examples/conf.d/ --var http_port=8081
  podsup validate --strict -f examples/edge.hcl   # as the user podsup runs as`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			source, err := cf.source()
			if err != nil {
				return err
			}
			cfg, err := source.load(cmd.ErrOrStderr())
			if err != nil || source.requireGroups(cfg, cmd.ErrOrStderr()) != nil {
				return exitError{1}
			}
			n := 0
			for _, g := range cfg.Groups {
				n += len(g.Processes) + len(g.Init)
			}
			warnings := stack.CheckHost(cfg, os.Environ())
			kind := "warning"
			if strict {
				kind = "error"
			}
			for _, w := range warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s: %s\n", source, kind, termsafe.Quote(w.Error()))
			}
			switch {
			case len(warnings) > 0 && strict:
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: invalid with --strict: %s\n", source, plural(len(warnings), "warning"))
				return exitError{1}
			case len(warnings) > 0:
				fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%d groups, %d processes), %s: this host would not run it as it is\n", source, len(cfg.Groups), n, plural(len(warnings), "warning"))
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%d groups, %d processes)\n", source, len(cfg.Groups), n)
			}
			return nil
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings (what this host, user or environment would not run) as errors: exit 1")
	return cmd
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
