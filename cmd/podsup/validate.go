package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/config"
)

func newValidateCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:     "validate [-f FILE]",
		Short:   "Check a configuration file and print every problem with its file:line:col",
		Example: `  podsup validate -f examples/web.hcl`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := config.Find(file)
			if err != nil {
				return err
			}
			cfg, err := loadConfig(path, cmd.ErrOrStderr())
			if err != nil {
				return exitError{1}
			}
			n := 0
			for _, g := range cfg.Groups {
				n += len(g.Processes) + len(g.Init)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%d groups, %d processes)\n", path, len(cfg.Groups), n)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "configuration file (default ./podsup.hcl, then /etc/podsup/podsup.hcl)")
	return cmd
}
