# edge.hcl: an edge device, each group in a sandbox with resource limits.
#
# Group "sensors" runs in its own PID, mount, UTS, IPC and network
# namespaces: it sees only its own processes (a fresh /proc), its own
# hostname, a private tmpfs on /tmp and no network but loopback. A cgroup
# caps it at 64 MiB, a quarter of a CPU and 32 tasks, and the collector's
# own cgroup at 48 MiB and 16 tasks of those.
# Group "uplink" shares the host network (it forwards readings) but still
# gets its own PID and mount namespaces and limits.
#
# Run it as root (namespaces and cgroups):
#   sudo podsup up -f examples/edge.hcl
#   sudo podsup status
# As a normal user podsup up runs it rootless, in a user namespace of its
# own, and without the limits unless it has a delegated cgroup
# (examples/rootless.hcl says how).

supervisor {
  log_format    = "json"
  log_level     = "info"
  minimum_grace = "1s"
}

backoff {
  initial = "1s"
  max     = "1m"
  reset   = "5m"
}

group "sensors" {
  restart_policy           = "always"
  termination_grace_period = "5s"

  sandbox {
    namespaces = ["pid", "mount", "uts", "ipc", "net"]
    hostname   = "sensors"

    mount {
      type   = "proc"
      target = "/proc"
    }
    mount {
      type    = "tmpfs"
      target  = "/tmp"
      options = "size=16m,mode=1777"
    }

    resources {
      memory     = "64MiB"
      cpu        = 0.25
      cpu_weight = 50
      pids       = 32
    }
  }

  process "collector" {
    # Stands in for a sensor reader: one reading a second into the tmpfs.
    command = ["sh", "-c", "trap 'kill $! 2>/dev/null; exit 0' TERM; while :; do date +%s >> /tmp/readings; sleep 1 & wait $!; done"]

    # The collector's own cgroup, inside the group's: the group's
    # limits hold for the whole sandbox (probes and podsup exec too),
    # these for the collector's tree alone.
    resources {
      memory = "48MiB"
      pids   = 16
    }

    liveness_probe {
      exec {
        command = ["sh", "-c", "test -s /tmp/readings"]
      }
      initial_delay = "3s"
      period        = "10s"
    }
  }
}

group "uplink" {
  # A sender that gives up after a failure should not hammer the network,
  # and after 10 failures it stays down, as a Job's backoffLimit.
  restart_policy = "on-failure"
  backoff_limit  = 10

  backoff {
    initial = "5s"
  }

  sandbox {
    namespaces = ["pid", "mount"]
    mount {
      type   = "proc"
      target = "/proc"
    }
    resources {
      memory      = "32MiB"
      cpu         = 0.1
      cpu_request = 0.05 # Kubernetes' 50m: cpu_weight is kubelet's weight for it
      pids        = 16
    }
  }

  process "sender" {
    command = ["sh", "-c", "trap 'kill $! 2>/dev/null; exit 0' TERM; while :; do echo uplink: $(cat /proc/sys/kernel/hostname) alive; sleep 30 & wait $!; done"]

    log {
      max_size  = "1MiB"
      max_files = 3
    }
  }
}
