package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/kube"
)

func newPlayCmd() *cobra.Command {
	var (
		f      convertFlags
		socket string
	)
	cmd := &cobra.Command{
		Use:   "play [flags] FILE.yaml|-",
		Short: "Run a Kubernetes manifest as podsup up runs the converted HCL",
		Long: `Convert a manifest and run it in the foreground: podsup-kube becomes
"podsup up" on the converted configuration (same process, same signals, same
control socket), so "podsup status", "podsup logs" and SIGHUP/SIGTERM work
as they do for podsup up. The podsup binary is the one beside podsup-kube,
else the first on PATH; PODSUP_BIN names another.`,
		Example: `  sudo podsup-kube play examples/kube/web.yaml
  podsup status     # in another terminal`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := convertFile(args[0], &f, cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var hcl bytes.Buffer
			if err := kube.WriteHCL(&hcl, res, args[0]); err != nil {
				return err
			}
			// The text podsup up will read, read here first: a conversion
			// it would refuse fails before podsup-kube is replaced.
			if _, err := config.Parse(hcl.Bytes(), "converted from "+args[0]); err != nil {
				return fmt.Errorf("the converted configuration is not valid (a bug in podsup-kube): %w", err)
			}
			return execUp(hcl.Bytes(), socket)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&socket, "socket", "", "podsup up's control socket (default: podsup's)")
	return cmd
}

// execUp replaces podsup-kube with `podsup up` reading cfg. This is the
// one place play hands a configuration to the runtime: podsup up then
// runs it (and re-reads it on SIGHUP) exactly as it runs a file. The
// configuration is an anonymous memory file (memfd) passed as an open
// fd, so nothing is left on disk when podsup ends however it ends.
func execUp(cfg []byte, socket string) error {
	podsup, err := podsupBinary()
	if err != nil {
		return err
	}
	fd, err := unix.MemfdCreate("podsup-kube.hcl", 0) // no CLOEXEC: podsup up inherits it
	if err != nil {
		return fmt.Errorf("holding the converted configuration: %w", err)
	}
	mf := os.NewFile(uintptr(fd), "podsup-kube.hcl")
	if _, err := mf.Write(cfg); err != nil {
		mf.Close()
		return fmt.Errorf("holding the converted configuration: %w", err)
	}
	argv := []string{podsup}
	if socket != "" {
		argv = append(argv, "--socket", socket)
	}
	argv = append(argv, "up", "-f", "/proc/self/fd/"+strconv.Itoa(fd))
	err = syscall.Exec(podsup, argv, os.Environ())
	mf.Close()
	return fmt.Errorf("running %s: %w", podsup, err)
}

// podsupBinary is $PODSUP_BIN, else podsup beside this executable, else
// podsup on PATH.
func podsupBinary() (string, error) {
	if p := os.Getenv("PODSUP_BIN"); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "podsup")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("podsup")
	if err != nil {
		return "", errors.New("podsup-kube play runs podsup up, but no podsup binary is beside podsup-kube or on PATH: install podsup, or set PODSUP_BIN")
	}
	return p, nil
}
