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
# C and C++ consumers and scenario runners; llvm (llvm-strip, llvm-nm) for
# scripts/release and scripts/check-macho; mingw-w64 (the Windows target's
# linker, and its C++ compiler for the consumers) and Wine to run them.
need=()
for pkg in musl libc6-arm64-cross qemu-user-static cmake libjansson-dev pkg-config llvm \
  gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine64 wine; do
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

# scripts/check-macho must refuse what it exists to catch: tiny dylibs built
# with the release's zig, one good, one promising too new a macOS, one
# loading a library that is not the system's, one for the other architecture.
macho=$(mktemp -d "${TMPDIR:-/tmp}/fencing-macho.XXXXXX")
zig() { target/release-tools/venv/bin/python -m ziglang "$@"; }
printf 'int fencing_version(void) { return 1; }\n' >"$macho/a.c"
printf 'int other(void) { return 2; }\n' >"$macho/b.c"
mkdir "$macho/ok" "$macho/new" "$macho/foreign" "$macho/arch"
zig cc -target aarch64-macos.11.0 -shared -Wl,-install_name,@rpath/libfencing.dylib -o "$macho/ok/libfencing-arm64.dylib" "$macho/a.c"
zig cc -target aarch64-macos.14.0 -shared -Wl,-install_name,@rpath/libfencing.dylib -o "$macho/new/libfencing-arm64.dylib" "$macho/a.c"
zig cc -target aarch64-macos.11.0 -shared -Wl,-install_name,/opt/lib/libother.dylib -o "$macho/libother.dylib" "$macho/b.c"
zig cc -target aarch64-macos.11.0 -shared -Wl,-install_name,@rpath/libfencing.dylib -o "$macho/foreign/libfencing-arm64.dylib" "$macho/a.c" -L"$macho" -lother
zig cc -target x86_64-macos.10.15 -shared -Wl,-install_name,@rpath/libfencing.dylib -o "$macho/arch/libfencing-arm64.dylib" "$macho/a.c"
# Only the header's functions this tiny library has are asked for here.
for bad in new foreign arch; do
  if FENCING_CHECK_MACHO_HEADER=/dev/null scripts/check-macho "$macho/$bad/libfencing-arm64.dylib" >"$macho/out" 2>&1; then
    cat "$macho/out"; echo "check-macho accepted the $bad dylib" >&2; exit 1
  fi
  grep -A3 '^BAD' "$macho/out"
done
FENCING_CHECK_MACHO_HEADER=/dev/null scripts/check-macho "$macho/ok/libfencing-arm64.dylib"
rm -rf "$macho"

scripts/test-release-artifacts
