# rootless.hcl: a sandbox run by a normal user, as podman's rootless mode
# runs containers.
#
# podsup up as a user that is not root re-executes itself in a user
# namespace of its own, where that user is root (uid 0 inside, the user's
# own uid on the host, with no more rights there than the user has), and
# makes the sandbox's namespaces and mounts in it. With a range for the
# user in /etc/subuid and /etc/subgid (and newuidmap/newgidmap installed,
# package uidmap), uids 1 and up inside are that range.
#
# Resource limits need a cgroup the user may write: run podsup as a
# systemd --user service with Delegate=yes, or give up --cgroup a cgroup
# v2 directory delegated to the user. Without one podsup says so in one
# line at start-up (and podsup validate says so too), and runs without
# limits.
#
# Run it as yourself (not root):
#   podsup validate -f examples/rootless.hcl
#   podsup up -f examples/rootless.hcl
#   podsup status
#   podsup exec rootless/app -- id    # root, in the sandbox

group "rootless" {
  restart_policy           = "always"
  termination_grace_period = "5s"

  sandbox {
    namespaces = ["pid", "mount", "uts", "ipc", "net"]
    hostname   = "rootless"

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
      memory = "64MiB"
      pids   = 32
    }
  }

  process "app" {
    # Says who it is in the sandbox, then keeps a heartbeat in its tmpfs.
    command = ["sh", "-c", "echo \"uid $(id -u) on $(hostname), pid $$, uid_map $(cat /proc/self/uid_map)\"; trap 'exit 0' TERM; while :; do date +%s > /tmp/beat; sleep 1 & wait $!; done"]

    liveness_probe {
      exec {
        command = ["sh", "-c", "test -s /tmp/beat"]
      }
      initial_delay = "3s"
      period        = "10s"
    }
  }
}
