# rootfs.hcl: a group in a root filesystem of its own.
#
# Group "display" pivots into a directory (rootfs) instead of the host's
# /: the one-shot group "rootfs" assembles that directory under /tmp
# first (a real device would ship an image), and the host's /usr is
# bind-mounted into it read-only, so its programs are the host's while
# everything else it sees is its own.
#
# Sandboxes need root (namespaces and cgroups):
#   sudo podsup up -f examples/rootfs.hcl
#   sudo podsup logs display/panel

supervisor {
  minimum_grace = "1s"
}

group "rootfs" {
  # One step, done once: the directory "display" pivots into.
  restart_policy = "on-failure"

  process "assemble" {
    command = ["sh", "-c", "r=/tmp/podsup-example-rootfs; mkdir -p $r/usr $r/proc $r/tmp && for d in bin sbin lib lib64; do ln -sfn usr/$d $r/$d; done"]
  }
}

group "display" {
  depends_on "rootfs" {
    condition = "completed"
  }

  sandbox {
    namespaces = ["pid", "mount"]
    rootfs     = "/tmp/podsup-example-rootfs"

    mount {
      type     = "bind"
      source   = "/usr"
      target   = "/usr"
      readonly = true
    }
    mount {
      type   = "proc"
      target = "/proc"
    }
  }

  process "panel" {
    # Paths inside the root filesystem: /bin is its usr/bin.
    command = ["/bin/sh", "-c", "trap 'exit 0' TERM; echo panel: root is $(ls / | tr '\\n' ' '); while :; do sleep 1; done"]
  }
}
