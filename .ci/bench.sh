#!/usr/bin/env bash
# The benchmark command's smoke run, so that scripts/bench cannot rot and
# every bench path runs once: every bench (memory, C ABI, sqlite, postgres,
# etcd beside the classic etcd way, objects on S3, and the scale curves at
# tiny sizes; Python's and Node's in their own scripts) runs one short round
# in the test profile, writes its JSON lines, and bench-report makes the
# table and charts from them -- into target/bench/smoke/, never docs/. No
# timing is judged.
#
# Runs after the workspace's tests (scripts/test): a smoke builds with the
# whole workspace's features in the test profile (scripts/bench,
# "bench_build"), so it reuses what they built and compiles only the benches.
# Installs what it needs itself otherwise. The Python and Node benches run in
# smoke mode inside .ci/python.sh and .ci/node.sh, on the wheels and addon
# they test.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== bench: %s ==\n' "$*"; }

step "tools"
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  apt-get update
  apt-get install -y python3 python3-venv python3-pip
fi
command -v node >/dev/null || { echo "node is missing: Node >= 20.17 is needed (the machine image ships it)" >&2; exit 1; }
if [ -f benches/benches/postgres.rs ] && ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
# The etcd side by side (benches/benches/etcd.rs) on a three-member cluster
# (scripts/etcd-cluster): Debian's etcd-server, and etcdctl from etcd-client.
if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends etcd-server etcd-client >/dev/null
fi
export PYO3_PYTHON=${PYO3_PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}
python3 --version
node --version

step "scripts/bench --smoke (without python and node)"
# .ci/python.sh and .ci/node.sh already ran those benches' smoke runs on the
# release wheels and addon they built and tested: not twice.
timeout --kill-after=10 900 scripts/bench --smoke --skip python,node

step "the smoke report"
SMOKE=${CARGO_TARGET_DIR:-target}/bench/smoke
test -s "$SMOKE/results.jsonl"
grep -q '<!-- bench:begin' "$SMOKE/performance.md"
grep -q '<svg' "$SMOKE/performance.svg"
grep -q '"group":"etcd"' "$SMOKE/results.jsonl"
grep -q '"group":"objects"' "$SMOKE/results.jsonl"
# The scale bench's curves (benches/benches/scale.rs) and their chart.
grep -q '"x_axis":"scopes"' "$SMOKE/results.jsonl"
grep -q '<svg' "$SMOKE/performance-scale.svg"
grep -q 'performance-scale.svg' "$SMOKE/performance.md"
echo "bench smoke: $(wc -l <"$SMOKE/results.jsonl") result lines, table and chart written to $SMOKE"
