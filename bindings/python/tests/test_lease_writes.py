"""Writing through a held lease (``lease.put`` and the rest): the lease's own
scope and token, so a typo in a scope name cannot give an unprotected write
(docs/semantics.md, "Writing through a held lease")."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Coroutine, TypeVar

import pytest

import fencing
import fencing.aio

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 60.0))


def test_writes_land_in_the_leases_scope_with_its_token(store: fencing.Store) -> None:
    with store.lease("sc", holder="a", ttl=60) as lease:
        assert lease.put("k", b"v").version == 1
        assert lease.put("t", bytearray(b"x")).version == 1
        entry = store.get("sc", "k")
        assert entry is not None and (entry.value, entry.token) == (b"v", lease.token)
        assert store.get("other", "k") is None
        lease.apply([fencing.Put("k2", b"w"), fencing.Delete("t")])
        got = lease.get("k2")
        assert got is not None and got.value == b"w"
        assert lease.get("t") is None
        assert lease.delete("k2").version == 0
        lease.put("k", b"v2", expected_version=1)
        with pytest.raises(fencing.VersionMismatchError):
            lease.put("k", b"v3", expected_version=1)
        lease.claim()
        assert store.fence_of("sc") == lease.token
    assert store.status("sc").lease is None


def test_after_a_takeover_a_write_is_stale_and_changes_nothing(mem: fencing.Store) -> None:
    with pytest.raises(fencing.LeaseLostError):
        with mem.lease("job", holder="a", ttl=60) as lease:
            lease.put("k", b"old")
            mem.advance_clock(60)
            b = mem.acquire("job", holder="b", ttl=60)
            mem.claim("job", token=b.token)
            with pytest.raises(fencing.StaleTokenError):
                lease.put("k", b"new")
            with pytest.raises(fencing.StaleTokenError):
                lease.delete("k")
            with pytest.raises(fencing.StaleTokenError):
                lease.apply([fencing.Put("k", b"new")])
            with pytest.raises(fencing.StaleTokenError):
                lease.get("k")
            entry = mem.get("job", "k")
            assert entry is not None and entry.value == b"old"


def test_no_write_before_entering_or_after_the_block(mem: fencing.Store) -> None:
    lease = mem.lease("sc", holder="a", ttl=60)
    with pytest.raises(fencing.InvalidArgumentError, match="not held yet"):
        lease.put("k", b"v")
    with lease:
        pass
    with pytest.raises(fencing.InvalidArgumentError, match="released"):
        lease.put("k", b"v")
    with pytest.raises(fencing.InvalidArgumentError, match="released"):
        lease.claim()
    assert mem.get("sc", "k") is None
    assert mem.fence_of("sc") <= lease.token


def test_a_lease_known_lost_writes_nothing() -> None:
    # Without eager fencing the takeover raises no fence: the store alone
    # would accept the old token, so only the lease's own check stops it.
    with fencing.open("memory:?eager_fencing=false") as store:
        with pytest.raises(fencing.LeaseLostError):
            with store.lease("job", holder="a", ttl=0.3) as lease:
                store.release("job", token=lease.token)
                store.acquire("job", holder="b", ttl=60)
                limit = time.monotonic() + 60
                while not lease.lost and time.monotonic() < limit:
                    time.sleep(0.005)
                with pytest.raises(fencing.LeaseLostError):
                    lease.put("k", b"v")
                with pytest.raises(fencing.LeaseLostError):
                    lease.claim()
        assert store.get("job", "k") is None
        assert store.fence_of("job") == 0


def test_bad_input_is_refused_before_anything_is_written(mem: fencing.Store) -> None:
    with mem.lease("sc", holder="a", ttl=60) as lease:
        with pytest.raises(fencing.InvalidArgumentError, match="key must be a str"):
            lease.put(1, b"v")  # type: ignore[arg-type]
        with pytest.raises(fencing.InvalidArgumentError, match="value must be bytes-like"):
            lease.put("k", "text")  # type: ignore[arg-type]
        with pytest.raises(fencing.InvalidArgumentError):
            lease.put("k", b"v", expected_version=-1)
        with pytest.raises(fencing.InvalidArgumentError):
            lease.apply("not ops")  # type: ignore[arg-type]
        with pytest.raises(fencing.InvalidArgumentError):
            lease.put("", b"v")
        assert mem.list("sc").keys == []


def test_the_async_lease_writes_through_itself() -> None:
    async def main() -> None:
        async with fencing.aio.open("memory:?clock=manual") as store:
            async with store.lease("sc", holder="a", ttl=60) as lease:
                await lease.put("k", b"v")
                await lease.apply([fencing.Put("k2", b"w")])
                got = await lease.get("k")
                assert got is not None and got.value == b"v"
                await lease.delete("k2")
                await lease.claim()
                entry = await store.get("sc", "k")
                assert entry is not None and entry.token == lease.token
                assert await store.get("sc", "k2") is None

    run(main())


def test_the_async_lease_loss_can_be_awaited() -> None:
    async def main() -> None:
        # A takeover the renewal sees: the waiters wake with the loss.
        async with fencing.aio.open("memory:") as store:
            with pytest.raises(fencing.LeaseLostError):
                async with store.lease("job", holder="a", ttl=0.3) as lease:
                    waiters = [asyncio.create_task(lease.wait_lost()) for _ in range(2)]
                    cancelled = asyncio.create_task(lease.wait_lost())
                    await asyncio.sleep(0)
                    cancelled.cancel()
                    await store.release(lease.lease)
                    await store.acquire("job", holder="b", ttl=60)
                    for lost in await asyncio.gather(*waiters):
                        assert isinstance(lost, fencing.LeaseLostError)
                        assert lost.current_holder == "b"
                    assert lease.lost
                    # Known lost: at once.
                    assert isinstance(await lease.wait_lost(), fencing.LeaseLostError)

    run(main())


def test_an_awaited_lease_that_ends_held_gives_none() -> None:
    async def main() -> None:
        async with fencing.aio.open("memory:?clock=manual") as store:
            lease = store.lease("job", holder="a", ttl=60)
            async with lease:
                waiter = asyncio.create_task(lease.wait_lost())
                await asyncio.sleep(0)
                assert not waiter.done()
            assert await waiter is None
            assert await lease.wait_lost() is None

    run(main())
