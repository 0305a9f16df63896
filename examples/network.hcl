# network.hcl: a web service on a podsup bridge, published on the host.
#
# The sandbox has a network namespace of its own, attached by the standard
# CNI plugins: a veth into the bridge "podsup0", an address from
# 10.89.0.0/16, a default route with masquerade outbound, and the host's
# port 18080 forwarded to the service's 8080 (the portmap plugin). Install
# the plugins once:
#   apt-get install containernetworking-plugins iptables
#
# Run it (as root):
#   podsup up -f examples/network.hcl
#   curl http://127.0.0.1:18080/        # in another terminal
#   podsup describe web                 # the sandbox's address and ports
#   podsup shutdown                     # leaves no veth, rule or address
#
# The web group talking to a database group by name waits for names
# between groups (issue 30's /etc/hosts); see docs/config.md's network
# block.

supervisor {
  log_format = "console"
}

group "web" {
  sandbox {
    namespaces = ["pid", "mount", "net"]
    network {
      mode        = "bridge"
      bridge      = "podsup0"
      subnet      = "10.89.0.0/16"
      plugin_dirs = ["/usr/lib/cni", "/opt/cni/bin"]
      port "http" {
        container_port = 8080
        host_port      = 18080
        protocol       = "tcp"
        host_ip        = "0.0.0.0"
      }
    }
    mount {
      type   = "proc"
      target = "/proc"
    }
  }

  process "http" {
    # 0.0.0.0: a server bound to 127.0.0.1 answers only inside the sandbox.
    command     = ["python3", "-m", "http.server", "--bind", "0.0.0.0", "--directory", "/usr/share/doc", "8080"]
    stop_signal = "SIGINT"

    # A probe without a host connects to the sandbox's own address, as
    # kubelet's go to the pod's IP; a port name stands for its
    # container_port.
    readiness_probe {
      http_get {
        port = "http"
        path = "/"
      }
      period = "2s"
    }
  }
}
