# compose.hcl: start order as docker compose's depends_on, in podsup.
#
# A database-like server that needs a second before it accepts
# connections, a migration that must finish (exit 0) first, an API that
# starts only then, and a log-shipping sidecar beside it:
#   - group "app" waits for group "data" to be ready (group depends_on),
#   - the sidecar "shipper" starts first (an init with restart_policy
#     "always", as Kubernetes' sidecars), then "migrate" and "api",
#   - "api" waits for "migrate" to complete,
#   - a shutdown stops them in reverse: api, then shipper, then db.
#
# Run it:
#   podsup up -f examples/compose.hcl
#   podsup status            # app's processes: waiting (waiting for group data ready)
#   podsup wait --for ready --timeout 1m && curl http://127.0.0.1:18433/
#   podsup events            # Waiting, Ready, DependenciesMet, Started
#   podsup shutdown          # Killing api, then shipper, then db

supervisor {
  minimum_grace = "1s"
  # stop_order = "parallel" would stop everything at once.
}

group "data" {
  termination_grace_period = "5s"

  process "db" {
    # Stands in for a database: loads for a second, then listens.
    command     = ["sh", "-c", "sleep 1; exec python3 -m http.server --bind 127.0.0.1 --directory /usr/share/doc 18432"]
    stop_signal = "SIGINT" # http.server exits cleanly on KeyboardInterrupt

    readiness_probe {
      tcp_socket {
        port = 18432
      }
      period = "200ms"
    }
  }
}

group "app" {
  termination_grace_period = "5s"

  # Nothing of this group starts before every process of "data" is ready;
  # after a minute of waiting, the process fails and is retried.
  depends_on "data" {
    condition = "ready"
    timeout   = "1m"
  }

  # The log shipper: a sidecar, started before the processes, restarted
  # whenever it ends, stopped after them.
  init "shipper" {
    command        = ["sh", "-c", "echo shipping logs; exec sleep infinity"]
    restart_policy = "always"

    # Its output stays off podsup up's stdout; podsup logs app/shipper
    # (and log_dir, when set) still has it.
    log {
      stdout = false
    }
  }

  process "migrate" {
    # A one-shot: it runs once against the database and exits 0.
    command        = ["sh", "-c", "echo migrating; sleep 0.5; echo migrated"]
    restart_policy = "on-failure"
  }

  process "api" {
    command     = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/usr/share/doc", "18433"]
    stop_signal = "SIGINT"

    depends_on "migrate" {
      condition = "completed"
    }

    readiness_probe {
      http_get {
        port = 18433
        path = "/"
      }
      period = "500ms"
    }
  }

  process "events" {
    # Stands in for a gRPC server with the standard health service (etcd,
    # most Go services): the probe calls grpc.health.v1.Health/Check for
    # "events" on 127.0.0.1:18434. The stand-in speaks no gRPC, so it
    # stays unready, and podsup describe app/events says why; run a real
    # gRPC server here and it becomes ready.
    command     = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/usr/share/doc", "18434"]
    stop_signal = "SIGINT"

    readiness_probe {
      grpc {
        port    = 18434
        service = "events"
      }
      period = "2s"
    }
  }
}
