#!/usr/bin/env bash
# The Node face (bindings/node): installs its npm dev dependencies, builds
# the addon with @napi-rs/cli, checks that the generated loader and types
# are the committed ones, runs the benchmark once as a smoke run, then the
# tests with node's own runner (whose summary closes the log).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== node: %s ==\n' "$*"; }

step "toolchain"
if ! command -v node >/dev/null 2>&1; then
  echo "node is missing: this face needs Node >= 20.17 (the machine image ships it)" >&2
  exit 1
fi
node --version
npm --version
node -e '
  const [maj, min] = process.versions.node.split(".").map(Number)
  if (maj < 20 || (maj === 20 && min < 17)) { console.error("Node >= 20.17 needed, have " + process.version); process.exit(1) }
'

cd bindings/node

step "npm ci (dev dependencies: @napi-rs/cli, typescript, @types/node, pg, better-sqlite3 12)"
npm ci --no-audit --no-fund

step "build the addon (napi build --platform --release)"
npx napi build --platform --release

step "generated index.js and index.d.ts match the committed ones"
if [ -n "$(git status --porcelain -- index.js index.d.ts)" ]; then
  git status --short -- index.js index.d.ts
  git diff -- index.js index.d.ts | head -100
  echo "index.js/index.d.ts drifted: run 'npx napi build --platform --release' in bindings/node and commit them" >&2
  exit 1
fi

step "the docs' JavaScript blocks, as written, with this package as 'fencing-tokens' (scripts/doc-snippets)"
snippets=$(mktemp -d "${TMPDIR:-/tmp}/fencing-node-snippets.XXXXXX")
mkdir "$snippets/node_modules"
ln -s "$PWD" "$snippets/node_modules/fencing-tokens"
(cd ../.. && scripts/doc-snippets run js --in "$snippets" -- node)
rm -rf "$snippets"

step "benchmark smoke (every path once, no timing claims)"
node bench/put.js --smoke

step "tests (node --test)"
# The PostgreSQL tests use $FENCING_TEST_PG_URL (.ci/run exports it with
# FENCING_REQUIRE_PG=1); without it they are skipped.
if [ -n "${FENCING_TEST_PG_URL:-}" ]; then
  echo "PostgreSQL tests: on ${FENCING_TEST_PG_URL} (FENCING_REQUIRE_PG=${FENCING_REQUIRE_PG:-})"
else
  echo "PostgreSQL tests: no FENCING_TEST_PG_URL (FENCING_REQUIRE_PG=${FENCING_REQUIRE_PG:-}): skipped unless required"
fi
# The etcd scenarios use $FENCING_TEST_ETCD_CLUSTER (set by scripts/etcd-cluster
# run, with FENCING_REQUIRE_ETCD=1 in CI); without it they are skipped.
if [ -n "${FENCING_TEST_ETCD_CLUSTER:-}" ]; then
  echo "etcd tests: on ${FENCING_TEST_ETCD_CLUSTER} (FENCING_REQUIRE_ETCD=${FENCING_REQUIRE_ETCD:-})"
else
  echo "etcd tests: no FENCING_TEST_ETCD_CLUSTER (FENCING_REQUIRE_ETCD=${FENCING_REQUIRE_ETCD:-}): skipped unless required"
fi
node --test test/*.test.js
