#!/usr/bin/env bash
# Packaging checks that fit in CI (seconds, on top of the C face's release
# build): one version everywhere, scripts/check-version failing when a place
# disagrees, scripts/check-glibc failing on a too-new binary, and the C
# library installed by `make -C ffi install` used through CMake find_package
# and pkg-config, shared and static, and the C++ face's tests. The cross builds of every artifact are
# .ci/release.sh (minutes; run separately, see docs/packaging.md).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== packaging: %s ==\n' "$*"; }

step "one version everywhere"
scripts/check-version

step "check-version fails when one place disagrees"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fencing-packaging.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A copy of the places it reads, with one of them bumped.
for f in Cargo.toml Cargo.lock fuzz/ffi-shim/Cargo.toml ffi/src/lib.rs include/fencing.h \
  bindings/python/pyproject.toml bindings/node/package.json bindings/node/package-lock.json \
  bindings/node/npm/*/package.json scripts/check-version; do
  mkdir -p "$tmp/copy/$(dirname "$f")" && cp "$f" "$tmp/copy/$f"
done
sed -i 's/^#define FENCING_VERSION_PATCH [0-9]*$/#define FENCING_VERSION_PATCH 99/' "$tmp/copy/include/fencing.h"
if "$tmp/copy/scripts/check-version" >"$tmp/out" 2>&1; then
  cat "$tmp/out"; echo "check-version accepted a header saying x.y.99" >&2; exit 1
fi
grep 'BAD' "$tmp/out"

step "check-glibc fails on a binary that needs a newer glibc than the baseline"
# getrandom() appeared in glibc 2.25.
printf '#include <sys/random.h>\nlong f(void *b) { return getrandom(b, 1, 0); }\n' >"$tmp/new.c"
gcc -shared -fPIC -o "$tmp/libnew.so" "$tmp/new.c"
scripts/check-glibc --baseline 2.25 "$tmp/libnew.so"
if scripts/check-glibc --baseline 2.17 "$tmp/libnew.so" >"$tmp/out" 2>&1; then
  cat "$tmp/out"; echo "check-glibc accepted a binary that needs GLIBC_2.25 against 2.17" >&2; exit 1
fi
grep 'TOO NEW' "$tmp/out"

step "check-pe fails on a DLL that imports a non-system DLL or lacks an entry point"
# A one-function header and fencing.dll built from it with mingw-w64: passes;
# the same linked against another DLL, or checked against a header that
# declares one more function, must not.
printf 'int fencing_one(void);\n' >"$tmp/one.h"
printf 'int fencing_one(void) { return 1; }\n' >"$tmp/one.c"
printf 'int other(void) { return 2; }\n' >"$tmp/other.c"
mkdir -p "$tmp/pe-good" "$tmp/pe-foreign"
x86_64-w64-mingw32-gcc -shared -o "$tmp/pe-good/fencing.dll" "$tmp/one.c"
x86_64-w64-mingw32-gcc -shared -o "$tmp/libother.dll" "$tmp/other.c"
printf 'int other(void);\nint fencing_one(void) { return other(); }\n' >"$tmp/foreign.c"
x86_64-w64-mingw32-gcc -shared -o "$tmp/pe-foreign/fencing.dll" "$tmp/foreign.c" "$tmp/libother.dll"
FENCING_CHECK_PE_HEADER="$tmp/one.h" scripts/check-pe "$tmp/pe-good/fencing.dll"
printf 'int fencing_one(void);\nint fencing_two(void);\n' >"$tmp/two.h"
for bad in "one.h pe-foreign" "two.h pe-good"; do
  set -- $bad
  if FENCING_CHECK_PE_HEADER="$tmp/$1" scripts/check-pe "$tmp/$2/fencing.dll" >"$tmp/out" 2>&1; then
    cat "$tmp/out"; echo "check-pe accepted $2/fencing.dll against $1" >&2; exit 1
  fi
  grep -A1 '^BAD' "$tmp/out"
done

step "make -C ffi install; CMake and pkg-config consumers (shared, static)"
# The C face's release build (.ci/host-target.sh).
# shellcheck source=.ci/host-target.sh
. .ci/host-target.sh
make -s -C ffi install PREFIX="$tmp/prefix" RUST_TARGET="$HOST"
(cd "$tmp/prefix" && find . -type f | sort)
scripts/test-c-package "$tmp/prefix"

step "the C++17 face (fencing.hpp) under ASan + UBSan, and without exceptions"
scripts/test-cpp "$tmp/prefix"

# The Linux ones (scripts/release checks the macOS and Windows ones with
# check-macho and check-pe).
linux=$(ls target/release-artifacts/*.whl target/release-artifacts/*.tgz target/release-artifacts/libfencing-*.tar.gz \
  2>/dev/null | grep -v -e macosx -e darwin -e win_amd64 -e win32 -e windows || true)
if grep -q linux <<<"$linux"; then
  step "release artifacts present: glibc 2.17 baseline"
  # shellcheck disable=SC2086
  scripts/check-glibc --baseline 2.17 $linux
fi
