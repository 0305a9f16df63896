# web.hcl: one web service with all three probes and two lifecycle hooks.
#
# The service is Python's built-in HTTP server on 127.0.0.1:8080, serving
# /usr/share/doc. podsup
#   - waits for it to answer HTTP (startup probe: up to 30 x 1s),
#   - restarts it when its port stops accepting connections (liveness probe),
#   - reports it ready while "/" answers 2xx/3xx (readiness probe),
#   - logs a line once it has started (post_start hook),
#   - gives it 2s to drain before the stop signal (pre_stop hook).
#
# Run it:
#   podsup up -f examples/web.hcl
#   curl http://127.0.0.1:8080/        # in another terminal
#   podsup status

supervisor {
  # env("NAME", "default") reads the environment when the file is loaded.
  log_level     = env("PODSUP_LOG_LEVEL", "info")
  log_format    = "console"
  minimum_grace = "1s"
}

group "web" {
  restart_policy           = "always"
  termination_grace_period = "10s"

  process "http" {
    command     = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/usr/share/doc", "8080"]
    stop_signal = "SIGINT" # http.server exits cleanly on KeyboardInterrupt
    # Data for podsup-kube export (a Pod needs an image); podsup itself
    # runs the command on this machine's files.
    image = "python:3.12-slim"

    startup_probe {
      http_get {
        port = 8080
        path = "/"
      }
      period            = "1s"
      failure_threshold = 30
    }

    liveness_probe {
      tcp_socket {
        port = 8080
      }
      initial_delay            = "1s"
      period                   = "5s"
      timeout                  = "500ms"
      termination_grace_period = "3s"
    }

    readiness_probe {
      http_get {
        port    = 8080
        path    = "/"
        headers = { "X-Probe" = "podsup" }
      }
      period            = "2s"
      success_threshold = 2
    }

    post_start {
      exec {
        command = ["sh", "-c", "echo web: http server started"]
      }
      timeout = "5s"
    }

    pre_stop {
      sleep {
        duration = "2s"
      }
    }
  }
}
