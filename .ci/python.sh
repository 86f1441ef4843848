#!/usr/bin/env bash
# The Python face (bindings/python): builds the wheels with maturin, installs
# each into a fresh venv, and checks the installed package, never the source
# tree: stub check (mypy.stubtest), mypy --strict, the benchmark in smoke mode,
# and the pytest suite. Run from the repository root by .ci/run; needs nothing
# but what it installs itself.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

step() { printf '\n== python: %s ==\n' "$*"; }

step "interpreter"
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  apt-get update
  apt-get install -y python3 python3-venv python3-pip
fi
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
# One interpreter for every pyo3 build (pyo3 rebuilds when it changes).
export PYO3_PYTHON="$PYTHON"
unset PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree
"$PYTHON" --version

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fencing-python.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

step "build tools (maturin, in a venv of its own)"
"$PYTHON" -m venv "$WORK/build"
"$WORK/build/bin/pip" install --quiet --disable-pip-version-check 'maturin>=1.16,<1.17'
"$WORK/build/bin/maturin" --version

step "clippy with the python features on"
cargo clippy -p fencing-python --features abi3-py39 --locked -- -D warnings
cargo clippy -p fencing-python --features abi3-py310 --locked -- -D warnings

step "wheels: abi3 for CPython 3.9+, and abi3 for 3.10+"
# shellcheck source=.ci/host-target.sh
. .ci/host-target.sh
(
  cd bindings/python
  "$WORK/build/bin/maturin" build --release --locked --target "$HOST" -i "$PYTHON" --out "$WORK/wheels"
  "$WORK/build/bin/maturin" build --release --locked --target "$HOST" -i "$PYTHON" --features abi3-py310 --out "$WORK/wheels"
)
ls -l "$WORK/wheels"
WHEEL39=$(ls "$WORK"/wheels/fencing-*-cp39-abi3-*.whl)
WHEEL310=$(ls "$WORK"/wheels/fencing-*-cp310-abi3-*.whl)

# A fresh venv with the package installed from a wheel, plus the test tools.
make_venv() { # name, pip arguments naming the package...
  local venv="$WORK/$1"
  shift
  "$PYTHON" -m venv "$venv"
  # psycopg: the PostgreSQL tests run fencing.check in their own transactions;
  # prometheus_client: fencing.metrics.Collector's test (an optional dependency).
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'pytest>=8' 'mypy>=1.10' 'psycopg[binary]>=3.1,<4' \
    'prometheus_client>=0.17'
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
  (cd "$WORK" && "$venv/bin/python" -c '
import importlib.metadata, pathlib, sys, fencing
where = pathlib.Path(fencing.__file__).resolve()
assert pathlib.Path(sys.prefix).resolve() in where.parents, where
tags = [line.split(": ", 1)[1] for line in
        importlib.metadata.distribution("fencing").read_text("WHEEL").splitlines()
        if line.startswith("Tag: ")]
print("fencing", fencing.__version__, "from", where.parent, "wheel tag", *tags)
')
}

step "fresh venv: what pip picks from the wheel directory on this Python"
make_venv venv-pick --no-index --find-links "$WORK/wheels" fencing
"$WORK/venv-pick/bin/python" -c '
import importlib.metadata, sys
wheel = importlib.metadata.distribution("fencing").read_text("WHEEL")
want = "cp310-abi3" if sys.version_info >= (3, 10) else "cp39-abi3"
assert "Tag: " + want in wheel, wheel
'

step "fresh venv: the CPython 3.9+ wheel"
make_venv venv-39 "$WHEEL39"

step "fresh venv: the CPython 3.10+ wheel"
make_venv venv-310 "$WHEEL310"

step "type stubs: mypy.stubtest against each installed native module, mypy --strict"
for venv in venv-39 venv-310; do
  (cd "$WORK/$venv" && "$WORK/$venv/bin/python" -m mypy.stubtest fencing)
done
(cd "$WORK" && "$WORK/venv-310/bin/python" -m mypy --strict --cache-dir "$WORK/mypy-strict" -p fencing)

step "the docs' Python blocks, as written, with the installed wheel (scripts/doc-snippets)"
scripts/doc-snippets run python -- "$WORK/venv-310/bin/python"

step "benchmark smoke (every path once; no timing claims)"
for venv in venv-39 venv-310; do
  "$WORK/$venv/bin/python" bindings/python/bench/bench_put.py --smoke
done

# pytest runs from the repository root with --import-mode=importlib: neither
# the root nor bindings/python/python is on sys.path, and conftest.py refuses
# a `fencing` imported from anywhere but the venv under test.
run_pytest() { # venv (each run has a temporary directory of its own)
  FENCING_REPO_ROOT="$ROOT" FENCING_EXPECT_PREFIX="$WORK/$1" \
    timeout --kill-after=10 600 \
    "$WORK/$1/bin/pytest" -c bindings/python/pyproject.toml --rootdir bindings/python \
    --basetemp "$WORK/$1-tmp" bindings/python/tests "${@:2}"
}

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

# The two suites run side by side: each spends most of its time waiting on
# its servers and timers (about a fifth of a run is the interpreter's CPU),
# and their names (schemas, prefixes, files) never meet.
step "pytest: the CPython 3.9+ and 3.10+ wheels, side by side"
run_pytest venv-39 -q >"$WORK/pytest-39.log" 2>&1 &
pid39=$!
run_pytest venv-310 -q >"$WORK/pytest-310.log" 2>&1 &
pid310=$!
status39=0 status310=0
wait "$pid39" || status39=$?
wait "$pid310" || status310=$?
for v in 39 310; do
  echo "-- pytest, the CPython ${v:0:1}.${v:1}+ wheel:"
  cat "$WORK/pytest-$v.log"
done
if [ "$status39" != 0 ] || [ "$status310" != 0 ]; then
  echo "pytest failed: exit $status39 (cp39 wheel), $status310 (cp310 wheel)" >&2
  exit 1
fi
