package volume

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// Names is what a sandbox's /etc/hosts and /etc/resolv.conf say.
type Names struct {
	Sandbox spec.Sandbox
	// Peers are other groups' addresses by group name (the groups on the
	// same podsup bridge), one hosts line each.
	Peers map[string]string
}

// hostsFile and resolvFile are where the host's files are read.
var (
	hostsFile  = "/etc/hosts"
	resolvFile = "/etc/resolv.conf"
	// resolvedFile is systemd-resolved's list of the real upstream
	// servers: the stub 127.0.0.53 in /etc/resolv.conf answers only in
	// the host's network namespace (kubelet's --resolv-conf advice).
	resolvedFile = "/run/systemd/resolve/resolv.conf"
)

// NameMounts writes the sandbox's /etc/hosts and /etc/resolv.conf under
// the group's directory and returns their bind mounts. A sandbox without
// the mount namespace gets none; one without a network namespace of its
// own gets them only where the configuration adds to the host's
// (host_alias, dns), as kubelet gives a hostNetwork pod the host's files.
func (g *Group) NameMounts(n Names) ([]spec.Mount, error) {
	sb := n.Sandbox
	if !sb.HasNamespace("mount") {
		return nil, nil
	}
	ownNet := sb.HasNamespace("net")
	var out []spec.Mount
	if ownNet || len(sb.HostAliases) > 0 || len(n.Peers) > 0 {
		p, err := g.writeEtc("hosts", hostsContent(n, ownNet))
		if err != nil {
			return nil, err
		}
		out = append(out, spec.Mount{Type: "bind", Source: p, Target: "/etc/hosts", ReadOnly: true, NoSymlinks: true})
	}
	if ownNet || sb.DNS != nil {
		p, err := g.writeEtc("resolv.conf", resolvContent(sb.DNS, ownNet))
		if err != nil {
			return nil, err
		}
		out = append(out, spec.Mount{Type: "bind", Source: p, Target: "/etc/resolv.conf", ReadOnly: true, NoSymlinks: true})
	}
	return out, nil
}

// SetPeers rewrites the group's /etc/hosts with n's peers, in place: the
// sandbox binds that very file, so a rename would not reach it. A reader
// may see the file while it is rewritten; the lines podsup adds are last.
func (g *Group) SetPeers(n Names) error {
	p := filepath.Join(g.Dir, "etc", "hosts")
	if _, err := os.Lstat(p); err != nil {
		return nil // no hosts file: the sandbox reads the host's
	}
	f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b := hostsContent(n, n.Sandbox.HasNamespace("net"))
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		return err
	}
	return f.Close()
}

// writeEtc writes the group's etc/name (a new file each time: the
// sandbox being made binds it) and returns its path.
func (g *Group) writeEtc(name string, b []byte) (string, error) {
	dir := filepath.Join(g.Dir, "etc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	tmp := p + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// hostsContent is kubelet's managed hosts file (pkg/kubelet's
// managedHostsFileContent): the loopback names, the sandbox's hostname,
// the host aliases, then the peers. Without a network namespace of its own
// the host's file comes first instead of the loopback lines.
func hostsContent(n Names, ownNet bool) []byte {
	var b bytes.Buffer
	b.WriteString("# podsup-managed hosts file.\n")
	if ownNet {
		b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
			"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
		if h := n.Sandbox.Hostname; h != "" {
			fmt.Fprintf(&b, "127.0.1.1\t%s\n", h)
		}
	} else if host, err := os.ReadFile(hostsFile); err == nil {
		b.Write(host)
		if len(host) > 0 && host[len(host)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	if len(n.Sandbox.HostAliases) > 0 {
		b.WriteString("\n# Entries added by host_alias.\n")
		for _, ha := range n.Sandbox.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", ha.IP, strings.Join(ha.Hostnames, "\t"))
		}
	}
	if len(n.Peers) > 0 {
		b.WriteString("\n# Groups on the same network.\n")
		for _, name := range slices.Sorted(maps.Keys(n.Peers)) {
			fmt.Fprintf(&b, "%s\t%s\n", n.Peers[name], name)
		}
	}
	return b.Bytes()
}

// resolv is a resolv.conf's lines podsup keeps.
type resolv struct {
	nameservers, searches, options []string
}

func readResolv(p string) resolv {
	var r resolv
	f, err := os.Open(p)
	if err != nil {
		return r
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			r.nameservers = append(r.nameservers, fields[1])
		case "search", "domain":
			r.searches = fields[1:] // the last one wins, as in the resolver
		case "options":
			r.options = append(r.options, fields[1:]...)
		}
	}
	return r
}

// resolvContent is the host's resolv.conf with dns merged in as kubelet
// merges a pod's dnsConfig (pkg/kubelet/network/dns): its nameservers
// replace the host's when it lists any, its searches come first, and
// its options override the host's of the same name.
func resolvContent(dns *spec.DNSConfig, ownNet bool) []byte {
	r := readResolv(resolvFile)
	if ownNet && onlyStub(r.nameservers) {
		if up := readResolv(resolvedFile); len(up.nameservers) > 0 {
			r = up
		}
	}
	if dns != nil {
		if len(dns.Nameservers) > 0 {
			r.nameservers = dns.Nameservers
		}
		r.searches = dedupe(append(slices.Clone(dns.Searches), r.searches...))
		r.options = mergeOptions(r.options, dns.Options)
	}
	var b bytes.Buffer
	b.WriteString("# podsup-managed resolv.conf.\n")
	for _, ns := range r.nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(r.searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(r.searches, " "))
	}
	if len(r.options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(r.options, " "))
	}
	return b.Bytes()
}

func onlyStub(ns []string) bool {
	for _, n := range ns {
		if !strings.HasPrefix(n, "127.") {
			return false
		}
	}
	return len(ns) > 0
}

func dedupe(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func mergeOptions(base, over []string) []string {
	name := func(o string) string { return strings.SplitN(o, ":", 2)[0] }
	var out []string
	for _, o := range base {
		if !slices.ContainsFunc(over, func(x string) bool { return name(x) == name(o) }) {
			out = append(out, o)
		}
	}
	return dedupe(append(out, over...))
}
