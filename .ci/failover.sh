#!/usr/bin/env bash
# Failover on real replicated PostgreSQL (scripts/pg-replicas), three ways
# (core/tests/failover_replicas.rs): asynchronous without the failover step
# (the test must see tokens handed out twice), asynchronous with the step
# (none twice), a synchronous standby with sync_replication=required (no
# token returned during the partition, none twice). Each on a bed of its own,
# since a failover changes the topology.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*"; }

cargo test --locked -p fencing --test failover_replicas --no-run -q
for mode in async async-step sync; do
  step "failover: $mode"
  flags=(--async)
  [ "$mode" = sync ] && flags=(--sync)
  bash scripts/pg-replicas run "${flags[@]}" -- \
    env FENCING_REQUIRE_REPLICAS=1 FENCING_FAILOVER_MODE="$mode" \
    cargo test --locked -q -p fencing --test failover_replicas -- --nocapture
done
