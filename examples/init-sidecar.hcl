# init-sidecar.hcl: a group with an init step and a sidecar, like a pod.
#
# Group "web":
#   - init "prepare" runs to completion first: it writes the site into
#     /tmp/podsup-init-sidecar.
#   - init "shipper" is a sidecar (restart_policy = "always", Kubernetes'
#     restartable init container): it starts after "prepare", and "app"
#     starts once its startup probe has passed. It prints a heartbeat with
#     the number of files served every 5s, as a log shipper or metrics
#     agent would, and is restarted whenever it ends. At a stop it gets
#     SIGTERM only after "app" has exited, so it ships app's last lines.
#   - process "app" serves that directory on 127.0.0.1:8081; it is ready
#     while "/" answers, and on stop it drains for 1s (pre_stop).
#
# Run it:
#   podsup up -f examples/init-sidecar.hcl
#   podsup status               # shipper is an init that keeps running
#   podsup recreate web app     # recreate only the app; the sidecar stays
#   podsup events               # at ^C: app stops first, then shipper

supervisor {
  minimum_grace = "1s"
}

group "web" {
  termination_grace_period = "5s"

  init "prepare" {
    command = ["sh", "-c", "mkdir -p /tmp/podsup-init-sidecar && echo 'hello from podsup' > /tmp/podsup-init-sidecar/index.html"]
  }

  init "shipper" {
    restart_policy = "always"
    command        = ["sh", "-c", "trap 'echo shipper: app is gone, flushing; exit 0' TERM; while :; do echo \"shipper: $(ls /tmp/podsup-init-sidecar | wc -l) file(s) served\"; sleep 5 & wait $!; done"]

    startup_probe {
      exec {
        command = ["test", "-d", "/tmp/podsup-init-sidecar"]
      }
      period = "500ms"
    }
  }

  process "app" {
    command     = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/tmp/podsup-init-sidecar", "8081"]
    stop_signal = "SIGINT"

    readiness_probe {
      http_get {
        port = 8081
        path = "/index.html"
      }
      period = "1s"
    }

    pre_stop {
      exec {
        command = ["sh", "-c", "echo app: draining; sleep 1"]
      }
    }
  }
}
