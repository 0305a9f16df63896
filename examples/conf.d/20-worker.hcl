# conf.d/20-worker.hcl: the worker group, configured by environment files
# (see 00-base.hcl). Relative paths start at this file's directory; the
# leading - makes app.local.env optional, as in systemd's EnvironmentFile=.
# Later files win over earlier ones, env wins over the files, and a
# process's settings win over its group's.

group "worker" {
  env_file = ["app.env", "-app.local.env"]

  process "greeter" {
    command = ["sh", "-c", "trap 'exit 0' TERM; while :; do echo \"$GREETING from $APP_NAME every $INTERVAL seconds\"; sleep \"$INTERVAL\" & wait $!; done"]
    env     = { GREETING = var.greeting }
  }
}
