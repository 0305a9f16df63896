# conf.d/00-base.hcl: a configuration split over a directory, with an
# environment file and variables.
#
# podsup reads every *.hcl file of the directory in lexical order, as one
# configuration: this file holds what the others share (the supervisor
# block, the back-off and the variables), 10-web.hcl and 20-worker.hcl a
# group each. Adding a file and reloading starts its groups; removing one
# stops them. The worker reads app.env (and app.local.env if there is one);
# editing app.env and reloading restarts only the processes that read it.
#
# Run it:
#   podsup up -f examples/conf.d/ --var http_port=8091
#   podsup validate -f examples/conf.d/     # checks it, with the defaults
#   PODSUP_VAR_greeting=hi podsup up -f examples/conf.d/
#   podsup reload                           # after editing app.env

supervisor {
  log_level     = env("PODSUP_LOG_LEVEL", "info")
  minimum_grace = "1s"
}

backoff {
  initial = "1s"
  max     = "30s"
}

# Set with --var http_port=8091, a --var-file, or PODSUP_VAR_http_port.
variable "http_port" {
  description = "the port the web group serves on 127.0.0.1"
  default     = 8090
}

variable "greeting" {
  default = "hello"
}
