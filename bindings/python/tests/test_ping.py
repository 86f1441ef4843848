"""Store.ping and fencing.aio Store.ping: the core's answer, translated."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

import fencing
import fencing.aio


def set_user_version(url: str, delta: int) -> None:
    path = url.removeprefix("sqlite:")
    with sqlite3.connect(path) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        db.execute(f"PRAGMA user_version = {version + delta}")


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
