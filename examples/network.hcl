# network.hcl: a web service on a podsup bridge, published on the host,
# talking to a database group on the same bridge by its name.
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
# Groups on one podsup bridge reach each other by group name: podsup
# writes each one's /etc/hosts with the others' addresses (here web's has
# a line for db), and rewrites it in place when one comes, goes or is
# rebuilt. The web group is ready only once it reaches db by that name.

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

  # Ready once the database answers at its group's name.
  process "db-check" {
    command = ["sh", "-c", "exec sleep infinity"]
    readiness_probe {
      exec {
        command = ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://db:5432/', timeout=2)"]
      }
      period = "2s"
    }
  }
}

# A stand-in for a database: anything listening on 5432 of its sandbox's
# address. No port is published: only the groups on the bridge reach it.
group "db" {
  sandbox {
    namespaces = ["pid", "mount", "net"]
    network {
      mode        = "bridge"
      bridge      = "podsup0"
      subnet      = "10.89.0.0/16"
      plugin_dirs = ["/usr/lib/cni", "/opt/cni/bin"]
    }
    mount {
      type   = "proc"
      target = "/proc"
    }
  }

  process "postgres" {
    command     = ["python3", "-m", "http.server", "--bind", "0.0.0.0", "--directory", "/usr/share/doc", "5432"]
    stop_signal = "SIGINT"
    readiness_probe {
      tcp_socket {
        port = 5432
      }
      period = "2s"
    }
  }
}
