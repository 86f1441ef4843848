"""A store opened before fork (docs/semantics.md, "Fork"): gunicorn
``--preload``, Celery prefork and ``multiprocessing`` with the fork start
method all fork a process that already opened its store. The parent keeps
working; each child gets connections of its own on first use; a keep-alive
does not survive into a child.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import List

import pytest

import fencing

CHILDREN = 4
ROUNDS = 100


def work(store: fencing.Store, who: str) -> None:
    """100 rounds: a token from the shared counter logged under its own key
    (a token handed out twice would land on one key twice), then a fenced
    write and a checked read in the worker's own scope."""
    for i in range(ROUNDS):
        token = store.next_token("shared")
        store.put("log", str(token), who.encode(), token=1)
        mine = f"own-{who}"
        t = store.next_token(mine)
        store.put(mine, "k", f"{who}-{i}".encode(), token=t)
        entry = store.get(mine, "k", token=t)
        assert entry is not None and entry.value == f"{who}-{i}".encode()


def logged(store: fencing.Store) -> int:
    count, after = 0, None
    while True:
        page = store.list("log", after=after, limit=1000)
        count += len(page.keys)
        if page.next is None:
            return count
        after = page.next


@pytest.fixture(params=["sqlite", "postgres"])
def fork_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh store on each durable backend (memory: is one process's)."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'fork.db'}"
    return request.getfixturevalue("pg_url") + "&pool_size=2"


def test_os_fork_children_and_parent_share_a_store(fork_url: str) -> None:
    store = fencing.open(fork_url)
    store.next_token("shared")  # the parent's connection exists before the fork
    pids: List[int] = []
    for c in range(CHILDREN):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            code = 1
            try:
                work(store, f"child{c}")
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    work(store, "parent")
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    work(store, "parent-after")
    assert logged(store) == (CHILDREN + 2) * ROUNDS
    store.close()


_inherited: "fencing.Store | None" = None


def _pool_worker(who: str) -> str:
    assert _inherited is not None
    work(_inherited, who)
    return who


def test_multiprocessing_fork_pool_uses_the_inherited_store(fork_url: str) -> None:
    global _inherited
    _inherited = fencing.open(fork_url)
    try:
        _inherited.next_token("shared")
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(CHILDREN) as pool:
            done = pool.map(_pool_worker, [f"w{i}" for i in range(CHILDREN)])
        assert sorted(done) == [f"w{i}" for i in range(CHILDREN)]
        work(_inherited, "parent-after")
        assert logged(_inherited) == (CHILDREN + 1) * ROUNDS
    finally:
        _inherited.close()
        _inherited = None


def test_a_keep_alive_does_not_survive_into_a_child(tmp_path) -> None:
    store = fencing.open(f"sqlite:{tmp_path / 'guard.db'}")
    with store.lease("job", holder="parent", ttl=60) as keep:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which never leaves the block
            code = 1
            try:
                code = 0 if keep.lost and isinstance(keep.lost_error, fencing.LeaseLostError) else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert keep.lost is False
        status_now = store.status("job")
        assert status_now.lease is not None and status_now.lease.holder == "parent"
    assert store.status("job").lease is None
    store.close()
