"""``Store.watch``: who holds a scope's lease, live (docs/semantics.md,
"Watching a lease"): the lease as it is, then each change (acquired,
renewed, released, expired), in order, seen from another handle than the
one that makes them; Ctrl-C, a fired Cancel and a cancelled task end a
blocked wait and lose nothing. Nothing here times a call: the bounds only
turn a hang into a failure."""

from __future__ import annotations

import asyncio
import pathlib
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Coroutine, Iterator, Optional, Tuple, TypeVar, Union

import pytest

import fencing
import fencing.aio

BOUND = 60.0  # seconds: the most any wait here may take
TTL = 120  # far longer than any wait: only a wake-up (or a read) shows a change
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, BOUND))


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def pair(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path
) -> Iterator[Tuple[fencing.Store, fencing.Store]]:
    """Two handles on one store: the one that changes the lease, the one
    that watches (one handle for ``memory:``, which lives in its handle)."""
    if request.param == "memory":
        store = fencing.open("memory:")
        yield store, store
        store.close()
        return
    if request.param == "sqlite":
        url = f"sqlite:{tmp_path / 'watch.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    changer = fencing.open(url)
    watcher = fencing.open(url)
    yield changer, watcher
    watcher.close()
    changer.close()


class Watching:
    """A blocking watch iterated on its own thread, each holding queued: so
    that the changes below come while it waits."""

    def __init__(self, watcher: fencing.Store, scope: str) -> None:
        self.seen: "queue.Queue[Union[fencing.Holding, BaseException]]" = queue.Queue()
        watch = watcher.watch(scope)
        assert watch.scope == scope
        self.thread = threading.Thread(target=self._run, args=(watch,), daemon=True)
        self.thread.start()

    def _run(self, watch: fencing.LeaseWatch) -> None:
        try:
            for h in watch:
                self.seen.put(h)
        except fencing.ClosedError as e:  # the watcher closed: the end
            self.seen.put(e)

    def next(self, what: str) -> fencing.Holding:
        try:
            h = self.seen.get(timeout=BOUND)
        except queue.Empty:
            pytest.fail(f"the watch did not see {what}")
        assert isinstance(h, fencing.Holding), (what, h)
        return h

    @staticmethod
    def settle() -> None:
        """Lets the watch read and fall asleep before the next change."""
        time.sleep(0.3)


def held(h: fencing.Holding) -> Optional[Tuple[str, int]]:
    return None if h.lease is None else (h.lease.holder, h.lease.token)


def test_a_watch_yields_the_lease_then_each_change_in_order(
    pair: Tuple[fencing.Store, fencing.Store],
) -> None:
    changer, watcher = pair
    watch = Watching(watcher, "s")
    first = watch.next("the start")
    assert (first.scope, first.lease) == ("s", None)
    assert repr(first) == "Holding(scope='s', lease=None)"

    watch.settle()
    a = changer.acquire("s", holder="a", ttl=TTL)
    seen = watch.next("the acquire")
    assert seen.scope == "s" and held(seen) == ("a", a.token)
    assert isinstance(seen.lease, fencing.Lease) and seen.lease.scope == "s"
    first_expiry = seen.lease.expires_at

    watch.settle()
    changer.renew(a, ttl=TTL)
    seen = watch.next("the renewal")
    assert seen.lease is not None and seen.lease.token == a.token
    assert seen.lease.expires_at > first_expiry

    watch.settle()
    assert changer.release(a)
    assert watch.next("the release").lease is None

    # An expiry is seen with nobody touching the store.
    watch.settle()
    b = changer.acquire("s", holder="b", ttl=0.3)
    assert held(watch.next("the second holder")) == ("b", b.token)
    assert watch.next("the expiry").lease is None

    # Nothing changes: nothing is yielded. The thread ends when the fixture
    # closes the watcher, at the wait's next read (on memory: nothing wakes
    # a wait for a close, so that may be 15 s later; the closed-store test
    # below is where a close ends a watch).
    with pytest.raises(queue.Empty):
        watch.seen.get(timeout=0.3)


def test_wait_and_pop_split_a_step_and_a_cancel_ends_the_wait() -> None:
    with fencing.open("memory:") as store:
        watch = store.watch("s")
        assert watch.wait(timeout=BOUND) is True
        first = watch.pop()
        assert first is not None and first.lease is None
        assert watch.pop() is None
        assert watch.wait(timeout=0) is False
        cancel = fencing.Cancel()
        threading.Timer(0.05, cancel.fire).start()
        assert watch.wait(cancel=cancel) is False  # no timeout: only the cancel ends it
        lease = store.acquire("s", holder="a", ttl=TTL)
        assert watch.wait(timeout=BOUND, cancel=fencing.Cancel()) is True
        h = watch.pop()
        assert h is not None and held(h) == ("a", lease.token)
        assert h == h and h != first  # compared by value
        with pytest.raises(fencing.InvalidArgumentError, match="cancel must be a fencing.Cancel"):
            watch.wait(timeout=0, cancel="no")  # type: ignore[arg-type]


def test_a_watch_refuses_a_bad_scope_and_a_closed_store() -> None:
    store = fencing.open("memory:")
    for bad in ("", "x" * (fencing.MAX_SCOPE_BYTES + 1)):
        with pytest.raises(fencing.InvalidArgumentError) as info:
            store.watch(bad)
        assert info.value.code == "INVALID_ARGUMENT"
    with pytest.raises(fencing.InvalidArgumentError):
        store.watch(1)  # type: ignore[arg-type]
    watch = store.watch("s")
    store.close()
    with pytest.raises(fencing.ClosedError):
        next(watch)
    assert list(watch) == []  # a store's error ends the watch
    with pytest.raises(fencing.ClosedError):
        store.watch("s")


INTERRUPTED = r"""
import sys, fencing
store = fencing.Store(sys.argv[1])
watch = store.watch("s")
assert next(watch).lease is None
try:
    # Inside the try: a Ctrl-C that lands before the wait is caught too.
    print("waiting", flush=True)
    next(watch)
except KeyboardInterrupt:
    print("interrupted", flush=True)
# Still usable, and nothing lost: the change after the interrupt is seen.
lease = store.acquire("s", holder="after", ttl=120)
h = next(watch)
print("then", h.lease.holder, h.lease.token == lease.token, flush=True)
"""


def test_ctrl_c_ends_a_blocked_watch_and_leaves_it_usable(
    tmp_path: pathlib.Path, interrupt_while_waiting: Callable[..., Tuple[int, str, str]]
) -> None:
    status, out, err = interrupt_while_waiting(INTERRUPTED, f"sqlite:{tmp_path / 'watch.db'}", timeout=BOUND)
    assert out.split("\n")[:2] == ["interrupted", "then after True"], (out, err)
    assert status == 0, err


# ----- fencing.aio -----


def test_an_async_watch_yields_the_lease_then_each_change(
    pair: Tuple[fencing.Store, fencing.Store],
) -> None:
    changer, watcher = pair

    async def main() -> None:
        store = fencing.aio.Store(watcher)
        watch = await store.watch("s")
        assert isinstance(watch, fencing.aio.LeaseWatch)
        assert watch.scope == "s" and isinstance(watch.sync, fencing.LeaseWatch)
        first = await watch.__anext__()
        assert (first.scope, first.lease) == ("s", None)

        async def during_next(change: Any) -> Tuple[fencing.Holding, Any]:
            """A change made while the watch waits (the wait first let to
            read and fall asleep), and what the watch then yields."""
            step = asyncio.ensure_future(watch.__anext__())
            await asyncio.sleep(0.3)
            done = await asyncio.to_thread(change)
            return await step, done

        seen, a = await during_next(lambda: changer.acquire("s", holder="a", ttl=TTL))
        assert held(seen) == ("a", a.token)
        assert seen.lease is not None
        first_expiry = seen.lease.expires_at
        seen, _ = await during_next(lambda: changer.renew(a, ttl=TTL))
        assert seen.lease is not None and seen.lease.token == a.token
        assert seen.lease.expires_at > first_expiry
        seen, released = await during_next(lambda: changer.release(a))
        assert released and seen.lease is None
        seen, b = await during_next(lambda: changer.acquire("s", holder="b", ttl=0.3))
        assert held(seen) == ("b", b.token)
        # The expiry, with nobody touching the store; then a break ends it.
        states = []
        async for h in watch:
            states.append(held(h))
            break
        assert states == [None]

    run(main())


def test_a_cancelled_step_stops_its_wait_and_loses_nothing() -> None:
    async def main() -> None:
        async with await fencing.aio.Store.open("memory:") as store:
            watch = await store.watch("s")
            assert (await watch.__anext__()).lease is None
            # A step given up while nothing changes: its wait stops.
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(watch.__anext__(), 0.05)
            task = asyncio.ensure_future(watch.__anext__())
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The waits behind them let go of the watch: another wait gets it.
            freed = threading.Thread(target=watch.sync.wait, args=(0,), daemon=True)
            freed.start()
            freed.join(BOUND)
            assert not freed.is_alive(), "a cancelled step's wait kept running"
            # Nothing lost: the change after the cancelled steps is seen.
            lease = await store.acquire("s", holder="a", ttl=TTL)
            async for h in watch:
                assert held(h) == ("a", lease.token)
                break
            with pytest.raises(fencing.InvalidArgumentError):
                await store.watch("")
            with pytest.raises(fencing.InvalidArgumentError):
                await store.watch("x" * (fencing.MAX_SCOPE_BYTES + 1))
        with pytest.raises(fencing.ClosedError):
            await watch.__anext__()

    run(main())


# ----- pop beside a wait in flight -----

POP_BESIDE_A_WAIT = r"""
import sys, threading, time, fencing

store = fencing.Store("memory:")
watch = store.watch("job") if sys.argv[1] == "lease" else store.watch_rejections()
if sys.argv[1] == "lease":
    assert watch.wait(timeout=30) is True
    assert watch.pop() is not None  # the lease as it is (none)
woke = []
waiter = threading.Thread(target=lambda: woke.append(watch.wait()), daemon=True)
waiter.start()
time.sleep(0.1)  # the thread is in its wait (no timeout: only a change ends it)
print("pop", watch.pop(), flush=True)  # nothing pending, and at once
assert watch.wait(timeout=0.05) is False  # a second wait times out behind it
# The wait in flight still gets the change, and pop then takes it.
if sys.argv[1] == "lease":
    store.acquire("job", holder="a", ttl=120)
else:
    store.advance_counter("s", 2)
    store.put("s", "k", b"v", token=2)
    try:
        store.put("s", "k", b"v", token=1)
    except fencing.StaleTokenError:
        pass
waiter.join(30)
assert woke == [True], woke
item = watch.pop()
print("then", item.lease.holder if sys.argv[1] == "lease" else item["scope"], watch.pop(), flush=True)
"""


@pytest.mark.parametrize("kind", ["lease", "rejections"])
def test_pop_never_waits_for_a_wait_in_flight(kind: str) -> None:
    # pop takes the pending item without waiting: it must not queue behind
    # another thread's wait on the same watch (which, wanting the GIL that
    # pop holds to check for Ctrl-C, froze the interpreter). In a child
    # process, bounded: a hang fails the test instead of hanging it.
    try:
        done = subprocess.run(
            [sys.executable, "-c", POP_BESIDE_A_WAIT, kind],
            capture_output=True, text=True, timeout=BOUND,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"pop blocked on the wait in flight (the process froze): {e.stdout!r}")
    expected = "then a None" if kind == "lease" else "then s None"
    assert done.stdout.split("\n")[:2] == ["pop None", expected], (done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr


TWO_ASYNC_STEPS = r"""
import asyncio, fencing, fencing.aio

async def main() -> None:
    store = fencing.aio.Store(fencing.Store("memory:"))
    watch = await store.watch("job")
    assert (await watch.__anext__()).lease is None
    first = asyncio.ensure_future(watch.__anext__())
    await asyncio.sleep(0.1)  # its wait runs on its thread
    second = asyncio.ensure_future(watch.__anext__())  # pops on the loop
    await asyncio.sleep(0.1)
    lease = await store.acquire("job", holder="a", ttl=120)
    done, pending = await asyncio.wait({first, second}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    assert len(done) == 1 and len(pending) == 1, (done, pending)
    print("one", done.pop().result().lease.holder, flush=True)
    await store.release(lease)
    print("other", (await asyncio.wait_for(pending.pop(), 30)).lease, flush=True)

asyncio.run(main())
"""


def test_two_async_steps_of_one_watch_share_it_and_the_loop_runs() -> None:
    # fencing.aio pops on the event loop: a step begun while another's wait
    # runs on its thread must not block the loop; each change goes to one step.
    try:
        done = subprocess.run(
            [sys.executable, "-c", TWO_ASYNC_STEPS], capture_output=True, text=True, timeout=BOUND
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the event loop froze in pop: {e.stdout!r}")
    assert done.stdout.split("\n")[:2] == ["one a", "other None"], (done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
