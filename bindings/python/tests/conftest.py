"""Shared fixtures. The tests run against the installed wheel: the source tree's
``python/fencing`` must not be what gets imported."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Callable, Iterator, List, Tuple

import pytest

import fencing

HERE = pathlib.Path(__file__).resolve().parent


def repo_root() -> pathlib.Path:
    """The repository root: $FENCING_REPO_ROOT, else three levels above tests/."""
    env = os.environ.get("FENCING_REPO_ROOT")
    return pathlib.Path(env).resolve() if env else HERE.parents[2]


def pytest_report_header() -> str:
    return f"fencing {fencing.__version__} from {pathlib.Path(fencing.__file__).parent}"


def pytest_sessionstart(session: pytest.Session) -> None:
    source = (repo_root() / "bindings" / "python" / "python").resolve()
    imported = pathlib.Path(fencing.__file__).resolve()
    if source in imported.parents:
        raise pytest.UsageError(
            f"fencing was imported from the source tree ({imported}); "
            "install the wheel into a venv and run the tests from there"
        )
    expected = os.environ.get("FENCING_EXPECT_PREFIX")
    if expected and pathlib.Path(expected).resolve() not in imported.parents:
        raise pytest.UsageError(f"fencing imported from {imported}, not from {expected}")


@pytest.fixture
def mem() -> Iterator[fencing.Store]:
    """A fresh in-memory store on a manual clock."""
    with fencing.open("memory:?clock=manual") as store:
        yield store


@pytest.fixture
def sqlite_url(tmp_path: pathlib.Path) -> str:
    """The URL of a fresh SQLite file."""
    return f"sqlite:{tmp_path / 'fence.db'}"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[fencing.Store]:
    """A fresh store on each backend (manual clock)."""
    if request.param == "memory":
        url = "memory:?clock=manual"
    else:
        url = f"sqlite:{tmp_path / 'fence.db'}?clock=manual"
    with fencing.open(url) as s:
        yield s


def postgres_base_url() -> str:
    """$FENCING_TEST_PG_URL: skips the test when unset, fails it when
    FENCING_REQUIRE_PG=1 (CI runs everything under scripts/pg-cluster)."""
    url = os.environ.get("FENCING_TEST_PG_URL", "")
    if url:
        return url
    if os.environ.get("FENCING_REQUIRE_PG") == "1":
        pytest.fail(
            "FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set: "
            "run under scripts/pg-cluster run", pytrace=False
        )
    pytest.skip("no PostgreSQL: run the tests under `scripts/pg-cluster run -- ...`")


def fresh_schema(tag: str) -> str:
    """A schema name no earlier run used (the tests share one server and
    never drop anything)."""
    return f"t_py_{tag}_{os.getpid()}_{time.time_ns()}"


@pytest.fixture
def pg_base() -> str:
    """The test server's URL (see postgres_base_url)."""
    return postgres_base_url()


@pytest.fixture
def pg_schema(request: pytest.FixtureRequest) -> str:
    """A fresh schema name for this test."""
    return fresh_schema(request.node.name.split("[")[0][5:15].lower())


@pytest.fixture
def pg_url(pg_base: str, pg_schema: str) -> str:
    """A store URL on the test server, in this test's fresh schema."""
    return f"{pg_base}?schema={pg_schema}"


def etcd_test_env(name: str = "FENCING_TEST_ETCD_CLUSTER") -> str:
    """$FENCING_TEST_ETCD_CLUSTER (HOST:PORT,HOST:PORT,...), or another
    variable that scripts/etcd-cluster sets: skips the test when unset, fails
    it when FENCING_REQUIRE_ETCD=1 (CI runs everything under
    scripts/etcd-cluster)."""
    value = os.environ.get(name, "")
    if value:
        return value
    if os.environ.get("FENCING_REQUIRE_ETCD") == "1":
        pytest.fail(
            f"FENCING_REQUIRE_ETCD=1 but {name} is not set: "
            "run under scripts/etcd-cluster run", pytrace=False
        )
    pytest.skip("no etcd: run the tests under `scripts/etcd-cluster run -- ...`")


@pytest.fixture
def etcd_url(request: pytest.FixtureRequest) -> str:
    """A store URL on the test etcd cluster, under a fresh key prefix (a
    fresh store: the tests share one cluster and delete nothing)."""
    members = etcd_test_env()
    prefix = fresh_schema(request.node.name.split("[")[0][5:15].lower())
    return f"etcd://{members}/{prefix}"


@pytest.fixture
def etcd_gateway() -> str:
    """$FENCING_TEST_ETCD_URL: one member of the test cluster
    (``http://HOST:PORT``), whose JSON gateway takes ``POST /v3/kv/txn``."""
    etcd_test_env()
    return etcd_test_env("FENCING_TEST_ETCD_URL").rstrip("/")


def _interrupt_while_waiting(*argv: str, timeout: float) -> Tuple[int, str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "waiting"
        time.sleep(0.2)  # into the wait
        proc.send_signal(signal.SIGINT)
        # Bounded, but the wait itself has no end: a hang, not a speed claim.
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return proc.returncode, out, err


@pytest.fixture
def interrupt_while_waiting() -> Callable[..., Tuple[int, str, str]]:
    """Runs ``python -c SCRIPT ARGS...``, which prints ``waiting`` and then
    blocks; sends it Ctrl-C (SIGINT) 0.2 s later and returns its exit
    status, stdout and stderr, waiting at most ``timeout`` seconds."""
    return _interrupt_while_waiting


LOCKER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""


class FileLock:
    """Another process's write transaction on a SQLite file: the store's
    writes wait for it (up to their busy timeout) until ``release()``. In
    another process because SQLite's locks are POSIX record locks, which
    never exclude each other within one process (Python's sqlite3 and the
    store's own SQLite would not see each other's)."""

    def __init__(self, path: pathlib.Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.proc.returncode is None:
            self.proc.communicate("\n", timeout=60)

    def close(self) -> None:
        """Ends the locking process, whatever it was doing."""
        if self.proc.returncode is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def locker_script() -> str:
    """``python -c SCRIPT PATH`` takes the SQLite file's write lock, prints
    ``locked``, and lets it go when its stdin gives a line (``FileLock``)."""
    return LOCKER


@pytest.fixture
def lock_file() -> Iterator[Callable[[pathlib.Path], FileLock]]:
    """Takes a SQLite file's write lock in another process (``FileLock``);
    every lock still held is let go at the end of the test."""
    taken: List[FileLock] = []

    def lock(path: pathlib.Path) -> FileLock:
        taken.append(FileLock(path))
        return taken[-1]

    yield lock
    for held in taken:
        held.close()
