# userns.hcl: a sandbox whose root is not the host's root.
#
# Group "confined" runs in a user namespace of its own (Kubernetes'
# hostUsers: false): uid and gid 0..65535 inside are a range of the host's
# ids taken from /etc/subuid and /etc/subgid, 65536 per sandbox, so its
# root owns nothing on the host and its capabilities reach only its own
# namespaces. Its mounts and hostname are made inside it, and its
# processes are podsup's children, as in any sandbox.
#
# podsup takes the ranges from the entry of subid_user (default
# "podsup"). Give that user a range once, as root:
#   echo podsup-example:2000000000:655360 >> /etc/subuid
#   echo podsup-example:2000000000:655360 >> /etc/subgid
# then:
#   sudo podsup up -f examples/userns.hcl
#   podsup describe confined/app     # user namespace: yes; Uid on the host

group "confined" {
  sandbox {
    namespaces     = ["pid", "mount", "uts", "ipc"]
    hostname       = "confined"
    user_namespace = true
    subid_user     = "podsup-example"

    mount {
      type   = "proc"
      target = "/proc"
    }
    mount {
      type   = "tmpfs"
      target = "/mnt"
    }
  }

  process "app" {
    # Root inside, with the capabilities a container engine gives root
    # (the default unless privileged = true), in its namespaces only.
    command = ["sh", "-c", "echo app: uid $(id -u) in $(hostname) && touch /mnt/scratch && exec sleep infinity"]
  }
}
