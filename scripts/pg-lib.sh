# shellcheck shell=bash
# Helpers shared by the test-bed scripts (pg-cluster, pg-tls, pgbouncer,
# pg-replicas, patroni-bed). Sourced, not run.

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  local dir
  # shellcheck disable=SC2012 # these paths are plain version numbers
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] || { echo "no PostgreSQL server binaries (apt-get install postgresql)" >&2; exit 1; }
  echo "$dir"
}

# Runs a command as the postgres user when we are root: the server, PgBouncer
# and Patroni all refuse to run as root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# A directory the postgres user owns (initdb needs to write into it).
pg_owned_dir() {
  mkdir -p "$1"
  chmod 755 "$1"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$1"; fi
  as_pg test -w "$1" \
    || { echo "the postgres user cannot reach $1: make its parent directories searchable (chmod o+x)" >&2; exit 1; }
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Runs CMD... until it succeeds, five times a second, for at most SECONDS.
wait_for() { # seconds, cmd...
  local end=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.2
  done
}
