#!/usr/bin/env bash
# The Windows face: scripts/windows-test builds the core's tests, the C ABI,
# the CLI and the Node addon for x86_64-pc-windows-gnu (mingw-w64) and runs
# them under Wine: the sqlite: and memory: tests, and the postgres:// ones
# against CI's plain PostgreSQL server on 127.0.0.1 (docs/packaging.md,
# "Windows"). scripts/test runs it beside the faces from the Python one on.
#
# It sees that server only: the other beds (TLS, PgBouncer, replicas, S3,
# Azure, etcd) are the Linux faces' to test. Without FENCING_REQUIRE_PG a
# test whose bed is unset skips it, as on a developer's machine; the server's
# URL is set, so the tests that need only it run.
set -euo pipefail
cd "$(dirname "$0")/.."

pg=${FENCING_TEST_PG_URL:-}
# shellcheck disable=SC2046
unset $(compgen -e | grep '^FENCING_') 2>/dev/null || true
[ -z "$pg" ] || export FENCING_TEST_PG_URL=$pg
# A target directory of its own: cargo locks the host's build directory
# (target/debug, where build scripts and proc macros go) while it builds for
# another target, and the failover face's cargo calls would wait for it.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}/windows-face
exec bash scripts/windows-test
