# rootfs.hcl: a group in a root filesystem of its own.
#
# Group "display" pivots into a directory (rootfs) instead of the host's
# /: group "rootfs" assembles that directory under /tmp first (a real
# device would ship an image) and removes it when podsup stops, and the
# host's /usr is bind-mounted into it read-only, so its programs are the
# host's while everything else it sees is its own. Its root is read-only,
# its /tmp a tmpfs of its own, and runc's masked /proc paths are hidden.
#
# Sandboxes need root (namespaces and cgroups):
#   sudo podsup up -f examples/rootfs.hcl
#   sudo podsup logs display/panel

supervisor {
  minimum_grace = "1s"
}

group "rootfs" {
  # Makes the directory "display" pivots into, is ready once it exists,
  # and removes it when stopped: after "display", which depends on it
  # (stop_order "ordered", the default).
  process "assemble" {
    command = ["sh", "-c", "r=/tmp/podsup-example-rootfs; trap 'rm -rf $r; exit 0' TERM; mkdir -p $r/usr $r/proc $r/tmp && for d in bin sbin lib lib64; do ln -sfn usr/$d $r/$d; done && touch $r/.assembled; while :; do sleep 1; done"]
    readiness_probe {
      period = "1s"
      exec {
        command = ["test", "-e", "/tmp/podsup-example-rootfs/.assembled"]
      }
    }
  }
}

group "display" {
  depends_on "rootfs" {
    condition = "ready"
  }

  sandbox {
    namespaces                = ["pid", "mount"]
    rootfs                    = "/tmp/podsup-example-rootfs"
    read_only_root_filesystem = true
    private_tmp               = true
    proc_mount                = "Default" # runc's masked and read-only /proc paths

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
