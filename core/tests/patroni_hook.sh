#!/bin/sh
# A Patroni callback (on_role_change and on_start: ACTION ROLE SCOPE) that
# makes an asynchronous failover safe for fencing tokens (docs/postgres.md,
# "Replication and failover"). A replica is kept closed to clients
# (default_transaction_read_only = on, so that target_session_attrs=read-write
# passes it by even once it is promoted); a new master gets the failover step
# first, on a connection that overrides that default, and only then opens.
# Expects `fencing` (the CLI) beside it and FENCING_PATRONI_NODE_URL (this
# node, as scripts/patroni-bed sets it); logs to hook.log beside it.
set -u
here=$(dirname "$0")
url=$FENCING_PATRONI_NODE_URL
log=$here/hook.log
say() { echo "$(date -u +%T) $*" >>"$log"; }
sql() { psql -X -At -d "$url" -c "$1" >>"$log" 2>&1; }
say "$1 $2"
case "$2" in
  master|primary)
    tries=0
    until "$here/fencing" failover --url "$url?options=-c%20default_transaction_read_only%3Doff" >>"$log" 2>&1; do
      tries=$((tries + 1))
      [ "$tries" -lt 100 ] || { say "the failover step failed: the node stays closed"; exit 1; }
      sleep 0.2
    done
    sql "alter system reset default_transaction_read_only" && sql "select pg_reload_conf()" && say "open"
    ;;
  replica|standby|demoted)
    tries=0
    until sql "alter system set default_transaction_read_only = on" && sql "select pg_reload_conf()"; do
      tries=$((tries + 1))
      [ "$tries" -lt 100 ] || { say "could not close the replica"; exit 1; }
      sleep 0.2
    done
    say "closed"
    ;;
esac
