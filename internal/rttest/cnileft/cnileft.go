// Package cnileft checks, for the tests of bridged sandboxes run end to
// end, that nothing of one CNI attachment is left once its sandbox is
// gone: no host-local reservation of its addresses and no iptables rule
// naming its container ID. It looks at that attachment's own traces only:
// other tests' sandboxes may share the bridge meanwhile (tests only).
package cnileft

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
)

// hostLocalDir is where the host-local IPAM plugin keeps its
// reservations, one directory per CNI network, one file per address.
const hostLocalDir = "/var/lib/cni/networks"

// Check fails t if network (the CNI network's name, a bridge's for
// podsup's bridge mode) still reserves one of ips (CIDR form, as CNI's
// result gives them) or iptables still has a rule of containerID.
func Check(t testing.TB, network, containerID string, ips []string) {
	t.Helper()
	for _, cidr := range ips {
		ip, _, err := net.ParseCIDR(cidr)
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(hostLocalDir, network, ip.String())); err == nil {
			t.Errorf("%s's IPAM reservation %s is left in %s", containerID, ip, filepath.Join(hostLocalDir, network))
		}
	}
	res, err := execrun.SandboxRunner{}.Run(context.Background(), execrun.Request{Argv: []string{"iptables-save"}, Timeout: 20 * time.Second, OutputLimit: 4 << 20})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("iptables-save (installed by .ci/run with iptables): %v, exit %d: %s", err, res.ExitCode, res.Output)
	}
	if strings.Contains(string(res.Output), containerID) {
		t.Errorf("iptables rules of %s are left:\n%s", containerID, res.Output)
	}
}
