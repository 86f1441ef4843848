#!/usr/bin/env bash
# Every release artifact, built and tested end to end (tens of minutes on a
# small machine, so not part of .ci/run): scripts/release builds them into
# target/release-artifacts/ and checks the glibc baseline and auditwheel;
# scripts/test-release-artifacts installs and tests them as users would.
# PostgreSQL tests run when FENCING_TEST_PG_URL is set (as .ci/run sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/release "$@"
scripts/test-release-artifacts
