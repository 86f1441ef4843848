#!/usr/bin/env bash
# Failover on real replicated PostgreSQL (scripts/pg-replicas), with no hook
# anywhere: the store notices a promotion by itself (docs/semantics.md,
# "Failover"). Three ways (core/tests/failover_replicas.rs): asynchronous,
# four clients racing the promotion (none twice, none accepted below its
# fence); asynchronous with the promotion hidden from the store (the test
# must see tokens handed out twice); a synchronous standby with
# sync_replication=required (no token returned during the partition, none
# twice). Each on a bed of its own, since a failover changes the topology.
# Then the torture harness with its failover nemesis the same three ways,
# and Patroni under a workload, with no callback.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*"; }

cargo test --locked -p fencing --test failover_replicas --no-run -q
for mode in async async-hidden sync; do
  step "failover: $mode"
  flags=(--async)
  [ "$mode" = sync ] && flags=(--sync)
  bash scripts/pg-replicas run "${flags[@]}" -- \
    env FENCING_REQUIRE_REPLICAS=1 FENCING_FAILOVER_MODE="$mode" \
    cargo test --locked -q -p fencing --test failover_replicas -- --nocapture
done

# The torture harness with the failover nemesis (tests/torture): workers
# pausing, dying and retiring scopes while the standby is cut off, the
# primary crashes and the standby is promoted, three times a run. With the
# promotion hidden from the store the checker must report tokens handed out
# twice (exit 1 with duplicates > 0: proof it sees the hole); with no hook,
# and with a synchronous standby under sync_replication=required, no
# violation.
# shellcheck source=.ci/host-target.sh
. .ci/host-target.sh
cargo build --release --locked -q -p fencing-torture --target "$HOST"
BIN=$PWD/target/$HOST/release/torture
DURATION=${FAILOVER_TORTURE_DURATION:-24s}
summaries=()
failed=0
torture_round() { # mode, bed flag, url options, torture flags...
  local mode=$1 flag=$2 opts=$3 out hist status=0
  shift 3
  step "failover torture: $mode, $DURATION, 3 failovers"
  out=$(mktemp)
  hist=$(mktemp)
  # shellcheck disable=SC2016
  bash scripts/pg-replicas run "$flag" -- bash -c \
    '"$0" --url "$FENCING_TEST_PG_MULTI_URL$1" --replicas "$FENCING_TEST_PG_REPLICAS_DIR" --failovers 3 --duration "$2" --history "$3" "${@:4}"' \
    "$BIN" "$opts" "$DURATION" "$hist" "$@" | tee "$out" || status=$?
  local line
  line=$(grep '^torture:' "$out" | tail -n 1 || true)
  summaries+=("$mode: $line")
  rm -f "$out" "$hist"
  case "$mode" in
    async-hidden)
      # Exit 1 (violations) with tokens handed out twice, three failovers.
      if [ "$status" != 1 ] || ! grep -q ' failovers=3 ' <<<"$line" || grep -q ' duplicates=0 ' <<<"$line"; then
        echo "failover torture: the unprotected run must report tokens handed out twice (exit $status)"
        failed=1
      fi ;;
    *)
      if [ "$status" != 0 ] || ! grep -q ' failovers=3 violations=0 ' <<<"$line"; then
        echo "failover torture: $mode must pass with three failovers (exit $status)"
        failed=1
      fi ;;
  esac
}
torture_round async --async '&call_timeout_ms=2000'
torture_round async-hidden --async '&call_timeout_ms=2000' --hide-promotion
torture_round sync --sync '&call_timeout_ms=2000&sync_replication=required'

# Patroni (scripts/patroni-bed): the leader killed under a running workload,
# with no callback: the store notices the new leader's timeline by itself.
step "failover: Patroni, the leader killed under a workload, no hook"
cargo test --locked -p fencing --test failover_patroni --no-run -q
out=$(mktemp)
status=0
bash scripts/patroni-bed run -- \
  env FENCING_REQUIRE_PATRONI=1 cargo test --locked -q -p fencing --test failover_patroni -- --nocapture \
  | tee "$out" || status=$?
summaries+=("patroni: $(grep '^patroni failover' "$out" | tail -n 1 || true)")
[ "$status" = 0 ] || { echo "failover: the Patroni test failed"; failed=1; }
rm -f "$out"

step "failover: summary"
printf '%s\n' "${summaries[@]}"
exit "$failed"
