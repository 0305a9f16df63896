# systemd.hcl: podsup as a systemd service, with the fields that go with
# one: socket activation, sd_notify readiness and watchdog, the journal,
# log files, a control socket opened to a group of operators, a process
# run as an unprivileged user, and the hooks around each start and stop.
#
#   - "web" serves HTTP on the socket systemd (or systemd-socket-activate)
#     listens on, handed to it as fd 3 (sockets = ["web"]): connections
#     wait in the socket while it restarts instead of failing;
#   - "heartbeat" says READY=1 itself (readiness = "notify") and is killed
#     and restarted if its WATCHDOG=1 stops for 10s;
#   - "report" runs as nobody, with hooks before its start and after its
#     stop, and starts once "web" has started;
#   - podsup says READY=1 to systemd once every group has started
#     (notify_ready), and the members of group adm may read and operate it.
#
# Run it under systemd with contrib/systemd/podsup.service and podsup.socket
# (ListenStream=127.0.0.1:8095, FileDescriptorName=web), or by hand:
#   systemd-socket-activate -l 127.0.0.1:8095 --fdname=web podsup up -f examples/systemd.hcl
#   curl http://127.0.0.1:8095/        # in another terminal: starts podsup
#   podsup status
# Plain "podsup up -f examples/systemd.hcl" refuses it: no socket "web" was
# passed. Without journald (not under systemd) the journal = true lines
# go to podsup's output, and podsup says so when it starts.

supervisor {
  # The default path, spelled out; --socket and PODSUP_SOCKET win.
  socket             = env("PODSUP_SOCKET", "/run/podsup/podsup.sock")
  socket_group       = "adm"
  socket_group_roles = ["read", "operate"]
  notify_ready       = "started"
  # Every process's lines also go to /var/log/podsup/GROUP/PROCESS.log,
  # in kubelet's CRI log format ("2026-11-25T04:10:41.203117Z stdout F
  # TEXT"), rotated by each process's log block.
  log_dir              = env("PODSUP_LOG_DIR", "/var/log/podsup")
  metrics_listen       = env("PODSUP_METRICS_LISTEN", "127.0.0.1:9310")
  metrics_allow_remote = false
  stop_order           = "ordered"
  minimum_grace        = "1s"
}

group "svc" {
  restart_policy           = "always"
  termination_grace_period = "5s"
  env = {
    LANG = "C.UTF-8"
  }

  process "web" {
    command = ["python3", "-c", "import socket\ns = socket.socket(fileno=3)\nwhile True:\n    c, _ = s.accept()\n    c.recv(65536)\n    c.sendall(b'HTTP/1.0 200 OK\\r\\n\\r\\nhello from a socket-activated process\\n')\n    c.close()"]
    sockets = ["web"]

    readiness_probe {
      tcp_socket {
        host = "127.0.0.1"
        port = 8095
      }
      period = "5s"
    }

    post_start {
      http_get {
        scheme = "http"
        host   = "127.0.0.1"
        port   = 8095
        path   = "/"
      }
      timeout = "5s"
    }

    log {
      mode             = "capture"
      journal          = true
      separate_streams = true
    }
  }

  process "heartbeat" {
    command   = ["sh", "-c", "systemd-notify --ready --status='beating'; while systemd-notify WATCHDOG=1; do sleep 2; done"]
    readiness = "notify"
    watchdog  = "10s"
  }

  process "report" {
    command  = ["sh", "-c", "trap 'exit 0' TERM; echo report: running as $(id -un); while :; do sleep 1; done"]
    user     = "nobody"
    group    = "nogroup"
    env_file = "-/etc/default/podsup-report" # optional: the leading -

    depends_on "web" {
      condition = "started"
      restart   = true
    }

    pre_start {
      exec {
        command = ["sh", "-c", "echo report: preparing"]
      }
    }

    post_stop {
      exec {
        command = ["sh", "-c", "echo report: cleaned up"]
      }
    }
  }
}
