#!/usr/bin/env bash
# The C face's CI, called by .ci/run after the Rust tests (from the repo root,
# as root, CI=true, no stdin). Installs what it needs, idempotently; exits
# non-zero on any failure.
#
#   bash .ci/c.sh           everything below
#   bash .ci/c.sh header    only regenerate include/fencing.h (cbindgen 0.29.4)
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION=0.29.4
BUILD=target/c-tests
# shellcheck source=.ci/host-target.sh
. .ci/host-target.sh
LIB=target/$HOST/release
step() { printf '\n== c: %s ==\n' "$*"; }

install_cbindgen() {
  if ! cbindgen --version 2>/dev/null | grep -qx "cbindgen $CBINDGEN_VERSION"; then
    step "install cbindgen $CBINDGEN_VERSION"
    # Unoptimized: it builds in a third of the time, and still writes the
    # header in well under a second.
    cargo install cbindgen --locked --debug --version "$CBINDGEN_VERSION"
  fi
}

if [ "${1:-}" = header ]; then
  install_cbindgen
  make -s -C ffi header
  exit 0
fi

step "system packages"
need=()
for pkg in cmake pkg-config valgrind libjansson-dev libpq-dev libsqlite3-dev g++ make; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
cmake --version | head -1
valgrind --version
gcc --version | head -1

install_cbindgen

step "header: regenerate and compare with the committed include/fencing.h"
make -s -C ffi check-header

step "header: compiles alone as C11 and C++17 (-Wall -Wextra -Wpedantic -Werror), twice included"
for std in c11 c17; do
  printf '#include "fencing.h"\n#include "fencing.h"\n' |
    gcc -std="$std" -Wall -Wextra -Wpedantic -Werror -Iinclude -fsyntax-only -x c -
done
printf '#include "fencing.h"\n#include "fencing.h"\n' |
  g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -Iinclude -fsyntax-only -x c++ -
echo "ok"

step "build libfencing.so and libfencing.a (release)"
make -s -C ffi build RUST_TARGET="$HOST"
ls -l "$LIB/libfencing.so" "$LIB/libfencing.a"
readelf -d "$LIB/libfencing.so" | grep SONAME
# Every exported symbol carries the prefix.
bad=$(nm -D --defined-only "$LIB/libfencing.so" | awk '$2 == "T" {print $3}' | grep -v '^fencing_' || true)
if [ -n "$bad" ]; then
  echo "exported symbols without the fencing_ prefix:"; echo "$bad"; exit 1
fi
echo "$(nm -D --defined-only "$LIB/libfencing.so" | awk '$2 == "T"' | wc -l) exported functions, all fencing_*"

step "install into a temporary prefix; build consumers with pkg-config"
prefix=$(mktemp -d /tmp/fencing-prefix-XXXXXX)
work=$(mktemp -d /tmp/fencing-consumer-XXXXXX)
trap 'rm -rf "$prefix" "$work"' EXIT
make -s -C ffi install PREFIX="$prefix" RUST_TARGET="$HOST"
find "$prefix" -type f | sort
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
echo "pkg-config: $(pkg-config --modversion fencing) $(pkg-config --cflags --libs fencing)"
cat > "$work/consumer.c" <<'EOF'
#include <fencing.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  fencing_store *s = NULL;
  fencing_lease l;
  fencing_receipt r;
  if (strcmp(fencing_version(), FENCING_VERSION) != 0) return 1;
  if (fencing_store_open("memory:", &s) != FENCING_OK) return 2;
  if (fencing_acquire(s, "report", "consumer", 1000, &l) != FENCING_OK) return 3;
  fencing_fence f = {.token = l.token};
  if (fencing_put(s, "report", "body", (const uint8_t *)"x", 1, &f, &r) != FENCING_OK) return 4;
  fencing_store_free(s);
  printf("consumer: libfencing %s, token %llu, version %llu\n", fencing_version(),
         (unsigned long long)l.token, (unsigned long long)r.version);
  return 0;
}
EOF
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Wpedantic -Werror "$work/consumer.c" \
  $(pkg-config --cflags --libs fencing) -o "$work/consumer-shared"
gcc -std=c11 -Wall -Wextra -Wpedantic -Werror "$work/consumer.c" $(pkg-config --cflags fencing) \
  "$(pkg-config --variable=libdir fencing)/libfencing.a" -lpthread -ldl -lm -o "$work/consumer-static"
LD_LIBRARY_PATH="$prefix/lib" ldd "$work/consumer-shared" | grep libfencing
LD_LIBRARY_PATH="$prefix/lib" "$work/consumer-shared"
if readelf -d "$work/consumer-static" | grep -q 'libfencing'; then
  echo "the static consumer depends on libfencing.so"; exit 1
fi
(cd / && "$work/consumer-static")

step "examples/c: the paused-worker story (built with pkg-config, run)"
make -s -C examples/c clean
make -s -C examples/c
./examples/c/paused_worker   # no LD_LIBRARY_PATH: the Makefile links with an rpath
make -s -C examples/c clean

step "the docs' C blocks, as written, against the installed library (scripts/doc-snippets)"
# shellcheck disable=SC2016
scripts/doc-snippets run c -- sh -c 'gcc -std=c11 -Wall -Wextra -Wpedantic -Werror "$0" \
  $(pkg-config --cflags --libs fencing) -Wl,-rpath,"$(pkg-config --variable=libdir fencing)" \
  -o snippet && ./snippet'

step "benchmark smoke: C ABI put beside Store::put (every path once, no timing claims)"
# Debug test profile (shared with the Rust tests), loading the release library.
FENCING_LIB="$PWD/$LIB/libfencing.so" cargo test --locked -p fencing-ffi --benches

run_ctest() { # name, cmake options...
  local name=$1
  shift
  step "C tests: $name"
  cmake -S ffi/tests -B "$BUILD/$name" -DCMAKE_BUILD_TYPE=Debug -DFENCING_LIB_DIR="$PWD/$LIB" "$@" >/dev/null
  cmake --build "$BUILD/$name" -j2 >/dev/null
  ctest --test-dir "$BUILD/$name" --output-on-failure -j2
}

# Is the sanitizer runtime really in the binaries (besides the in-test check)?
run_ctest asan-ubsan -DFENCING_SANITIZE=address
ldd "$BUILD/asan-ubsan/api" | grep libasan
ldd "$BUILD/asan-ubsan/api" | grep libubsan
run_ctest tsan -DFENCING_SANITIZE=thread
ldd "$BUILD/tsan/threads" | grep libtsan
run_ctest valgrind-memcheck -DFENCING_VALGRIND=ON
run_ctest shared -DFENCING_LINK=shared
run_ctest static
