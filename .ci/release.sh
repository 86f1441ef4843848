#!/usr/bin/env bash
# Every release artifact, built and tested end to end (tens of minutes on a
# small machine, so not part of .ci/run): scripts/release builds them into
# target/release-artifacts/ and checks the glibc baseline and auditwheel;
# scripts/test-release-artifacts installs and tests them as users would.
# PostgreSQL tests run when FENCING_TEST_PG_URL is set (as .ci/run sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

# What the tests of the artifacts run with, from Debian's packages: musl's
# loader, the aarch64 glibc for qemu, qemu itself, cmake and jansson for the
# C and C++ consumers and scenario runners.
need=()
for pkg in musl libc6-arm64-cross qemu-user-static cmake libjansson-dev pkg-config; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The aarch64 musl loader, for the aarch64 musl libfencing.so: Debian's
# musl:arm64, unpacked (not installed) into a scratch directory.
if [ -z "${MUSL_AARCH64_ROOT:-}" ] && [ "$(id -u)" = 0 ]; then
  musl_root=$(mktemp -d "${TMPDIR:-/tmp}/fencing-musl-arm64.XXXXXX")
  chmod 755 "$musl_root" # apt downloads as its own user
  trap 'rm -rf "$musl_root"' EXIT
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
    apt-get update -qq
  fi
  if (cd "$musl_root" && apt-get download -qq musl:arm64 >/dev/null && dpkg-deb -x musl_*_arm64.deb root); then
    export MUSL_AARCH64_ROOT=$musl_root/root
  fi
fi

scripts/release "$@"
scripts/test-release-artifacts
