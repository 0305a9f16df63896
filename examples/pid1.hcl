# pid1.hcl: podsup as PID 1 of a container, with a critical main process.
#
# podsup reaps every orphan in the container and forwards the stop. The
# main process "app" is critical: when it ends for good (it is never
# restarted here), podsup stops the other processes and exits with app's
# exit code, so the container runtime sees the app's result.
# "heartbeat" is a helper that restarts on its own if it dies.
#
# In a container image (Debian-based):
#   ENTRYPOINT ["podsup", "up", "-f", "/etc/podsup/pid1.hcl"]
# Or try it locally:
#   podsup up -f examples/pid1.hcl

supervisor {
  log_format    = "json"
  minimum_grace = "1s"
}

group "main" {
  termination_grace_period = "10s"

  process "app" {
    command        = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "8000"]
    working_dir    = "/tmp"
    stop_signal    = "SIGINT"
    restart_policy = "never"
    critical       = true

    readiness_probe {
      tcp_socket {
        port = 8000
      }
      period = "2s"
    }
  }

  process "heartbeat" {
    command = ["sh", "-c", "trap 'kill $! 2>/dev/null; exit 0' TERM; while :; do echo heartbeat; sleep 10 & wait $!; done"]
  }
}
