# cni.hcl: a group on a CNI network the host brings (here a macvlan on the
# LAN port, addressed by the LAN's DHCP server), not podsup's bridge.
#
# Install the plugins and the network, and start the plugins' DHCP
# client daemon, once:
#   apt-get install containernetworking-plugins iptables
#   mkdir -p /etc/cni/net.d && cp examples/cni/lan.conflist /etc/cni/net.d/
#   /usr/lib/cni/dhcp daemon &
# (lan.conflist names eth0 as the LAN port: change "master" to yours.)
#
# Run it (as root):
#   podsup up -f examples/cni.hcl
#   podsup describe collector          # the address the LAN gave it

group "collector" {
  sandbox {
    namespaces = ["net"]
    network {
      mode     = "cni"
      name     = "lan"
      conf_dir = "/etc/cni/net.d"
    }
  }
  process "agent" {
    command = ["sleep", "infinity"]
  }
}
