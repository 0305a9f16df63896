# hardened.hcl: a group that meets Kubernetes' "restricted" Pod Security
# Standard, and a process that narrows itself further.
#
# Every process of the group runs as nobody, never as root
# (run_as_non_root), gains no privileges through setuid or file
# capabilities (no_new_privileges), holds no capability (drop ALL), and
# runs under the default seccomp profile, as containerd's. One process adds
# back the one capability it needs, with limits of its own.
#
# Run it (as root: podsup starts the processes as nobody):
#   podsup up -f examples/hardened.hcl
#   podsup security hardened           # how exposed each process is
#   podsup describe hardened/server    # its capabilities, as /proc shows them

group "hardened" {
  # The defaults of every process below: a pod-level securityContext.
  run_as_non_root     = true
  no_new_privileges   = true
  privileged          = false # a host group opts into the default set
  seccomp             = "runtime/default"
  supplemental_groups = ["nogroup"]
  umask               = "0077"
  oom_score_adj       = 500
  capabilities {
    drop = ["ALL"]
  }
  rlimits {
    core = 0
  }

  process "worker" {
    command = ["sleep", "infinity"]
    user    = "nobody"
  }

  process "server" {
    command             = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "8097"]
    user                = "nobody"
    run_as_non_root     = true
    no_new_privileges   = true
    privileged          = false
    seccomp             = "runtime/default"
    supplemental_groups = ["nogroup"]
    umask               = "0027"
    oom_score_adj       = 800
    capabilities {
      drop = ["ALL"]
      add  = ["NET_BIND_SERVICE"] # what a port below 1024 would need
    }
    rlimits {
      nofile = "1024:4096"
      nproc  = 64
    }
  }
}
