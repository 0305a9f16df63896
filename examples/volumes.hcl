# volumes.hcl: a group with volumes and its own names: a memory cache that survives the
# process's restarts, a config file that a reload rewrites under the running
# process, a secret readable by root and the group's fs_group, a directory of the host, and the
# sandbox's /etc/hosts and /etc/resolv.conf (docs/config.md, "volume").
#
#   sudo podsup up -f examples/volumes.hcl
#   sudo podsup exec volumes/app -- cat /etc/app/app.conf /etc/hosts
group "volumes" {
  fs_group = "65534" # owns the volumes' files; every process gets it as a supplemental group
  sandbox {
    namespaces = ["pid", "mount", "net", "uts"]
    hostname   = "volumes-1"
    host_alias {
      ip        = "10.0.0.5"
      hostnames = ["db", "db.local"]
    }
    dns {
      nameservers = ["10.0.0.53"]
      searches    = ["svc.local"]
      options     = ["ndots:2"]
    }
  }
  volume "cache" {
    type       = "empty_dir"
    medium     = "memory"
    size_limit = "64Mi"
  }
  volume "settings" {
    type              = "config"
    restart_on_change = false # true: a reload that changes app.conf restarts app
    file "app.conf" {
      content = "level = info\n"
    }
  }
  volume "token" {
    type = "secret"
    mode = "0400" # the default; fs_group adds group read: 0440
    file "token" {
      source = "/etc/hostname"
    }
  }
  volume "logs" {
    type           = "host_path"
    path           = "/var/log/podsup-example"
    host_path_type = "DirectoryOrCreate"
  }
  process "app" {
    command = ["sh", "-c", "date >> /var/cache/app/starts; exec sleep infinity"]
    volume_mount {
      volume = "cache"
      path   = "/var/cache/app"
    }
    volume_mount {
      volume = "settings"
      path   = "/etc/app"
    }
    volume_mount {
      volume = "token"
      path   = "/run/secrets"
    }
    volume_mount {
      volume    = "logs"
      path      = "/var/log/app"
      read_only = false
      sub_path  = "app"
    }
  }
}
