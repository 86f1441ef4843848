#!/usr/bin/env bash
# The macOS face: the C ABI, the CLI and the Node addon compiled for
# aarch64-apple-darwin (cargo check: everything compiled, the C of SQLite and
# ring included, nothing linked), with zig as the C compiler, as
# scripts/release builds the macOS artifacts: no Apple SDK is needed. The
# release links and checks them (scripts/check-macho); no Mac here runs them
# (docs/packaging.md, "macOS"). x86_64-apple-darwin differs only in its
# architecture, so one target stands for both here. scripts/test runs this
# after the Windows face, both beside the faces from the Python one on.
set -euo pipefail
cd "$(dirname "$0")/.."

triple=aarch64-apple-darwin
# Its own target directory, as the Windows face's (cargo locks the host's
# build directory while it builds for another target).
target=${CARGO_TARGET_DIR:-$PWD/target}/macos-face
export CARGO_TARGET_DIR=$target
venv=$target/zig-venv
started=$SECONDS

rustup target list --installed 2>/dev/null | grep -qx "$triple" || rustup target add "$triple"
if [ ! -x "$venv/bin/python-zig" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'ziglang==0.17.1'
fi
# cc-rs runs these for the target's C. Its --target=arm64-apple-macosx is
# clang's spelling, which zig refuses: zig's own -target stands instead.
mkdir -p "$target/bin"
cat >"$target/bin/zig-cc" <<WRAPPER
#!/bin/sh
for arg; do shift; case \$arg in --target=*) ;; *) set -- "\$@" "\$arg" ;; esac; done
exec "$venv/bin/python" -m ziglang cc -target aarch64-macos.11.0 "\$@"
WRAPPER
printf '#!/bin/sh\nexec "%s" -m ziglang ar "$@"\n' "$venv/bin/python" >"$target/bin/zig-ar"
chmod +x "$target/bin/zig-cc" "$target/bin/zig-ar"
export CC_aarch64_apple_darwin=$target/bin/zig-cc AR_aarch64_apple_darwin=$target/bin/zig-ar
export MACOSX_DEPLOYMENT_TARGET=11.0

echo "== macOS: cargo check --target $triple (the C ABI, the CLI, the Node addon)"
cargo check --locked --target "$triple" -p fencing-ffi -p fencing-cli -p fencing-node
echo "== macOS face: $((SECONDS - started)) s"
