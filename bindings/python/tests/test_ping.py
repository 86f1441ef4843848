"""Store.ping and fencing.aio Store.ping: the core's answer, translated."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

import fencing
import fencing.aio


# Moves the file's schema version by `delta`, from another process: this
# one's `sqlite3` module is a second copy of SQLite beside the store's, and
# SQLite's POSIX locks are per process, so a close by one copy can drop the
# other's locks on the same file (SQLite's "How To Corrupt An SQLite Database
# File", 2.2.1). A ping read a stale version once in CI with the writer in-process.
SET_USER_VERSION = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
(version,) = db.execute("PRAGMA user_version").fetchone()
db.execute(f"PRAGMA user_version = {version + int(sys.argv[2])}")
db.close()
"""


def set_user_version(url: str, delta: int) -> None:
    path = url.removeprefix("sqlite:")
    subprocess.run([sys.executable, "-c", SET_USER_VERSION, path, str(delta)], check=True)


def test_ping_answers_until_closed(store: fencing.Store) -> None:
    store.ping()
    store.close()
    with pytest.raises(fencing.ClosedError):
        store.ping()


def test_ping_refuses_a_schema_older_or_newer_than_this_build(sqlite_url: str) -> None:
    with fencing.open(sqlite_url) as store:
        store.ping()
        set_user_version(sqlite_url, -1)
        with pytest.raises(fencing.BackendError) as behind:
            store.ping()
        assert behind.value.kind == "refused"
        assert "fencing migrate" in str(behind.value)
        set_user_version(sqlite_url, +2)
        with pytest.raises(fencing.BackendError, match="newer fencing"):
            store.ping()
        set_user_version(sqlite_url, -1)
        store.ping()


def test_aio_ping(sqlite_url: str) -> None:
    async def main() -> None:
        store = await fencing.aio.open(sqlite_url)
        await store.ping()
        set_user_version(sqlite_url, -1)
        with pytest.raises(fencing.BackendError):
            await store.ping()
        await store.close()
        with pytest.raises(fencing.ClosedError):
            await store.ping()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_postgres_ping(pg_url: str) -> None:
    store = fencing.open(pg_url)
    store.ping()
    store.close()
    with pytest.raises(fencing.ClosedError):
        store.ping()
