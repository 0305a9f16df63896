package kube

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsup/podsup/spec"
)

// Image is what podsup-kube knows of an image without running it: the
// configuration that gives a container its defaults (Entrypoint, Cmd,
// Env, WorkingDir, User).
type Image struct {
	Config ocispec.ImageConfig
	// From says where the configuration was read, for messages.
	From string
	// Joined is set when only the whole command line is known (a runtime
	// bundle's process.args, an --entrypoint): it is Config.Cmd, and no
	// part of it is the entrypoint that a container's args would follow.
	Joined bool
}

// maxImageJSON bounds the index, manifest and config documents read from
// an image directory: they are kilobytes.
const maxImageJSON = 4 << 20

// ReadImage reads the configuration of image ref (the manifest's image
// name, to pick among the images of a layout) from dir: an OCI image
// layout (index.json, then the manifest for this machine's platform,
// then its config blob), or an unpacked bundle whose config.json is an
// OCI runtime configuration (its process) or an image configuration.
func ReadImage(dir, ref string) (*Image, error) {
	if _, err := os.Stat(filepath.Join(dir, ocispec.ImageIndexFile)); err == nil {
		return readLayout(dir, ref)
	}
	path := filepath.Join(dir, "config.json")
	b, err := readJSONFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is neither an OCI image layout (no %s) nor an unpacked bundle (no config.json)", dir, ocispec.ImageIndexFile)
	}
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := probe["process"]; ok {
		return readBundleProcess(b, path)
	}
	var img ocispec.Image
	if err := json.Unmarshal(b, &img); err != nil {
		return nil, fmt.Errorf("%s: not an image configuration: %w", path, err)
	}
	return &Image{Config: img.Config, From: path}, nil
}

// readBundleProcess takes an OCI runtime bundle's process: its args are
// the image's Entrypoint and Cmd joined (umoci and skopeo write them so),
// its env, cwd and user. Only these fields are read, so no runtime-spec
// types are needed.
func readBundleProcess(b []byte, path string) (*Image, error) {
	var rt struct {
		Process *struct {
			Args []string `json:"args"`
			Env  []string `json:"env"`
			Cwd  string   `json:"cwd"`
			User struct {
				UID uint32 `json:"uid"`
				GID uint32 `json:"gid"`
			} `json:"user"`
		} `json:"process"`
	}
	if err := json.Unmarshal(b, &rt); err != nil || rt.Process == nil {
		return nil, fmt.Errorf("%s: not an OCI runtime configuration: %v", path, err)
	}
	p := rt.Process
	return &Image{From: path, Joined: true, Config: ocispec.ImageConfig{
		Cmd: p.Args, Env: p.Env, WorkingDir: p.Cwd,
		User: strconv.FormatUint(uint64(p.User.UID), 10) + ":" + strconv.FormatUint(uint64(p.User.GID), 10),
	}}, nil
}

func readLayout(dir, ref string) (*Image, error) {
	b, err := readJSONFile(filepath.Join(dir, ocispec.ImageIndexFile))
	if err != nil {
		return nil, err
	}
	var index ocispec.Index
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ocispec.ImageIndexFile), err)
	}
	desc, err := pickManifest(dir, index.Manifests, ref, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var m ocispec.Manifest
	if err := readBlob(dir, desc, &m); err != nil {
		return nil, err
	}
	var img ocispec.Image
	if err := readBlob(dir, m.Config, &img); err != nil {
		return nil, err
	}
	return &Image{Config: img.Config, From: filepath.Join(dir, "blobs", m.Config.Digest.Algorithm().String(), m.Config.Digest.Encoded())}, nil
}

// pickManifest is the image manifest among descs for ref on this
// machine's platform, descending into nested indexes: the one whose
// org.opencontainers.image.ref.name is ref or its tag, else the only one
// there is.
func pickManifest(dir string, descs []ocispec.Descriptor, ref string, depth int) (ocispec.Descriptor, error) {
	if depth > 4 {
		return ocispec.Descriptor{}, errors.New("image indexes nested too deep")
	}
	var found []ocispec.Descriptor
	for _, d := range descs {
		if p := d.Platform; p != nil && (p.OS != "linux" || p.Architecture != runtime.GOARCH) {
			continue
		}
		switch d.MediaType {
		case ocispec.MediaTypeImageManifest, "application/vnd.docker.distribution.manifest.v2+json":
			found = append(found, d)
		case ocispec.MediaTypeImageIndex, "application/vnd.docker.distribution.manifest.list.v2+json":
			var sub ocispec.Index
			if err := readBlob(dir, d, &sub); err != nil {
				return d, err
			}
			m, err := pickManifest(dir, sub.Manifests, ref, depth+1)
			if err != nil {
				return d, err
			}
			if d.Annotations != nil && m.Annotations == nil {
				m.Annotations = d.Annotations // the name is on the index's entry
			}
			found = append(found, m)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	tag := ref
	if i := strings.LastIndexAny(ref, ":/"); i >= 0 && ref[i] == ':' {
		tag = ref[i+1:]
	}
	var named []ocispec.Descriptor
	for _, d := range found {
		if n := d.Annotations[ocispec.AnnotationRefName]; n != "" && (n == ref || n == tag) {
			named = append(named, d)
		}
	}
	switch {
	case len(named) == 1:
		return named[0], nil
	case len(found) == 0:
		return ocispec.Descriptor{}, fmt.Errorf("no image manifest for linux/%s", runtime.GOARCH)
	default:
		return ocispec.Descriptor{}, fmt.Errorf("%d image manifests for linux/%s and none named %q (%s)", len(found), runtime.GOARCH, ref, ocispec.AnnotationRefName)
	}
}

// readBlob decodes the blob d names, after checking its digest: a layout
// is content-addressed, and a blob that does not match is not the image.
func readBlob(dir string, d ocispec.Descriptor, v any) error {
	if err := d.Digest.Validate(); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	path := filepath.Join(dir, "blobs", d.Digest.Algorithm().String(), d.Digest.Encoded())
	b, err := readJSONFile(path)
	if err != nil {
		return err
	}
	if d.Digest.Algorithm() == "sha256" {
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != d.Digest.Encoded() {
			return fmt.Errorf("%s does not match its digest", path)
		}
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readJSONFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxImageJSON+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if buf.Len() > maxImageJSON {
		return nil, fmt.Errorf("%s: larger than %d bytes: not an image's JSON", path, maxImageJSON)
	}
	return buf.Bytes(), nil
}

// imageFor is the configuration of ct's image: Options.Images', with
// Options.Entrypoints' entrypoint over it (which, as docker's
// --entrypoint, drops the image's Cmd); nil when neither knows it.
func (c *converter) imageFor(ct *corev1.Container) *Image {
	if ct.Image == "" {
		return nil
	}
	img := c.o.Images[ct.Image]
	ep, ok := c.o.Entrypoints[ct.Image]
	if img == nil && !ok {
		return nil
	}
	c.usedImageConfigs[ct.Image] = true
	if !ok {
		return img
	}
	out := &Image{From: "--entrypoint"}
	if img != nil {
		out.Config = img.Config
	}
	out.Config.Entrypoint, out.Config.Cmd = ep, nil
	return out
}

// command is the process's command line by kubelet's rules: command (its
// $(VAR) expanded) and args, else the image's Entrypoint with args, else
// its Entrypoint and Cmd. Only the container's own parts are expanded.
func (c *converter) command(ct *corev1.Container, at string, env *environment, img *Image) []string {
	var cmd, args []string
	for _, a := range ct.Command {
		cmd = append(cmd, expand(a, env.lookup))
	}
	for _, a := range ct.Args {
		args = append(args, expand(a, env.lookup))
	}
	if len(cmd) > 0 {
		return append(cmd, args...)
	}
	if img == nil {
		what := fmt.Sprintf("podsup runs no image, so it knows no entrypoint for %q: give the image's directory with --image %s=DIR (an OCI image layout or an unpacked bundle), or its entrypoint with --entrypoint %s=CMD, or write the full command line in command (and args)", ct.Image, ct.Image, ct.Image)
		if ct.Image == "" {
			what = "the container has no image; write the full command line in command (and args)"
		}
		c.r.fail(c.path(at+".command"), "container %q has no command: %s", ct.Name, what)
		return nil
	}
	ic := &img.Config
	var out []string
	if len(args) > 0 {
		if img.Joined {
			c.r.warn(c.path(at+".args"), "%s gives the image's entrypoint and Cmd as one command line: args replace it whole (give the entrypoint with --entrypoint %s=CMD if it has one)", img.From, ct.Image)
		}
		out = append(slices.Clone(ic.Entrypoint), args...)
	} else {
		out = append(slices.Clone(ic.Entrypoint), ic.Cmd...)
	}
	if len(out) == 0 {
		c.r.fail(c.path(at+".command"), "container %q has no command, and image %q (%s) has neither Entrypoint nor Cmd: write the full command line in command (and args)", ct.Name, ct.Image, img.From)
	}
	return out
}

// imageDefaults gives p what the image sets and the container does not:
// Env (below the container's variables, and as kubelet's own $(VAR)
// expansion never saw it), WorkingDir, User (and its group).
func imageDefaults(p *spec.Process, env *environment, img *Image, userSet, groupSet bool) {
	if img == nil {
		return
	}
	ic := &img.Config
	for _, kv := range ic.Env {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := env.lookup(k); !ok && k != "" {
			env.set(k, v)
		}
	}
	if p.WorkingDir == "" {
		p.WorkingDir = ic.WorkingDir
	}
	if !userSet && ic.User != "" {
		u, g, _ := strings.Cut(ic.User, ":")
		p.User = u
		if !groupSet {
			p.Group = g
		}
	}
}
