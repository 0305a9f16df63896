// Command podsup-kube is podsup's Kubernetes bridge: it converts Pod
// manifests (and the pod templates of Deployments, StatefulSets,
// DaemonSets, ReplicaSets, Jobs and CronJobs) to podsup's HCL, runs them,
// and exports podsup groups as Pods.
//
// It is a command of its own, not a podsup subcommand, because Kubernetes'
// API types would add 9.1 MB to podsup's 16.3 MB (stripped, linux/amd64;
// docs/benchmarks.md): devices that never see a manifest do not carry
// them. The conversion is package
// kube; this command parses flags and wires it to files.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/kube"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries an exit code out of a command without printing more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	if err := newRootCmd().Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "podsup-kube:", err)
		os.Exit(2)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "podsup-kube",
		Short: "Convert Kubernetes Pod manifests to podsup groups and back",
		Long: `podsup-kube bridges Kubernetes manifests and podsup:

  podsup-kube convert FILE.yaml      print the equivalent podsup HCL
  podsup-kube play FILE.yaml         run it, as podsup up runs the HCL
  podsup-kube export -f FILE.hcl     print one Pod per group

Every field podsup cannot honour is reported with its YAML path, as a
warning (the field is left out) or an error (converting would change what
the workload does); --strict makes warnings errors.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newConvertCmd(), newPlayCmd(), newExportCmd())
	return root
}

// convertFlags are convert's and play's.
type convertFlags struct {
	strict     bool
	rootfs     []string
	configMaps []string
	secrets    []string
	images     []string
	entrypoint []string
	podIP      string
	hostIP     string
	nodeName   string
}

func (f *convertFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.strict, "strict", false, "fail on any field podsup cannot honour, not only on those it refuses")
	cmd.Flags().StringArrayVar(&f.rootfs, "rootfs", nil, "run the containers of image IMAGE in the unpacked root filesystem DIR (IMAGE=DIR, repeatable)")
	cmd.Flags().StringArrayVar(&f.images, "image", nil, "read image IMAGE's Entrypoint, Cmd, Env, WorkingDir and User from DIR, an OCI image layout or an unpacked bundle (IMAGE=DIR, repeatable)")
	cmd.Flags().StringArrayVar(&f.entrypoint, "entrypoint", nil, `image IMAGE's entrypoint, for a container with args and no command, when no --image DIR is at hand (IMAGE=CMD or IMAGE='["CMD","ARG"]', repeatable)`)
	cmd.Flags().StringArrayVar(&f.configMaps, "configmap", nil, "a YAML file of ConfigMaps for valueFrom and envFrom (repeatable)")
	cmd.Flags().StringArrayVar(&f.secrets, "secret", nil, "a YAML file of Secrets for valueFrom and envFrom (repeatable; their values are written into the HCL)")
	cmd.Flags().StringVar(&f.podIP, "pod-ip", "", "the downward API's status.podIP: the address the pod's processes are reached at")
	cmd.Flags().StringVar(&f.hostIP, "host-ip", "", "the downward API's status.hostIP: the address of the machine that runs the pod")
	cmd.Flags().StringVar(&f.nodeName, "node-name", "", "the downward API's spec.nodeName for a pod that names no node (default: this machine's hostname)")
}

// envSources reads the --configmap and --secret files.
func (f *convertFlags) envSources() ([]kube.EnvSource, error) {
	var out []kube.EnvSource
	for _, l := range []struct {
		flag, kind string
		files      []string
	}{{"--configmap", "ConfigMap", f.configMaps}, {"--secret", "Secret", f.secrets}} {
		for _, name := range l.files {
			file, err := os.Open(name)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.flag, err)
			}
			srcs, err := kube.DecodeEnvSources(file, l.kind)
			file.Close()
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", l.flag, name, err)
			}
			out = append(out, srcs...)
		}
	}
	return out, nil
}

func (f *convertFlags) options() (kube.Options, error) {
	o := kube.Options{Strict: f.strict, PodIP: f.podIP, HostIP: f.hostIP, NodeName: f.nodeName}
	for _, a := range []struct{ flag, v string }{{"--pod-ip", f.podIP}, {"--host-ip", f.hostIP}} {
		if _, err := netip.ParseAddr(a.v); a.v != "" && err != nil {
			return o, fmt.Errorf("%s %q: not an IP address", a.flag, a.v)
		}
	}
	var err error
	if o.EnvSources, err = f.envSources(); err != nil {
		return o, err
	}
	for _, v := range f.images {
		img, dir, ok := strings.Cut(v, "=")
		if !ok || img == "" || dir == "" {
			return o, fmt.Errorf("--image %q: want IMAGE=DIR, e.g. --image nginx:1.27=/srv/images/nginx", v)
		}
		cfg, err := kube.ReadImage(dir, img)
		if err != nil {
			return o, fmt.Errorf("--image %q: %w", v, err)
		}
		if o.Images == nil {
			o.Images = map[string]*kube.Image{}
		}
		o.Images[img] = cfg
	}
	for _, v := range f.entrypoint {
		img, line, ok := strings.Cut(v, "=")
		var argv []string
		if strings.HasPrefix(strings.TrimSpace(line), "[") {
			if err := json.Unmarshal([]byte(line), &argv); err != nil {
				return o, fmt.Errorf("--entrypoint %q: not a JSON list of strings: %w", v, err)
			}
		} else {
			argv = strings.Fields(line)
		}
		if !ok || img == "" || len(argv) == 0 {
			return o, fmt.Errorf(`--entrypoint %q: want IMAGE=CMD, e.g. --entrypoint nginx:1.27=/docker-entrypoint.sh, or IMAGE='["CMD","ARG"]'`, v)
		}
		if o.Entrypoints == nil {
			o.Entrypoints = map[string][]string{}
		}
		o.Entrypoints[img] = argv
	}
	for _, v := range f.rootfs {
		img, dir, ok := strings.Cut(v, "=")
		if !ok || img == "" || dir == "" {
			return o, fmt.Errorf("--rootfs %q: want IMAGE=DIR, e.g. --rootfs nginx:1.27=/srv/rootfs/nginx", v)
		}
		if !filepath.IsAbs(dir) {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return o, fmt.Errorf("--rootfs %q: %w", v, err)
			}
			dir = abs
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return o, fmt.Errorf("--rootfs %q: %s is not a directory", v, dir)
		}
		if o.Rootfs == nil {
			o.Rootfs = map[string]string{}
		}
		o.Rootfs[img] = dir
	}
	return o, nil
}

// convertFile reads a manifest ("-" is stdin) and converts it, printing
// the warnings on stderr.
func convertFile(name string, f *convertFlags, stdin io.Reader, stderr io.Writer) (*kube.Result, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	in, closeIn, err := open(name, stdin)
	if err != nil {
		return nil, err
	}
	defer closeIn()
	res, err := kube.Convert(in, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, fd := range res.Findings {
		fmt.Fprintln(stderr, fd.String())
	}
	return res, nil
}

func open(name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("reading manifest: %w", err)
	}
	return f, func() { f.Close() }, nil
}

func newConvertCmd() *cobra.Command {
	var (
		f   convertFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "convert [flags] FILE.yaml|-",
		Short: "Print the podsup HCL equivalent to a Kubernetes manifest",
		Example: `  podsup-kube convert examples/kube/web.yaml > web.hcl
  kubectl get pod web -o yaml | podsup-kube convert --strict -
  podsup-kube convert --rootfs nginx:1.27=/srv/rootfs/nginx web.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := convertFile(args[0], &f, cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				file, err := os.Create(out)
				if err != nil {
					return fmt.Errorf("writing the configuration: %w", err)
				}
				defer file.Close()
				w = file
			}
			if err := kube.WriteHCL(w, res, args[0]); err != nil {
				return fmt.Errorf("writing the configuration: %w", err)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the HCL to this file instead of stdout")
	return cmd
}

func newExportCmd() *cobra.Command {
	var file, kind, defaultImage string
	cmd := &cobra.Command{
		Use:   "export -f FILE.hcl [--kind pod|deployment] [--default-image IMAGE]",
		Short: "Print one Kubernetes Pod (or Deployment) per group of a podsup configuration",
		Example: `  podsup-kube export -f web.hcl | kubectl apply -f -
  podsup-kube export -f examples/web.hcl --default-image busybox:1.37 | podsup-kube convert -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := config.Find(file)
			if err != nil {
				return err
			}
			cfg, err := config.Load(path)
			if err != nil {
				var ce *config.Error
				if errors.As(err, &ce) {
					_ = ce.WriteText(cmd.ErrOrStderr(), false)
					return exitError{1}
				}
				return err
			}
			warns, err := kube.Export(cmd.OutOrStdout(), cfg, kube.ExportOptions{Kind: kind, DefaultImage: defaultImage})
			if err != nil {
				return err
			}
			for _, w := range warns {
				fmt.Fprintln(cmd.ErrOrStderr(), w.String())
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "configuration file (default ./podsup.hcl, then /etc/podsup/podsup.hcl)")
	cmd.Flags().StringVar(&kind, "kind", "pod", "what each group becomes: pod, or deployment (one replica, the pod as its template)")
	cmd.Flags().StringVar(&defaultImage, "default-image", "", "the image of every process and init without one (the API server requires an image; without this flag, export refuses a process that has none)")
	return cmd
}
