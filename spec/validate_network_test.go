package spec

import (
	"strings"
	"testing"
)

func TestNetworkValidation(t *testing.T) {
	bridged := func(name, bridge, subnet string, ports ...Port) Group {
		return Group{Name: name, Processes: []Process{{Name: "p", Command: []string{"x"}}},
			Sandbox: &Sandbox{Namespaces: []string{"net"}, Network: &Network{Mode: NetworkBridge, Bridge: bridge, Subnet: subnet, Ports: ports}}}
	}
	cases := []struct {
		name   string
		groups []Group
		want   string // "" for valid
	}{
		{"two groups share the default bridge", []Group{bridged("a", "", ""), bridged("b", "", DefaultBridgeSubnet)}, ""},
		{"one bridge, two subnets", []Group{bridged("a", "br0", "10.1.0.0/24"), bridged("b", "br0", "10.2.0.0/24")}, `bridge "br0" has subnet 10.1.0.0/24 in group "a"`},
		{"one host port twice", []Group{bridged("a", "", "", Port{Name: "h", ContainerPort: 80, HostPort: 8080}), bridged("b", "", "", Port{Name: "h", ContainerPort: 80, HostPort: 8080})}, `published by group "a" too`},
		{"tcp and udp on one port", []Group{bridged("a", "", "", Port{Name: "t", ContainerPort: 53, HostPort: 53}, Port{Name: "u", ContainerPort: 53, HostPort: 53, Protocol: "udp"})}, ""},
		{"bridge without net", []Group{{Name: "a", Processes: []Process{{Name: "p", Command: []string{"x"}}}, Sandbox: &Sandbox{Network: &Network{Mode: NetworkBridge}}}}, `needs the "net" namespace`},
		{"host with net", []Group{{Name: "a", Processes: []Process{{Name: "p", Command: []string{"x"}}}, Sandbox: &Sandbox{Namespaces: []string{"net"}, Network: &Network{Mode: NetworkHost}}}}, `is the host's network`},
		{"cni without a name", []Group{{Name: "a", Processes: []Process{{Name: "p", Command: []string{"x"}}}, Sandbox: &Sandbox{Namespaces: []string{"net"}, Network: &Network{Mode: NetworkCNI}}}}, `needs the name`},
		{"published port with mode none", []Group{{Name: "a", Processes: []Process{{Name: "p", Command: []string{"x"}}}, Sandbox: &Sandbox{Namespaces: []string{"net"}, Network: &Network{Mode: NetworkNone, Ports: []Port{{Name: "h", ContainerPort: 80, HostPort: 80}}}}}}, `needs mode = "bridge" or "cni"`},
		{"bad subnet", []Group{bridged("a", "", "10.0.0.0/31")}, `leaves no room`},
		{"long bridge name", []Group{bridged("a", "a-bridge-name-too-long", "")}, `Linux interface name`},
	}
	for _, c := range cases {
		err := (&Config{Groups: c.groups}).Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
