"""``fencing.aio``: the same API as awaitables, tasks sharing one store, and
an event loop that keeps running while a call blocks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import pathlib
import threading
import time
from typing import Any, Callable, Coroutine, List, TypeVar

import pytest

import fencing
import fencing.aio

BOUND = 60.0
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, BOUND))


def test_same_methods_as_the_blocking_store() -> None:
    blocking = {n for n in dir(fencing.Store) if not n.startswith("_")}
    asynchronous = {n for n in dir(fencing.aio.Store) if not n.startswith("_")}
    assert blocking - asynchronous == set()
    for name in blocking - {"closed", "location", "backend_kind", "lease", "keep_alive"}:
        assert inspect.iscoroutinefunction(getattr(fencing.aio.Store, name)), name


def test_round_trip(sqlite_url: str) -> None:
    async def main() -> None:
        async with fencing.aio.open(sqlite_url + "?clock=manual") as store:
            assert isinstance(store, fencing.aio.Store)
            a = await store.acquire("report", holder="a", ttl=10)
            assert (await store.put("report", "body", b"A", token=a.token)).version == 1
            await store.advance_clock(11)
            b = await store.acquire("report", holder="b", ttl=10)
            with pytest.raises(fencing.StaleTokenError) as info:
                await store.put("report", "body", b"A late", token=a.token)
            assert (info.value.presented, info.value.current) == (1, 2)
            receipts = await store.apply(
                "report", [fencing.Put("body", b"B"), fencing.Put("x", b"")], token=b.token
            )
            assert [r.version for r in receipts] == [2, 1]
            one = await store.execute("report", fencing.Put("y", b"Y"), token=b.token, seq=1, holder="b")
            assert (one.version, one.token) == (1, b.token)
            gone = await store.execute("report", fencing.Delete("y", expected_version=1), token=b.token)
            assert gone.version == 0
            assert store.backend_kind == "sqlite"
            e = await store.get("report", "body")
            assert e is not None and (e.value, e.token) == (b"B", 2)
            assert (await store.list("report")).keys == ["body", "x"]
            assert await store.fence_of("report") == 2
            assert (await store.status("report")).entries == 2
            assert (await store.renew(b, ttl=20)).ttl == 20.0
            assert await store.release(b) is True
            await store.claim("report", token=3)
            assert (await store.delete("report", "x", token=3)).version == 0
            assert await store.next_token("other") == 1
            assert await store.advance_counter("other", 10) == 10
            assert await store.retire("other") is True
            assert (await store.metrics())["stale_rejections"] == 1
            assert f'fencing_stale_rejections_total{{store="{store.location}"}} 1\n' in await store.metrics_text()
            assert store.sync.fence_of("report") == 3
        assert store.closed
        with pytest.raises(fencing.ClosedError):
            await store.get("report", "body")
        awaited = await fencing.aio.open("memory:")
        assert repr(awaited) == "<fencing.aio.Store memory: open>"
        await awaited.close()

    run(main())


def test_tasks_share_one_store(store: fencing.Store) -> None:
    shared = fencing.aio.Store(store)

    async def worker(i: int) -> List[int]:
        tokens = []
        for _ in range(5):
            lease = await shared.acquire_wait("counter", holder=f"task-{i}", ttl=BOUND, timeout=BOUND)
            entry = await shared.get("counter", "n")
            n = 0 if entry is None else int(entry.value)
            await shared.put("counter", "n", str(n + 1).encode(), token=lease.token)
            assert await shared.release(lease) is True
            tokens.append(lease.token)
        return tokens

    async def main() -> List[List[int]]:
        # A small executor: waiters outnumber its threads, and must not
        # starve the holder's calls.
        executor = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        asyncio.get_running_loop().set_default_executor(executor)
        return await asyncio.gather(*(worker(i) for i in range(8)))

    per_task = run(main())
    entry = store.get("counter", "n")
    assert entry is not None and int(entry.value) == 40
    tokens = sorted(t for ts in per_task for t in ts)
    assert tokens == list(range(1, 41))
    for ts in per_task:
        assert ts == sorted(ts)


def test_a_waiting_call_does_not_block_the_loop(mem: fencing.Store) -> None:
    """A task blocked in acquire_wait leaves the loop free for the task that
    releases the lease; if the wait blocked the loop, it would time out."""
    store = fencing.aio.Store(mem)

    async def main() -> fencing.Lease:
        held = await store.acquire("s", holder="main", ttl=3600)
        waiter = asyncio.ensure_future(
            store.acquire_wait("s", holder="waiter", ttl=10, timeout=BOUND)
        )
        for _ in range(10):
            await asyncio.sleep(0)
        assert not waiter.done()
        assert await store.release(held) is True
        return await waiter

    lease = run(main())
    assert (lease.holder, lease.token) == ("waiter", 2)


def test_async_keep_alive(mem: fencing.Store) -> None:
    store = fencing.aio.Store(mem)

    async def main() -> None:
        async with store.lease("job", holder="a", ttl=60) as lease:
            assert isinstance(lease, fencing.aio.KeepAlive)
            assert lease.active and not lease.lost and lease.token == 1
            assert (lease.scope, lease.holder) == ("job", "a")
            assert lease.lease.ttl == 60.0 and lease.expires_at is not None
            assert lease.last_lateness >= 0.0 and lease.lost_error is None
            lease.check()
            assert lease.sync.token == 1
        assert not lease.active
        with pytest.raises(fencing.LeaseLostError) as info:
            async with store.lease("job", holder="a", ttl=60):
                await store.advance_clock(61)
                await store.acquire("job", holder="b", ttl=60)
        assert info.value.current_holder == "b"
        acquired = await store.acquire("x", holder="c", ttl=60)
        async with store.keep_alive(acquired) as kept:
            assert await kept.release() is True
        assert "released" in repr(kept)

    run(main())


def test_bad_input_through_aio(mem: fencing.Store) -> None:
    store = fencing.aio.Store(mem)

    async def main() -> None:
        with pytest.raises(fencing.InvalidArgumentError):
            await store.put("s", "k", "text", token=1)  # type: ignore[arg-type]
        with pytest.raises(fencing.InvalidArgumentError):
            await store.put("s", "k", b"v", token=True)
        with pytest.raises(fencing.InvalidArgumentError):
            await fencing.aio.open("nosuch:")
        with pytest.raises(fencing.InvalidArgumentError):
            await store.execute("s", [fencing.Put("k", b"v")], token=1)  # type: ignore[arg-type]
        with pytest.raises(fencing.InvalidArgumentError) as not_etcd:
            await store.etcd_check("s", token=1)
        assert not_etcd.value.code == "INVALID_ARGUMENT"
        assert await store.fence_of("s") == 0
        assert store.backend_kind == "memory"

    run(main())
    with pytest.raises(TypeError):
        fencing.aio.Store("memory:")  # type: ignore[arg-type]


def test_a_cancelled_acquire_releases_the_lease_it_took(mem: fencing.Store) -> None:
    store = fencing.aio.Store(mem)

    async def main() -> None:
        for scope, call in (
            ("plain", lambda: store.acquire("plain", holder="quitter", ttl=3600)),
            ("held", lambda: store.lease("held", holder="quitter", ttl=3600).__aenter__()),
        ):
            task = asyncio.ensure_future(call())
            await asyncio.sleep(0)  # the call is on its way to the store
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # Its lease is released at once, not held for its hour.
            deadline = time.monotonic() + BOUND
            while True:
                status = await store.status(scope)
                if status.counter == 1 and status.lease is None:
                    break
                assert time.monotonic() < deadline, f"{scope}: the quitter kept the lease"
                await asyncio.sleep(0.005)

    run(main())


@pytest.mark.parametrize("how", ["acquire_wait", "lease"])
def test_a_cancelled_wait_stops_and_takes_nothing(mem: fencing.Store, how: str) -> None:
    store = fencing.aio.Store(mem)

    async def wait() -> object:
        if how == "acquire_wait":
            return await store.acquire_wait("s", holder="waiter", ttl=3600, timeout=BOUND)
        return await store.lease("s", holder="waiter", ttl=3600, timeout=BOUND).__aenter__()

    async def main() -> None:
        held = await store.acquire("s", holder="main", ttl=3600)
        waiter = asyncio.ensure_future(wait())
        await asyncio.sleep(0.05)  # into the wait
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert await store.release(held) is True
        # The waiting thread stopped with the task: the free lease is not
        # taken (before, the thread took it, found nobody awaiting it, and
        # released it).
        await asyncio.sleep(0.2)
        assert (await store.status("s")).counter == held.token
        assert (await store.metrics())["leases_acquired"] == 1

    run(main())


def test_an_async_watch_yields_rejections_and_outlives_a_cancelled_step(mem: fencing.Store) -> None:
    store = fencing.aio.Store(mem)

    def stale_write(scope: str) -> None:
        mem.advance_counter(scope, 2)
        mem.put(scope, "k", b"v", token=2)
        with pytest.raises(fencing.StaleTokenError):
            mem.put(scope, "k", b"x", token=1)

    async def main() -> None:
        watch = await store.watch_rejections()
        # A step given up while nothing is recorded: its wait stops.
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(watch.__anext__(), 0.05)
        stale_write("a")
        stale_write("b")
        seen = []
        async for r in watch:
            seen.append(r["scope"])
            if len(seen) == 2:
                break
        assert seen == ["a", "b"]

    run(main())


def test_a_task_cancelled_after_its_lease_arrived_releases_it(mem: fencing.Store) -> None:
    # The order made certain: the lease arrives (its callback queued on the
    # loop), then the task is cancelled before it resumes to take it.
    store = fencing.aio.Store(mem)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(store.acquire("late", holder="quitter", ttl=3600))
        await asyncio.sleep(0)  # the task starts its call on a thread
        deadline = time.monotonic() + BOUND
        while mem.status("late").lease is None:  # blocks the loop on purpose
            assert time.monotonic() < deadline, "the acquire never ran"
            time.sleep(0.001)
        time.sleep(0.05)  # the thread hands the lease to the loop
        loop.call_soon(task.cancel)  # runs right after the lease is delivered
        with pytest.raises(asyncio.CancelledError):
            await task
        while mem.status("late").lease is not None:
            assert time.monotonic() < deadline, "the quitter kept the lease"
            await asyncio.sleep(0.005)

    run(main())


def test_apply_refuses_what_the_blocking_apply_refuses(mem: fencing.Store) -> None:
    # The same class, code and message as the blocking face, never a bare
    # TypeError from turning the ops into a list.
    store = fencing.aio.Store(mem)

    async def main() -> None:
        async with store.lease("held", holder="a", ttl=60) as held:
            for ops in (5, None, "ops", b"ops", object(), fencing.Put("k", b"v")):
                with pytest.raises(fencing.InvalidArgumentError) as blocking:
                    mem.apply("s", ops, token=1)  # type: ignore[arg-type]
                with pytest.raises(fencing.InvalidArgumentError) as info:
                    await store.apply("s", ops, token=1)  # type: ignore[arg-type]
                assert info.value.code == blocking.value.code == "INVALID_ARGUMENT"
                assert str(info.value) == str(blocking.value), ops
                with pytest.raises(fencing.InvalidArgumentError) as blocking:
                    held.sync.apply(ops)  # type: ignore[arg-type]
                with pytest.raises(fencing.InvalidArgumentError) as info:
                    await held.apply(ops)  # type: ignore[arg-type]
                assert info.value.code == "INVALID_ARGUMENT"
                assert str(info.value) == str(blocking.value), ops
        assert await store.fence_of("s") == 0

    run(main())


def test_a_lease_nobody_awaits_is_released_off_the_event_loop(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, lock_file: Callable[[pathlib.Path], Any]
) -> None:
    # The release of a lease taken for a cancelled task is a blocking call:
    # it runs on a thread, never on the loop. Here it meets a file another
    # process has locked, and only a callback on the loop unlocks the file:
    # a release on the loop would block it until the busy timeout, fail, and
    # leave the lease held.
    path = tmp_path / "undo.db"
    url = f"sqlite:{path}?busy_timeout_ms=3000"
    released_on: List[int] = []
    original = fencing.aio._release_quietly

    def recording(store: Any, lease: fencing.Lease) -> None:
        released_on.append(threading.get_ident())
        original(store, lease)

    monkeypatch.setattr(fencing.aio, "_release_quietly", recording)

    async def main() -> None:
        sync = fencing.open(url)
        store = fencing.aio.Store(sync)
        loop = asyncio.get_running_loop()
        try:
            # 1. Cancelled while its acquire waits for the lock: the lease
            # arrives for nobody (the future was cancelled).
            lock = lock_file(path)
            task = asyncio.ensure_future(store.acquire("early", holder="quitter", ttl=3600))
            await asyncio.sleep(0.2)  # the acquire waits for the file's lock
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            lock.release()
            await until(lambda: sync.status("early").counter == 1 and sync.status("early").lease is None)
            assert released_on and released_on[-1] != threading.get_ident(), "released on the loop"
            # 2. Cancelled after its lease arrived, before it resumed.
            task = asyncio.ensure_future(store.acquire("late", holder="quitter", ttl=3600))
            await asyncio.sleep(0)
            deadline = time.monotonic() + BOUND
            while sync.status("late").lease is None:  # blocks the loop on purpose
                assert time.monotonic() < deadline, "the acquire never ran"
                time.sleep(0.001)
            time.sleep(0.05)  # the thread hands the lease to the loop
            lock = lock_file(path)  # the release will wait for this
            unlocked = asyncio.Event()

            def unlock() -> None:
                lock.release()
                unlocked.set()

            loop.call_soon(task.cancel)  # runs right after the lease is delivered
            loop.call_later(0.3, unlock)  # only a free loop runs it
            with pytest.raises(asyncio.CancelledError):
                await task
            # Not a read before then: it would wait for the release's hold
            # on the store's connection, on the loop.
            await unlocked.wait()
            await until(lambda: sync.status("late").lease is None)
        finally:
            sync.close()
        assert len(released_on) == 2
        assert threading.get_ident() not in released_on

    run(main())


async def until(condition: Any) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting: the quitter kept the lease"
        await asyncio.sleep(0.005)


def test_a_close_right_after_a_cancel_waits_for_the_lease_to_be_given_back(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lease that arrived for a cancelled task is released on a thread; a
    # close made right after the cancel (a shutdown) waits for it, else
    # the release meets a closed store and the lease stays held. The
    # release's thread is made slow to start (a loaded machine), so that
    # the close comes first unless it waits.
    path = tmp_path / "close.db"
    url = f"sqlite:{path}"
    original = fencing.aio._release_quietly

    def slow(store: Any, lease: fencing.Lease) -> None:
        time.sleep(0.3)
        original(store, lease)

    monkeypatch.setattr(fencing.aio, "_release_quietly", slow)

    async def main() -> None:
        store = fencing.aio.Store(fencing.open(url))
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(store.acquire("late", holder="quitter", ttl=3600))
        await asyncio.sleep(0)
        peek = fencing.open(url)
        deadline = time.monotonic() + BOUND
        while peek.status("late").lease is None:  # blocks the loop on purpose
            assert time.monotonic() < deadline, "the acquire never ran"
            time.sleep(0.001)
        peek.close()
        time.sleep(0.05)  # the thread hands the lease to the loop
        loop.call_soon(task.cancel)  # runs right after the lease is delivered
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.close()

    asyncio.run(main())
    after = fencing.open(url)
    try:
        assert after.status("late").lease is None, "the lease outlived the close"
    finally:
        after.close()
