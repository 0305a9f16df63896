package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	var cf configFlags
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
kernel or Kubernetes takes, a log_dir that is not a directory.`,
		Example: `  podsup validate -f examples/web.hcl
  podsup validate -f examples/conf.d/ --var http_port=8081`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			source, err := cf.source()
			if err != nil {
				return err
			}
			cfg, err := source.load(cmd.ErrOrStderr())
			if err != nil {
				return exitError{1}
			}
			n := 0
			for _, g := range cfg.Groups {
				n += len(g.Processes) + len(g.Init)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%d groups, %d processes)\n", source, len(cfg.Groups), n)
			return nil
		},
	}
	cf.register(cmd.Flags())
	return cmd
}
