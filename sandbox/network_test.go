package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// These tests attach sandboxes with the distribution's CNI plugins
// (containernetworking-plugins; .ci/run installs them). Each test has a
// bridge and a subnet of its own, so they never meet one another's
// leftovers.

// serve-on listens on args[0] (host:port) and answers every request with
// args[1].
var _ = testproc.Register("serve-on", func(args []string) int {
	l, err := net.Listen("tcp", args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, args[1]) }))
	return 1
})

// needCNI skips a test on a machine without the plugins.
func needCNI(t testing.TB) {
	t.Helper()
	testproc.NeedRoot(t)
	for _, dir := range spec.DefaultCNIPluginDirs {
		if _, err := os.Stat(filepath.Join(dir, "bridge")); err == nil {
			if _, err := os.Stat("/usr/sbin/iptables"); err == nil {
				return
			}
		}
	}
	t.Skip("the CNI plugins (apt-get install containernetworking-plugins iptables) are not installed")
}

// netTestOptions are runtime options whose network state lives in dirs of
// the test's own.
func netTestOptions(t testing.TB, instance string) Options {
	base := t.TempDir()
	return Options{Instance: instance, HolderStderr: os.Stderr,
		NetnsDir: filepath.Join(base, "netns"), NetworkStateDir: filepath.Join(base, "state")}
}

func newNetRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("closing runtime: %v", err)
		}
	})
	return rt
}

func bridged(bridge, subnet string, ports ...spec.Port) spec.Sandbox {
	return spec.Sandbox{Namespaces: []string{"pid", "mount", "net"},
		Network: &spec.Network{Mode: spec.NetworkBridge, Bridge: bridge, Subnet: subnet, Ports: ports}}
}

// netLeftovers is what a bridge network can leave behind on the host.
type netLeftovers struct {
	Veths    []string // ports of the bridge
	Address  []string // the bridge's addresses (it exists)
	IPAM     []string // host-local's reservations (and its directory once unused)
	Iptables []string // rules naming the subnet or one of our container ids
	Netns    []string // kept namespaces
	Records  []string // attachments recorded and not deleted
}

func (l netLeftovers) empty() bool {
	return len(l.Veths)+len(l.Address)+len(l.IPAM)+len(l.Iptables)+len(l.Netns)+len(l.Records) == 0
}

// listNetLeftovers lists what is there of bridge, subnet and the
// attachments of runtime options o.
func listNetLeftovers(t testing.TB, o Options, bridge, subnet string) netLeftovers {
	t.Helper()
	var l netLeftovers
	names := func(dir string, skip ...string) []string {
		es, _ := os.ReadDir(dir)
		var out []string
	next:
		for _, e := range es {
			for _, s := range skip {
				if strings.HasPrefix(e.Name(), s) {
					continue next
				}
			}
			out = append(out, e.Name())
		}
		return out
	}
	l.Veths = names(filepath.Join("/sys/class/net", bridge, "brif"))
	if ifi, err := net.InterfaceByName(bridge); err == nil {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if ip, _, _ := net.ParseCIDR(a.String()); ip != nil && ip.To4() != nil {
				l.Address = append(l.Address, a.String())
			}
		}
	}
	l.IPAM = names(filepath.Join(hostLocalDataDir, bridge))
	if len(l.IPAM) > 0 && len(l.Veths) > 0 {
		// While in use: the reservations alone.
		l.IPAM = names(filepath.Join(hostLocalDataDir, bridge), "lock", "last_reserved_ip")
	}
	l.Netns = names(o.NetnsDir)
	l.Records = names(filepath.Join(o.NetworkStateDir, instanceTag(o.Instance)))
	res, err := execrun.SandboxRunner{}.Run(context.Background(), execrun.Request{Argv: []string{"iptables-save"}, Timeout: 20 * time.Second, OutputLimit: 4 << 20})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("iptables-save: %v %s", err, res.Output)
	}
	tag := "podsup-" + instanceTag(o.Instance)
	// The subnets are /24s: a rule naming one of their addresses (the
	// firewall plugin's) has the first three octets.
	prefix := strings.TrimSuffix(subnet, "0/24")
	for _, line := range strings.Split(string(res.Output), "\n") {
		if strings.Contains(line, prefix) || strings.Contains(line, tag) {
			l.Iptables = append(l.Iptables, line)
		}
	}
	return l
}

func sandboxIP(t testing.TB, rt *Runtime, id string) string {
	t.Helper()
	st, ok, err := rt.NetworkStatus(id)
	if err != nil || !ok || len(st.IPs) == 0 {
		t.Fatalf("NetworkStatus(%s) = %+v, %v, %v", id, st, ok, err)
	}
	ip, _, err := net.ParseCIDR(st.IPs[0])
	if err != nil {
		t.Fatal(err)
	}
	return ip.String()
}

// httpGet fetches url from the host.
func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// hostAddress is a non-loopback IPv4 address of the host, or "".
func hostAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !strings.HasPrefix(ipn.IP.String(), "10.23") {
			return ipn.IP.String()
		}
	}
	return ""
}

// Two sandboxes on one podsup bridge: one reaches the other's server by
// its address, the published port answers from the host (on 127.0.0.1 and
// on the host's own address), and once both are deleted and the runtime
// is closed nothing of the network is left.
func TestBridgeSandboxesReachEachOtherAndPublishPorts(t *testing.T) {
	needCNI(t)
	const bridge, subnet, hostPort = "pst-reach", "10.231.1.0/24", 18231
	o := netTestOptions(t, testInstancePrefix()+"reach")
	before := listNetLeftovers(t, o, bridge, subnet)
	if !before.empty() {
		t.Fatalf("leftovers before the test: %+v", before)
	}
	rt, err := NewRuntime(o)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = rt.Close()
		}
	}()
	mustCreateSandbox(t, rt, "db", bridged(bridge, subnet, spec.Port{Name: "http", ContainerPort: 8080, HostPort: hostPort}))
	mustCreateSandbox(t, rt, "web", bridged(bridge, subnet))
	token := fmt.Sprintf("db answers %d", os.Getpid())
	runHelper(t, rt, "db", "server", "serve-on", "0.0.0.0:8080", token)
	dbIP := sandboxIP(t, rt, "db")
	if !strings.HasPrefix(dbIP, "10.231.1.") {
		t.Errorf("db's address %s is not from subnet %s", dbIP, subnet)
	}

	url := "http://" + net.JoinHostPort(dbIP, "8080") + "/"
	var out string
	if !testproc.Eventually(10*time.Second, func() bool {
		res, err := runIn(testCtx(t), rt, "web", execrun.Request{Argv: helperArgv(url), RunAs: proc.RunAs{Env: testproc.HelperEnv("get")}, Timeout: 10 * time.Second})
		out = string(res.Output)
		return err == nil && res.ExitCode == 0 && out == token
	}) {
		t.Errorf("web could not reach db at %s: %q", url, out)
	}
	// By name: package stack writes the members of a bridge into each
	// other's /etc/hosts (stack/peers.go); examples/network.hcl's web
	// group is ready only once it reaches db by name (TestExamplesRun).

	// From the host, on the loopback address (portmap's SNAT and its
	// route_localnet on the bridge make it work) and on the host's own.
	hosts := []string{"127.0.0.1"}
	if a := hostAddress(); a != "" {
		hosts = append(hosts, a)
	}
	for _, h := range hosts {
		u := "http://" + net.JoinHostPort(h, strconv.Itoa(hostPort)) + "/"
		var got string
		var err error
		if !testproc.Eventually(10*time.Second, func() bool { got, err = httpGet(u); return err == nil && got == token }) {
			t.Errorf("the published port %s answered %q, %v", u, got, err)
		}
	}
	// CHECK of web, which publishes nothing: the portmap of
	// containernetworking-plugins 1.1 fails its own CHECK on a host
	// without IPv6 rules ("could not check ipv6 dnat").
	if err := rt.CheckNetwork(testCtx(t), "web"); err != nil {
		t.Errorf("CHECK: %v", err)
	}
	st, _, _ := rt.NetworkStatus("db")
	if st.Interface != "eth0" || len(st.Gateways) == 0 || len(st.Result) == 0 || len(st.Ports) != 1 {
		t.Errorf("NetworkStatus(db) = %+v", st)
	}

	during := listNetLeftovers(t, o, bridge, subnet)
	if len(during.Veths) != 2 || len(during.IPAM) != 2 || len(during.Netns) != 2 || len(during.Records) != 2 || len(during.Iptables) == 0 || len(during.Address) != 1 {
		t.Errorf("while running, want 2 veths, IPAM reservations, kept namespaces and records, the bridge's address and iptables rules: %+v", during)
	}
	for _, id := range []string{"db", "web"} {
		if err := rt.DeleteSandbox(testCtx(t), id); err != nil {
			t.Error(err)
		}
	}
	closed = true
	if err := rt.Close(); err != nil {
		t.Error(err)
	}
	if after := listNetLeftovers(t, o, bridge, subnet); !after.empty() {
		t.Errorf("after the sandboxes' deletion and Close, left: %+v", after)
	}
}

// A sandbox with mode none has its loopback alone and cannot connect out;
// one on a bridge reaches a server on the host through its gateway.
func TestNetworkNoneCannotConnectOut(t *testing.T) {
	needCNI(t)
	const bridge, subnet = "pst-none", "10.231.2.0/24"
	rt := newNetRuntime(t, netTestOptions(t, testInstancePrefix()+"none"))
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "host") }))
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	mustCreateSandbox(t, rt, "none", spec.Sandbox{Namespaces: []string{"pid", "net"}, Network: &spec.Network{Mode: spec.NetworkNone}})
	mustCreateSandbox(t, rt, "bridged", bridged(bridge, subnet))
	st, _, _ := rt.NetworkStatus("bridged")
	if len(st.Gateways) == 0 {
		t.Fatalf("NetworkStatus(bridged) = %+v", st)
	}
	url := "http://" + net.JoinHostPort(st.Gateways[0], port) + "/"
	get := func(sb string) (execrun.Result, error) {
		return runIn(testCtx(t), rt, sb, execrun.Request{Argv: helperArgv(url), RunAs: proc.RunAs{Env: testproc.HelperEnv("get")}, Timeout: 10 * time.Second})
	}
	if res, err := get("bridged"); err != nil || res.ExitCode != 0 || string(res.Output) != "host" {
		t.Errorf("the bridged sandbox could not reach the host at %s: %v %q", url, err, res.Output)
	}
	if res, err := get("none"); err != nil || res.ExitCode == 0 {
		t.Errorf("the sandbox with mode none reached %s: %v %q", url, err, res.Output)
	}
	if _, ok, _ := rt.NetworkStatus("none"); ok {
		t.Error("mode none has a CNI attachment")
	}
}

// A failed ADD fails the sandbox's creation with the plugin's error, and
// leaves no holder, kept namespace or record behind.
func TestFailedADDFailsTheSandbox(t *testing.T) {
	needCNI(t)
	conf := t.TempDir()
	const list = `{"cniVersion": "1.0.0", "name": "broken", "plugins": [
		{"type": "bridge", "bridge": "pst-broken", "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.231.3.0/24", "rangeStart": "10.231.4.1"}]]}}]}`
	if err := os.WriteFile(filepath.Join(conf, "broken.conflist"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	o := netTestOptions(t, testInstancePrefix()+"broken")
	rt := newNetRuntime(t, o)
	t.Cleanup(func() { _ = deleteLink("pst-broken"); _ = os.RemoveAll(filepath.Join(hostLocalDataDir, "pst-broken")) })
	err := rt.CreateSandbox(testCtx(t), "b", spec.Sandbox{Namespaces: []string{"net"},
		Network: &spec.Network{Mode: spec.NetworkCNI, Name: "broken", ConfDir: conf}})
	if err == nil || !strings.Contains(err.Error(), "CNI ADD") || !strings.Contains(err.Error(), "10.231.4.1") {
		t.Fatalf("CreateSandbox = %v, want the plugin's complaint about rangeStart", err)
	}
	if sbs := rt.listSandboxes(); len(sbs) != 0 {
		t.Errorf("sandboxes after a failed ADD: %+v", sbs)
	}
	if l := listNetLeftovers(t, o, "pst-broken", "10.231.3.0/24"); len(l.Netns)+len(l.Records)+len(l.Veths)+len(l.IPAM) != 0 {
		t.Errorf("left after a failed ADD: %+v", l)
	}
	err = rt.CreateSandbox(testCtx(t), "c", spec.Sandbox{Namespaces: []string{"net"},
		Network: &spec.Network{Mode: spec.NetworkCNI, Name: "missing", ConfDir: conf}})
	if err == nil || !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a missing CNI network: %v, want InvalidArgument", err)
	}
}

// Mode cni: a network the user brings, named in a configuration
// directory of its own, attaches the sandbox as the file says (its own
// bridge and subnet here), the host reaches a server in it at that
// address, and deleting it leaves nothing of the network.
func TestNamedCNINetworkAttachesTheSandbox(t *testing.T) {
	needCNI(t)
	const bridge, subnet, name = "pst-named", "10.231.6.0/24", "pst-named-net"
	conf := t.TempDir()
	list := `{"cniVersion": "1.0.0", "name": "` + name + `", "plugins": [
		{"type": "bridge", "bridge": "` + bridge + `", "isGateway": true, "ipMasq": true,
		 "ipam": {"type": "host-local", "ranges": [[{"subnet": "` + subnet + `"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}`
	if err := os.WriteFile(filepath.Join(conf, "10-lan.conflist"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	o := netTestOptions(t, testInstancePrefix()+"named")
	before := listNetLeftovers(t, o, bridge, subnet)
	if !before.empty() {
		t.Fatalf("leftovers before the test: %+v", before)
	}
	rt, err := NewRuntime(o)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = rt.Close()
		}
	}()
	mustCreateSandbox(t, rt, "app", spec.Sandbox{Namespaces: []string{"pid", "net"},
		Network: &spec.Network{Mode: spec.NetworkCNI, Name: name, ConfDir: conf, PluginDirs: spec.DefaultCNIPluginDirs}})
	ip := sandboxIP(t, rt, "app")
	if !strings.HasPrefix(ip, "10.231.6.") {
		t.Errorf("the sandbox's address %s is not from the network's subnet %s", ip, subnet)
	}
	token := fmt.Sprintf("lan answers %d", os.Getpid())
	runHelper(t, rt, "app", "server", "serve-on", "0.0.0.0:8080", token)
	url := "http://" + net.JoinHostPort(ip, "8080") + "/"
	var got string
	if !testproc.Eventually(10*time.Second, func() bool { got, err = httpGet(url); return err == nil && got == token }) {
		t.Errorf("the host could not reach the sandbox at %s: %q, %v", url, got, err)
	}
	if st, ok, _ := rt.NetworkStatus("app"); !ok || st.Network != name {
		t.Errorf("NetworkStatus(app) = %+v, %v: want network %s", st, ok, name)
	}
	if err := rt.DeleteSandbox(testCtx(t), "app"); err != nil {
		t.Error(err)
	}
	closed = true
	if err := rt.Close(); err != nil {
		t.Error(err)
	}
	// The bridge is the user's network's, not podsup's: it stays, empty,
	// as after any CNI runtime; everything of the attachment goes,
	// host-local's reservation (kept under the network's name) too.
	t.Cleanup(func() {
		_ = deleteLink(bridge)
		_ = os.RemoveAll(filepath.Join(hostLocalDataDir, name))
	})
	if after := listNetLeftovers(t, o, bridge, subnet); len(after.Veths)+len(after.Netns)+len(after.Records)+len(after.Iptables) != 0 {
		t.Errorf("after the sandbox's deletion and Close, left: %+v", after)
	}
	if _, err := os.Stat(filepath.Join(hostLocalDataDir, name, ip)); err == nil {
		t.Errorf("the reservation of %s is left in %s", ip, filepath.Join(hostLocalDataDir, name))
	}
}

// A sandbox deleted and created again (a rebuild) holds one address, not
// two.
func TestRebuiltSandboxHoldsOneAddress(t *testing.T) {
	needCNI(t)
	const bridge, subnet = "pst-rebuild", "10.231.5.0/24"
	o := netTestOptions(t, testInstancePrefix()+"rebuild")
	rt := newNetRuntime(t, o)
	for range 3 {
		mustCreateSandbox(t, rt, "r", bridged(bridge, subnet, spec.Port{Name: "p", ContainerPort: 80, HostPort: 18235}))
		if err := rt.DeleteSandbox(testCtx(t), "r"); err != nil {
			t.Fatal(err)
		}
	}
	mustCreateSandbox(t, rt, "r", bridged(bridge, subnet, spec.Port{Name: "p", ContainerPort: 80, HostPort: 18235}))
	l := listNetLeftovers(t, o, bridge, subnet)
	if len(l.Veths) != 1 || len(l.IPAM) != 1 || len(l.Netns) != 1 || len(l.Records) != 1 {
		t.Errorf("after three rebuilds, want one of each: %+v", l)
	}
	dnat := 0
	for _, line := range l.Iptables {
		if strings.Contains(line, "18235") {
			dnat++
		}
	}
	if dnat == 0 || dnat > 3 {
		t.Errorf("the port's rules after three rebuilds (one set wanted): %q", l.Iptables)
	}
}

// netCrashReport is what the "crashy-bridged-podsup" helper prints.
type netCrashReport struct {
	Holder  int
	Problem string
}

// crashy-bridged-podsup runs a runtime of instance args[0] (NetnsDir
// args[1], NetworkStateDir args[2]) with a sandbox on bridge args[3],
// subnet args[4], publishing host port args[5], then waits for SIGKILL.
var _ = testproc.Register("crashy-bridged-podsup", func(args []string) int {
	out := json.NewEncoder(os.Stdout)
	fail := func(err error) int { _ = out.Encode(netCrashReport{Problem: err.Error()}); return 1 }
	rt, err := NewRuntime(Options{Instance: args[0], NetnsDir: args[1], NetworkStateDir: args[2], HolderStderr: os.Stderr})
	if err != nil {
		return fail(err)
	}
	port, _ := strconv.Atoi(args[5])
	if err := rt.CreateSandbox(context.Background(), "s", bridged(args[3], args[4], spec.Port{Name: "p", ContainerPort: 80, HostPort: port})); err != nil {
		return fail(err)
	}
	st, _ := rt.SandboxStatus("s")
	_ = out.Encode(netCrashReport{Holder: st.HolderPid})
	time.Sleep(5 * time.Minute)
	return 0
})

// After a SIGKILLed podsup, the next start of the same instance DELs what
// it attached: no veth, IPAM reservation, rule or kept namespace is left.
func TestSIGKILLedPodsupLeavesNoNetworkAfterRestart(t *testing.T) {
	needCNI(t)
	const bridge, subnet, port = "pst-crash", "10.231.6.0/24", "18236"
	o := netTestOptions(t, testInstancePrefix()+"netcrash")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := helperCmd(t, "crashy-bridged-podsup", o.Instance, o.NetnsDir, o.NetworkStateDir, bridge, subnet, port)
	c.Stdout, c.Stderr = w, os.Stderr
	podsup, err := proc.Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = podsup.Signal(9) })
	var rep netCrashReport
	if err := json.NewDecoder(bufio.NewReader(r)).Decode(&rep); err != nil || rep.Problem != "" || rep.Holder <= 0 {
		t.Fatalf("crashy podsup: %+v %v", rep, err)
	}
	during := listNetLeftovers(t, o, bridge, subnet)
	if len(during.Veths) != 1 || len(during.IPAM) != 1 || len(during.Netns) != 1 || len(during.Iptables) == 0 {
		t.Fatalf("before the crash, want a veth, a reservation, a kept namespace and rules: %+v", during)
	}
	if err := podsup.Signal(9); err != nil {
		t.Fatal(err)
	}
	<-podsup.Done()
	if !testproc.Eventually(10*time.Second, func() bool { return !testproc.Alive(rep.Holder) }) {
		t.Fatalf("holder %d alive after podsup's death", rep.Holder)
	}
	// The kept namespace holds the veth until the next start DELs it.
	if l := listNetLeftovers(t, o, bridge, subnet); len(l.Veths) != 1 || len(l.Records) != 1 {
		t.Errorf("after the crash, before the restart: %+v", l)
	}
	rt, err := NewRuntime(Options{Instance: o.Instance, NetnsDir: o.NetnsDir, NetworkStateDir: o.NetworkStateDir})
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.RecoveredNetworks(); len(got) != 1 {
		t.Errorf("RecoveredNetworks = %q, want the one attachment", got)
	}
	if err := rt.Close(); err != nil {
		t.Error(err)
	}
	if l := listNetLeftovers(t, o, bridge, subnet); !l.empty() {
		t.Errorf("after the restart's recovery and Close, left: %+v", l)
	}
}
