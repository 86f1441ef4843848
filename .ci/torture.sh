#!/usr/bin/env bash
# Torture rounds (tests/torture): worker processes paused past their TTL,
# killed and respawned, counter jumps and outside tokens (some over the jump
# limit), and (PostgreSQL) the server crashed and restarted, (etcd) the
# cluster's leader killed and restarted or a member paused, then the
# history checker. The ten-minute soak is scripts/torture-soak (not in CI). One round per durable backend; fails on any
# violation. TORTURE_DURATION (default 60s) sets the length of each round
# but etcd's, TORTURE_ETCD_DURATION (default 30s: CI's time budget).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*"; }
DURATION=${TORTURE_DURATION:-60s}
ETCD_DURATION=${TORTURE_ETCD_DURATION:-30s}

# scripts/pg-cluster needs the server binaries, and python3 to pick a free port.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
  step "torture: install PostgreSQL"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql python3 >/dev/null
fi
# scripts/etcd-cluster: etcd (etcd-server) and etcdctl (etcd-client).
if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
  step "torture: install etcd"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq etcd-server etcd-client >/dev/null
fi

step "torture: build (release)"
# shellcheck source=.ci/host-target.sh
. .ci/host-target.sh
cargo build --release --locked -p fencing-torture --target "$HOST"
BIN=$PWD/target/$HOST/release/torture

status=0
summaries=()

step "torture: sqlite, $DURATION"
out=$(mktemp)
"$BIN" --duration "$DURATION" | tee "$out" || status=1
summaries+=("$(tail -n 1 "$out")")

step "torture: postgres, $DURATION (server crashes and restarts)"
# shellcheck disable=SC2016
scripts/pg-cluster run -- bash -c '"$0" --url "$FENCING_TEST_PG_URL" --pg-dir "$FENCING_TEST_PG_DIR" --duration "$1"' \
  "$BIN" "$DURATION" | tee "$out" || status=1
summaries+=("$(tail -n 1 "$out")")

step "torture: etcd, $ETCD_DURATION (three members: the leader killed and restarted, a member paused)"
# A cluster of its own (the nemesis kills its members), stopped after.
# shellcheck disable=SC2016
scripts/etcd-cluster run -- bash -c '"$0" --url "etcd://$FENCING_TEST_ETCD_CLUSTER/torture" --etcd-dir "$FENCING_TEST_ETCD_CLUSTER_DIR" --duration "$1"' \
  "$BIN" "$ETCD_DURATION" | tee "$out" || status=1
summaries+=("$(tail -n 1 "$out")")
rm -f "$out"

step "torture: summary"
printf '%s\n' "${summaries[@]}"
if [ "$status" -ne 0 ]; then
  echo "torture: FAILED"
fi
exit "$status"
