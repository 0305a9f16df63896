# conf.d/10-web.hcl: the web group (see 00-base.hcl).

group "web" {
  termination_grace_period = "5s"

  process "http" {
    command     = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/usr/share/doc", "${var.http_port}"]
    stop_signal = "SIGINT" # http.server exits cleanly on KeyboardInterrupt

    readiness_probe {
      tcp_socket {
        port = var.http_port
      }
      period = "2s"
    }
  }
}
