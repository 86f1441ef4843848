"""Resident memory stays bounded over many open/close cycles and many
operations, per backend (docs/testing.md, "Leak tests"). Memory only, no
timing: RSS after the first tenth (the warm-up) against RSS at the end."""

from __future__ import annotations

import gc
import logging
import pathlib
from typing import Callable, Iterator

import pytest

import fencing

# A leak of 1 KiB per memory: store or 100 bytes per operation exceeds it.
BOUND = 8 << 20


@pytest.fixture(autouse=True)
def no_rejection_logs() -> Iterator[None]:
    """The stale puts below each log a WARNING, which pytest keeps for its
    report: memory that is pytest's, not fencing's."""
    logger = logging.getLogger("fencing")
    level = logger.level
    logger.setLevel(logging.ERROR)
    fencing.reset_log_cache()
    yield
    logger.setLevel(level)
    fencing.reset_log_cache()


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def bounded(what: str, n: int, step: Callable[[int], object]) -> None:
    warm = n // 10
    for i in range(warm):
        step(i)
    gc.collect()
    before = rss()
    for i in range(warm, n):
        step(i)
    gc.collect()
    after = rss()
    print(f"{what}: RSS {before / 2**20:.1f} -> {after / 2**20:.1f} MiB")
    assert after - before <= BOUND, f"{what}: RSS grew from {before} to {after}"


def open_close(url: str) -> Callable[[int], object]:
    def step(_: int) -> None:
        store = fencing.open(url)
        store.fence_of("s")
        store.close()

    return step


def operations(store: fencing.Store) -> Callable[[int], object]:
    stale = store.next_token("leak")  # the lease below leaves it behind
    lease = store.acquire("leak", holder="h", ttl=3600)

    def step(i: int) -> object:
        key = f"k{i % 100}"
        kind = i % 4
        if kind == 0:
            return store.put("leak", key, b"value", token=lease.token)
        if kind == 1:
            return store.get("leak", key)
        if kind == 2:
            return store.fence_of("leak")
        with pytest.raises(fencing.StaleTokenError):
            store.put("leak", "k", b"value", token=stale)
        return None

    return step


def test_memory_backend_stays_bounded() -> None:
    bounded("memory: open/close", 10_000, open_close("memory:"))
    with fencing.open("memory:") as store:
        bounded("memory: operations", 100_000, operations(store))


def test_sqlite_backend_stays_bounded(tmp_path: pathlib.Path) -> None:
    # Each open opens the file and checks its schema in a write transaction:
    # 2,000 of them. synchronous=normal spares an fsync per commit.
    url = f"sqlite:{tmp_path / 'leak.db'}?synchronous=normal"
    bounded("sqlite: open/close", 2_000, open_close(url))
    with fencing.open(url) as store:
        bounded("sqlite: operations", 100_000, operations(store))


def test_postgres_backend_stays_bounded(pg_url: str) -> None:
    # Each open is a new server connection (a backend process) and each
    # operation a round trip: 200 and 5,000, to keep CI time bounded.
    bounded("postgres: open/close", 200, open_close(pg_url))
    with fencing.open(pg_url) as store:
        bounded("postgres: operations", 5_000, operations(store))
