package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// A sandbox with a bridge or cni network is attached by the standard CNI
// plugins, through libcni: podsup writes no netlink or iptables code of
// its own for what a plugin does. The plugins act on a network namespace
// that outlives podsup: the holder's, bind-mounted under NetnsDir, so that
// after a SIGKILLed podsup the next one can still DEL inside it (the
// bridge plugin tears its masquerade rules down from the addresses it
// finds there). What podsup attached is recorded under NetworkStateDir
// before the ADD, and that record is what crash recovery DELs.

// sandboxIfName is the interface the plugins make inside a sandbox.
const sandboxIfName = "eth0"

// The defaults of Options' network directories.
const (
	DefaultNetnsDir        = "/run/podsup/netns"
	DefaultNetworkStateDir = "/var/lib/podsup/cni"
	DefaultCNICacheDir     = "/var/lib/cni"
)

// NetworkStatus is a sandbox's attachment to a CNI network.
type NetworkStatus struct {
	// Mode is spec.NetworkBridge or spec.NetworkCNI; Network the CNI
	// network's name (a bridge's name for mode bridge).
	Mode, Network string
	// ContainerID is the id the plugins know the sandbox by.
	ContainerID string
	// Interface is the sandbox's interface ("eth0").
	Interface string
	// IPs are its addresses in CIDR form; Gateways beside them.
	IPs, Gateways []string
	// Ports are the ports published on the host.
	Ports []spec.Port
	// Result is the plugins' result, as CNI's JSON.
	Result json.RawMessage
}

// attachment is a sandbox's attachment: what DEL and CHECK need.
type attachment struct {
	rec    networkRecord
	list   *libcni.NetworkConfigList
	cni    *libcni.CNIConfig
	status NetworkStatus
	// addTook is how long the plugins' ADD took (the benchmark's share).
	addTook time.Duration
}

// networkRecord is what NetworkStateDir keeps of one attachment, enough
// to DEL it without the configuration that made it.
type networkRecord struct {
	ContainerID string          `json:"container_id"`
	Mode        string          `json:"mode"`
	IfName      string          `json:"if_name"`
	Netns       string          `json:"netns"`
	PluginDirs  []string        `json:"plugin_dirs"`
	CacheDir    string          `json:"cache_dir"`
	ConfList    json.RawMessage `json:"conf_list"`
	Capability  map[string]any  `json:"capability_args,omitempty"`
	Sandbox     string          `json:"sandbox"`
	// Bridge is mode bridge's bridge, which Close removes once empty.
	Bridge  string    `json:"bridge,omitempty"`
	Created time.Time `json:"created"`
}

// instanceTag keeps the container ids of one podsup instance apart from
// another's, in CNI's ids' alphabet whatever the instance's name is.
func instanceTag(instance string) string {
	sum := sha256.Sum256([]byte(instance))
	return hex.EncodeToString(sum[:])[:10]
}

// containerID is the id the plugins know sandbox id by.
func (rt *Runtime) containerID(id string) string {
	return "podsup-" + instanceTag(rt.opts.Instance) + "-" + id
}

func (rt *Runtime) recordDir() string {
	return filepath.Join(rt.opts.NetworkStateDir, instanceTag(rt.opts.Instance))
}

// bridgeConfList is the configuration of mode bridge: Nomad's bridge
// network with the standard plugins (bridge with host-local IPAM, a
// default route and masquerade; portmap; firewall where it is installed,
// for hosts whose FORWARD policy drops).
func bridgeConfList(n *spec.Network, pluginDirs []string) ([]byte, error) {
	bridge, subnet := n.Bridge, n.Subnet
	if bridge == "" {
		bridge = spec.DefaultBridge
	}
	if subnet == "" {
		subnet = spec.DefaultBridgeSubnet
	}
	plugins := []any{
		map[string]any{
			"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": true, "hairpinMode": true,
			"ipam": map[string]any{
				"type":   "host-local",
				"ranges": [][]map[string]string{{{"subnet": subnet}}},
				"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
			},
		},
		map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
	}
	if _, err := invoke.FindInPath("firewall", pluginDirs); err == nil {
		plugins = append(plugins, map[string]any{"type": "firewall"})
	}
	return json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": bridge, "plugins": plugins})
}

// portMappings are the ports as portmap's runtimeConfig wants them.
func portMappings(ports []spec.Port) []map[string]any {
	var out []map[string]any
	for _, p := range ports {
		if p.HostPort == 0 {
			continue
		}
		proto := p.Protocol
		if proto == "" {
			proto = "tcp"
		}
		m := map[string]any{"hostPort": p.HostPort, "containerPort": p.ContainerPort, "protocol": proto}
		if p.HostIP != "" {
			m["hostIP"] = p.HostIP
		}
		out = append(out, m)
	}
	return out
}

// attach ADDs sandbox sb, whose holder is running, to its network. On
// failure nothing is left attached.
func (rt *Runtime) attach(ctx context.Context, sb *sandboxRec) (*attachment, error) {
	n := sb.cfg.Network
	pluginDirs := n.PluginDirs
	if len(pluginDirs) == 0 {
		pluginDirs = spec.DefaultCNIPluginDirs
	}
	var confList []byte
	switch n.Mode {
	case spec.NetworkBridge:
		b, err := bridgeConfList(n, pluginDirs)
		if err != nil {
			return nil, err
		}
		confList = b
	case spec.NetworkCNI:
		dir := n.ConfDir
		if dir == "" {
			dir = spec.DefaultCNIConfDir
		}
		list, err := libcni.LoadNetworkConf(dir, n.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: CNI network %q in %s: %w", ErrInvalidArgument, n.Name, dir, err)
		}
		confList = list.Bytes
	default:
		return nil, nil
	}
	list, err := libcni.NetworkConfFromBytes(confList)
	if err != nil {
		return nil, fmt.Errorf("CNI configuration: %w", err)
	}
	rec := networkRecord{
		ContainerID: rt.containerID(sb.id), Mode: n.Mode, IfName: sandboxIfName,
		PluginDirs: pluginDirs, CacheDir: rt.opts.CNICacheDir, ConfList: confList,
		Sandbox: sb.id, Created: time.Now(),
	}
	if pm := portMappings(n.Ports); len(pm) > 0 {
		rec.Capability = map[string]any{"portMappings": pm}
	}
	if n.Mode == spec.NetworkBridge {
		rec.Bridge = list.Name
	}
	rec.Netns = filepath.Join(rt.opts.NetnsDir, rec.ContainerID)
	a := &attachment{rec: rec, list: list, cni: rt.cniConfig(rec)}
	if err := rt.writeRecord(rec); err != nil {
		return nil, err
	}
	if err := bindNetns(sb.holder.proc.Pid(), rec.Netns); err != nil {
		_ = rt.detach(context.WithoutCancel(ctx), a)
		return nil, err
	}
	addStart := time.Now()
	res, err := a.cni.AddNetworkList(ctx, list, a.runtimeConf())
	a.addTook = time.Since(addStart)
	if err != nil {
		// DEL after a failed ADD is CNI's rule: it frees what the plugins
		// before the failing one made.
		if derr := rt.detach(context.WithoutCancel(ctx), a); derr != nil {
			// A configuration that fails its ADD mostly fails its DEL as
			// well: forget it rather than retry it at every start.
			rt.log.Warn().Err(derr).Str("sandbox", sb.id).Msg("cleaning up a failed CNI ADD")
			_ = unbindNetns(rec.Netns)
			_ = os.Remove(rt.recordPath(rec.ContainerID))
		}
		return nil, fmt.Errorf("CNI ADD of network %q: %w", list.Name, err)
	}
	a.status = networkStatus(n, list.Name, rec, res)
	rt.noteBridge(rec.Bridge)
	return a, nil
}

func (a *attachment) runtimeConf() *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: a.rec.ContainerID, NetNS: a.rec.Netns, IfName: a.rec.IfName,
		CapabilityArgs: a.rec.Capability}
}

func (rt *Runtime) cniConfig(rec networkRecord) *libcni.CNIConfig {
	return libcni.NewCNIConfigWithCacheDir(rec.PluginDirs, rec.CacheDir, &pluginExec{})
}

func networkStatus(n *spec.Network, name string, rec networkRecord, res types.Result) NetworkStatus {
	st := NetworkStatus{Mode: n.Mode, Network: name, ContainerID: rec.ContainerID, Interface: rec.IfName,
		Ports: append([]spec.Port(nil), n.Ports...)}
	if b, err := json.Marshal(res); err == nil {
		st.Result = b
	}
	if r, err := types100.NewResultFromResult(res); err == nil {
		for _, ip := range r.IPs {
			st.IPs = append(st.IPs, ip.Address.String())
			if ip.Gateway != nil {
				st.Gateways = append(st.Gateways, ip.Gateway.String())
			}
		}
	}
	return st
}

// detach DELs an attachment, unmounts its namespace and forgets its
// record; the record stays when the DEL fails, for the next start to
// retry.
func (rt *Runtime) detach(ctx context.Context, a *attachment) error {
	list := a.list
	if list == nil {
		l, err := libcni.NetworkConfFromBytes(a.rec.ConfList)
		if err != nil {
			_ = unbindNetns(a.rec.Netns)
			_ = os.Remove(rt.recordPath(a.rec.ContainerID))
			return fmt.Errorf("CNI configuration of %s is unreadable, nothing to DEL: %w", a.rec.ContainerID, err)
		}
		list = l
	}
	rc := a.runtimeConf()
	if _, err := os.Stat(rc.NetNS); err != nil {
		// Gone with a reboot: the plugins still free what lives outside
		// it (the IPAM reservation, the port mappings).
		rc.NetNS = ""
	}
	err := a.cni.DelNetworkList(ctx, list, rc)
	if uerr := unbindNetns(a.rec.Netns); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("CNI DEL of network %q for %s: %w", list.Name, a.rec.ContainerID, err)
	}
	if err := os.Remove(rt.recordPath(a.rec.ContainerID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// CheckNetwork runs the plugins' CHECK on sandbox id's attachment: nil
// when the network is as ADD left it (or the sandbox has none).
func (rt *Runtime) CheckNetwork(ctx context.Context, id string) error {
	sb, err := rt.readySandbox(id)
	if err != nil {
		return err
	}
	a := sb.net
	if a == nil {
		return nil
	}
	if err := a.cni.CheckNetworkList(ctx, a.list, a.runtimeConf()); err != nil {
		return fmt.Errorf("CNI CHECK of network %q for sandbox %q: %w", a.list.Name, id, err)
	}
	return nil
}

// NetworkStatus returns sandbox id's attachment; ok is false for a
// sandbox with no bridge or cni network.
func (rt *Runtime) NetworkStatus(id string) (st NetworkStatus, ok bool, err error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sb, err := rt.getSandbox(id)
	if err != nil || sb.net == nil {
		return NetworkStatus{}, false, err
	}
	return sb.net.status, true, nil
}

func (rt *Runtime) recordPath(cid string) string {
	return filepath.Join(rt.recordDir(), cid+".json")
}

func (rt *Runtime) writeRecord(rec networkRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(rt.recordDir(), 0o700); err != nil {
		return fmt.Errorf("recording the CNI attachment: %w", err)
	}
	tmp := rt.recordPath(rec.ContainerID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("recording the CNI attachment: %w", err)
	}
	return os.Rename(tmp, rt.recordPath(rec.ContainerID))
}

// sweepNetworks DELs what an earlier run of this instance attached and
// did not detach (it was SIGKILLed, or the host rebooted under it).
func (rt *Runtime) sweepNetworks(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(rt.recordDir())
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		// None, or not this podsup's: one that may not read the records
		// (a rootless podsup beside a root one's) made none of them.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(filepath.Join(rt.recordDir(), name))
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(rt.recordDir(), name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var rec networkRecord
		if err := json.Unmarshal(b, &rec); err != nil || rec.ContainerID+".json" != name {
			errs = append(errs, fmt.Errorf("CNI record %s is unreadable: %v", name, err))
			continue
		}
		a := &attachment{rec: rec, cni: rt.cniConfig(rec)}
		rt.noteBridge(rec.Bridge)
		if err := rt.detach(ctx, a); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, rec.ContainerID)
	}
	return done, errors.Join(errs...)
}

// bindNetns keeps pid's network namespace at path (a bind mount), so that
// it outlives the holder and a DEL after a crash still finds it.
func bindNetns(pid int, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("keeping the sandbox's network namespace: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("keeping the sandbox's network namespace: %w", err)
	}
	_ = f.Close()
	if err := unix.Mount(fmt.Sprintf("/proc/%d/ns/net", pid), path, "", unix.MS_BIND, ""); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("keeping the sandbox's network namespace at %s: %w", path, err)
	}
	return nil
}

// unbindNetns undoes bindNetns; a path that is not there is no error.
func unbindNetns(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// pluginExec runs CNI plugins through package proc (its one reaper: an
// os/exec wait would race it for the plugin's exit).
type pluginExec struct{ version.PluginDecoder }

// maxPluginOutput bounds what a plugin's stdout and stderr may hold.
const maxPluginOutput = 1 << 20

func (pluginExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}

func (pluginExec) ExecPlugin(ctx context.Context, path string, stdin []byte, environ []string) ([]byte, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _, _, _ = inR.Close(), inW.Close(), outR.Close(), outW.Close()
		return nil, err
	}
	p, err := proc.Start(&proc.Cmd{Path: path, Args: []string{path}, RunAs: proc.RunAs{Env: environ},
		Stdin: inR, Stdout: outW, Stderr: errW})
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	if err != nil {
		_, _, _ = inW.Close(), outR.Close(), errR.Close()
		return nil, fmt.Errorf("starting CNI plugin %s: %w", path, err)
	}
	go func() {
		_, _ = inW.Write(stdin)
		_ = inW.Close()
	}()
	var stdout, stderr bytes.Buffer
	errDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(&stderr, io.LimitReader(errR, maxPluginOutput))
		_, _ = io.Copy(io.Discard, errR)
		_ = errR.Close()
		close(errDone)
	}()
	stop := context.AfterFunc(ctx, func() { _ = p.KillTree(unix.SIGKILL) })
	_, _ = io.Copy(&stdout, io.LimitReader(outR, maxPluginOutput))
	_, _ = io.Copy(io.Discard, outR)
	_ = outR.Close()
	<-errDone
	e, werr := p.Wait(context.WithoutCancel(ctx))
	stop()
	if werr != nil {
		return nil, werr
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("CNI plugin %s: %w", filepath.Base(path), ctx.Err())
	}
	if e.Code() != 0 {
		return nil, pluginError(e, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// pluginError is a failed plugin's error: the CNI error it printed on
// stdout, else its stderr (as libcni's own exec does).
func pluginError(e proc.Exit, stdout, stderr []byte) error {
	msg := types.Error{}
	switch {
	case len(stdout) > 0 && json.Unmarshal(stdout, &msg) == nil && msg.Msg != "":
	case len(stderr) > 0:
		msg.Msg = fmt.Sprintf("netplugin failed (%s): %q", e, strings.TrimSpace(string(stderr)))
	default:
		msg.Msg = fmt.Sprintf("netplugin failed with no error message (%s)", e)
	}
	return &msg
}

// noteBridge remembers a bridge this runtime attached to, for Close.
func (rt *Runtime) noteBridge(name string) {
	if name == "" {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.bridges == nil {
		rt.bridges = map[string]bool{}
	}
	rt.bridges[name] = true
}

// removeEmptyBridges deletes the bridges this runtime attached to that
// have no port left: the bridge plugin makes a bridge (with the gateway's
// address) on the first ADD and never removes it, and a podsup that
// stops should leave no interface behind. A bridge another runtime still
// uses keeps its ports and stays.
func (rt *Runtime) removeEmptyBridges() error {
	rt.mu.Lock()
	names := make([]string, 0, len(rt.bridges))
	for name := range rt.bridges {
		names = append(names, name)
	}
	rt.mu.Unlock()
	var errs []error
	for _, name := range names {
		ports, err := os.ReadDir(filepath.Join("/sys/class/net", name, "brif"))
		if err != nil || len(ports) > 0 {
			continue // gone already, not a bridge, or in use
		}
		if err := deleteLink(name); err != nil {
			errs = append(errs, fmt.Errorf("removing bridge %s: %w", name, err))
			continue
		}
		removeEmptyIPAMDir(filepath.Join(hostLocalDataDir, name))
	}
	return errors.Join(errs...)
}

// deleteLink deletes the network interface called name (RTM_DELLINK); a
// missing one is no error.
func deleteLink(name string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg)
	hdr := (*unix.NlMsghdr)(unsafe.Pointer(&req[0]))
	*hdr = unix.NlMsghdr{Len: uint32(len(req)), Type: unix.RTM_DELLINK, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK, Seq: 1}
	info := (*unix.IfInfomsg)(unsafe.Pointer(&req[unix.SizeofNlMsghdr]))
	*info = unix.IfInfomsg{Family: unix.AF_UNSPEC, Index: int32(ifi.Index)}
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if errno := -int32(binary.NativeEndian.Uint32(m.Data[:4])); errno != 0 && syscall.Errno(errno) != unix.ENODEV {
				return syscall.Errno(errno)
			}
		}
	}
	return nil
}

// hostLocalDataDir is where host-local keeps its reservations, one
// directory per network (bridgeConfList sets no dataDir of its own).
const hostLocalDataDir = "/var/lib/cni/networks"

// removeEmptyIPAMDir removes a network's host-local directory once it
// holds no reservation, only host-local's lock and its last reserved
// address, so that a stopped podsup leaves no trace of its bridge.
func removeEmptyIPAMDir(dir string) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range es {
		if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip.") {
			return // a reservation: someone still uses the network
		}
	}
	for _, e := range es {
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
	_ = os.Remove(dir)
}
