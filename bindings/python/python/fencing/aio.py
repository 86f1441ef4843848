"""The fencing API for asyncio.

Every method is a coroutine that runs the blocking call in a worker thread
(``asyncio.to_thread``), so a SQLite commit or an ``acquire_wait`` never
blocks the event loop; the native call releases the GIL meanwhile. Results
and exceptions are the same as in ``fencing``::

    import fencing.aio

    async def main() -> None:
        async with fencing.aio.open("sqlite:fence.db") as store:
            async with store.lease("report", holder="worker-a", ttl=30) as lease:
                await store.put("report", "body", b"...", token=lease.token)

``fencing.aio.open_objects(url)`` is ``fencing.open_objects`` (fenced
objects and files, docs/objects.md) in the same way.

Tasks may share one ``Store``. Calls run on the event loop's default executor,
except ``acquire_wait``, which waits on a thread of its own so that waiters
never starve the executor that the lease holder's calls need.

Cancelling a task: a call that takes a lease (``acquire``, ``acquire_wait``,
``lease``) leaves none behind (a wait stops within 20 ms and sends no further
acquire; a lease that arrived anyway is released at once); a
``RejectionWatch`` or ``LeaseWatch`` step stops its wait and loses nothing. Every other
call runs to its end on its thread: cancelling it is like losing its answer,
so its write may or may not have happened (docs/semantics.md, "Giving up a
call").
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import functools
import itertools
import threading
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Generator,
    Generic,
    Iterable,
    List,
    Optional,
    Protocol,
    Type,
    TypeVar,
    Union,
)

from . import _native
from ._errors import FencingError
from ._native import (
    Delete,
    Entry,
    EtcdCheck,
    Holding,
    Lease,
    Object,
    Page,
    Put,
    Receipt,
    ScopeStatus,
)

__all__ = [
    "KeepAlive",
    "LeaseWatch",
    "Objects",
    "ObjectsOpening",
    "Opening",
    "RejectionWatch",
    "Store",
    "migrate",
    "open",
    "open_objects",
]

Seconds = Union[float, datetime.timedelta]
Bytes = Union[bytes, bytearray, memoryview]

_T = TypeVar("_T")


async def _run(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """A short blocking call, on the loop's default executor."""
    return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))


def _batch(ops: Any) -> Any:
    """An ``apply`` call's operations, taken here (on the loop's thread, as
    a generator expects) but no further than one past ``MAX_BATCH_OPS``:
    an endless iterable is refused by the core's own check, not collected
    until the memory runs out. What is not an iterable at all (or is a
    ``str`` or bytes-like) goes on as it is, for the native call to refuse
    with the blocking face's InvalidArgumentError and message."""
    if isinstance(ops, (str, bytes, bytearray, memoryview)):
        return ops
    try:
        items = iter(ops)
    except TypeError:
        return ops
    return list(itertools.islice(items, _native.MAX_BATCH_OPS + 1))


_undoing: "set[threading.Thread]" = set()
_undoing_lock = threading.Lock()


def _undo_off_the_loop(undo: Callable[[_T], None], result: _T) -> None:
    """Runs ``undo`` (a blocking release) on a thread of its own, never on
    the event loop; not a daemon, so that the interpreter waits for it at
    exit and a lease nobody awaits is always released. A store's ``close``
    waits for these first (``_undone``): closed under a release, the
    release would fail and leave the lease held."""

    def run() -> None:
        try:
            undo(result)
        finally:
            with _undoing_lock:
                _undoing.discard(threading.current_thread())

    thread = threading.Thread(target=run, name="fencing-aio-undo", daemon=False)
    with _undoing_lock:
        _undoing.add(thread)
        thread.start()


def _undone() -> None:
    """Waits for every release of a lease nobody awaited still running."""
    with _undoing_lock:
        running = list(_undoing)
    for thread in running:
        thread.join()


async def _wait_for_lease(store: _native.Store, **kwargs: Any) -> Lease:
    """``acquire_wait`` on a thread of its own.

    A wait can last as long as its timeout: on the shared executor, a few
    waiters would take every worker thread and starve the calls of the task
    that holds the lease (its put and release), so nobody would ever get it.
    If the awaiting task is cancelled and the lease arrives anyway, it is
    released at once instead of being held until its ttl runs out.
    """
    cancel = _native.Cancel()
    return await _on_own_thread(
        functools.partial(store.acquire_wait, cancel=cancel, **kwargs),
        undo=lambda lease: _release_quietly(store, lease),
        on_cancel=cancel.fire,
    )


async def _on_own_thread(
    fn: Callable[[], _T], undo: Callable[[_T], None], on_cancel: Callable[[], None]
) -> _T:
    """A call that may wait long, on a thread of its own (see
    ``_wait_for_lease``); ``on_cancel`` stops it when the awaiting task is
    cancelled, and ``undo`` undoes its result if nobody awaits it any more."""
    return await _undoable(fn, undo, own_thread=True, on_cancel=on_cancel)


async def _taking_lease(fn: Callable[[], _T], undo: Callable[[_T], None]) -> _T:
    """A short call that takes a lease, on the loop's default executor; if
    the awaiting task is cancelled, a lease it took anyway is undone at once
    instead of being held until its ttl runs out."""
    return await _undoable(fn, undo, own_thread=False)


async def _undoable(
    fn: Callable[[], _T],
    undo: Callable[[_T], None],
    *,
    own_thread: bool,
    on_cancel: Optional[Callable[[], None]] = None,
) -> _T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(outcome: Callable[[], None]) -> bool:
        try:
            loop.call_soon_threadsafe(outcome)
        except RuntimeError:  # the loop is closed: nobody awaits any more
            return False
        return True

    def settle_result(result: _T) -> None:
        if future.cancelled():
            _undo_off_the_loop(undo, result)
        else:
            future.set_result(result)

    def settle_error(error: BaseException) -> None:
        if not future.cancelled():
            future.set_exception(error)

    def wait() -> None:
        try:
            result = context.run(fn)
        except BaseException as e:
            deliver(functools.partial(settle_error, e))
        else:
            if not deliver(functools.partial(settle_result, result)):
                undo(result)

    if own_thread:
        threading.Thread(target=wait, name="fencing-aio-acquire-wait", daemon=True).start()
    else:
        loop.run_in_executor(None, wait)
    try:
        return await future
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        # Cancelled after the result arrived but before the task resumed:
        # the result is here, and nobody will take it.
        if future.done() and not future.cancelled() and future.exception() is None:
            _undo_off_the_loop(undo, future.result())
        raise


def _release_quietly(store: _native.Store, lease: Lease) -> None:
    try:
        store.release(lease)
    except FencingError:
        pass


def _release_keeper(keeper: _native.KeepAlive) -> None:
    try:
        keeper.release()
    except FencingError:
        pass


class _Closing(Protocol):
    async def close(self) -> None: ...


_Handle = TypeVar("_Handle", bound=_Closing)


class _Opening(Generic[_Handle]):
    """Await it for the handle, or use it with ``async with`` to close the
    handle at the end of the block."""

    def __init__(self, opener: Callable[[], Awaitable[_Handle]]) -> None:
        self._opener = opener
        self._handle: Optional[_Handle] = None

    def __await__(self) -> Generator[Any, None, _Handle]:
        return self._opener().__await__()

    async def __aenter__(self) -> _Handle:
        self._handle = await self._opener()
        return self._handle

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        if self._handle is not None:
            await self._handle.close()
        return False


class Opening(_Opening["Store"]):
    """What ``open()`` returns: await it for a Store, or use it with
    ``async with`` to close the store at the end of the block."""

    def __init__(self, url: str) -> None:
        super().__init__(functools.partial(Store.open, url))


class ObjectsOpening(_Opening["Objects"]):
    """What ``open_objects()`` returns: await it for an Objects handle, or
    use it with ``async with`` to close the handle at the end of the block."""

    def __init__(self, url: str) -> None:
        super().__init__(functools.partial(Objects.open, url))


def open(url: str) -> Opening:
    """Opens the store a URL names (``memory:``, ``sqlite:PATH``,
    ``postgres://...``; docs/semantics.md, "URLs and options") off the event
    loop: ``store = await fencing.aio.open(url)``, or
    ``async with fencing.aio.open(url) as store:`` to close it at the end."""
    return Opening(url)


async def migrate(url: str) -> None:
    """Creates or upgrades the schema of the store a URL names, without
    opening a store (``fencing.migrate``), off the event loop; idempotent."""
    await _run(_native.migrate, url)


def open_objects(url: str) -> ObjectsOpening:
    """Opens the fenced objects a URL names (``memory:``, ``file:///DIR``,
    ``s3://BUCKET[/PREFIX]``, ``az://CONTAINER[/PREFIX]``; docs/objects.md) off the
    event loop:
    ``objects = await fencing.aio.open_objects(url)``, or
    ``async with fencing.aio.open_objects(url) as objects:`` to close it at
    the end."""
    return ObjectsOpening(url)


class KeepAlive:
    """``async with store.lease(...) as lease``: acquires on entry, renews in
    the background, releases at exit, and raises LeaseLostError at exit if the
    lease was lost. See ``fencing.KeepAlive``."""

    def __init__(self, keeper: _native.KeepAlive, cancel: Optional[_native.Cancel] = None) -> None:
        self._keeper = keeper
        # A lease that waits (timeout=) was given this flag: fired when the
        # entering task is cancelled, it stops the wait itself.
        self._cancel = cancel
        self._signalled: Optional[asyncio.Future[None]] = None
        self._waiters = 0

    @property
    def sync(self) -> _native.KeepAlive:
        """The underlying ``fencing.KeepAlive``."""
        return self._keeper

    async def __aenter__(self) -> KeepAlive:
        if self._cancel is not None:
            # A wait for the lease takes a thread of its own (_wait_for_lease).
            await _on_own_thread(
                self._keeper.__enter__, undo=_release_keeper, on_cancel=self._cancel.fire
            )
        else:
            await _taking_lease(self._keeper.__enter__, undo=_release_keeper)
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        return await _run(self._keeper.__exit__, exc_type, exc, tb)

    async def release(self) -> bool:
        """Stops renewing and releases now; True if held to the end, False if lost."""
        return await _run(self._keeper.release)

    def check(self) -> None:
        """Raises LeaseLostError if the lease was lost."""
        self._keeper.check()

    async def put(
        self, key: str, value: Bytes, *, expected_version: Optional[int] = None
    ) -> Receipt:
        """``Store.put`` in the lease's scope with the lease's token; raises the
        loss without writing when the lease is known lost."""
        return await _run(self._keeper.put, key, value, expected_version=expected_version)

    async def delete(self, key: str, *, expected_version: Optional[int] = None) -> Receipt:
        """``Store.delete`` in the lease's scope with the lease's token."""
        return await _run(self._keeper.delete, key, expected_version=expected_version)

    async def apply(self, ops: Iterable[Union[Put, Delete]]) -> List[Receipt]:
        """``Store.apply`` in the lease's scope with the lease's token."""
        return await _run(self._keeper.apply, _batch(ops))

    async def claim(self) -> None:
        """Raises the lease's scope's fence to the lease's token."""
        await _run(self._keeper.claim)

    async def get(self, key: str) -> Optional[Entry]:
        """``Store.get`` in the lease's scope, checked with the lease's token."""
        return await _run(self._keeper.get, key)

    @property
    def lost(self) -> bool:
        """Whether renewing failed for good."""
        return self._keeper.lost

    async def wait_lost(self) -> Optional[BaseException]:
        """Waits, without a thread, until the lease is lost or the keep-alive
        has ended: returns the loss (what ``lost_error`` holds, also for a
        loss found only at the end), or None when it ended held. Race it
        against the work: ``asyncio.wait({work, asyncio.create_task(lease.wait_lost())},
        return_when=FIRST_COMPLETED)``. Needs a loop with ``add_reader``
        (the default one on Unix; on Windows the selector loop)."""
        if not self._keeper.lost and self._keeper.active:
            loop = asyncio.get_running_loop()
            fd = self._keeper._loss_fd()
            if self._signalled is None:
                signalled: asyncio.Future[None] = loop.create_future()

                def readable() -> None:
                    if not signalled.done():
                        signalled.set_result(None)

                loop.add_reader(fd, readable)
                self._signalled, self._waiters = signalled, 0
            self._waiters += 1
            try:
                await asyncio.shield(self._signalled)
            finally:
                # The last waiter unregisters, so no reader outlives the waits
                # (the descriptor closes with the lease object).
                self._waiters -= 1
                if self._waiters == 0:
                    loop.remove_reader(fd)
                    self._signalled = None
        return self._keeper.lost_error

    @property
    def lost_error(self) -> Optional[BaseException]:
        """The LeaseLostError that ``check()`` would raise, or None."""
        return self._keeper.lost_error

    @property
    def active(self) -> bool:
        """Whether the lease is being kept alive now."""
        return self._keeper.active

    @property
    def lease(self) -> Lease:
        """The lease as last renewed."""
        return self._keeper.lease

    @property
    def token(self) -> int:
        """The fencing token to present with every write."""
        return self._keeper.token

    @property
    def scope(self) -> str:
        """The protected scope."""
        return self._keeper.scope

    @property
    def holder(self) -> str:
        """Who holds the lease."""
        return self._keeper.holder

    @property
    def expires_at(self) -> datetime.datetime:
        """When the lease expires unless renewed again (UTC)."""
        return self._keeper.expires_at

    @property
    def last_lateness(self) -> float:
        """How late the most recent renewal ran, in seconds."""
        return self._keeper.last_lateness

    def __repr__(self) -> str:
        return repr(self._keeper).replace("fencing.", "fencing.aio.", 1)


_Item = TypeVar("_Item", covariant=True)


class _Watch(Protocol[_Item]):
    """What both watches have: take what is pending, wait for more."""

    def pop(self) -> Optional[_Item]: ...

    def wait(self, timeout: Optional[float] = None, *, cancel: Optional[_native.Cancel] = None) -> bool: ...


async def _next_of(watch: _Watch[_T]) -> _T:
    """A watch's next item (``pop``), waiting for it (``wait``) on a thread
    of its own as often as it takes: a cancelled task fires the wait's
    flag, and nothing is lost, since the wait only waits."""
    while True:
        pending = watch.pop()
        if pending is not None:
            return pending
        cancel = _native.Cancel()
        await _on_own_thread(
            functools.partial(watch.wait, cancel=cancel),
            undo=lambda _: None,
            on_cancel=cancel.fire,
        )


class RejectionWatch:
    """Each rejection the store records from the moment the watch began,
    oldest first, as the dicts of ``events()``: ``async for r in watch``.
    Each wait runs on a thread of its own; a cancelled task stops it, and no
    rejection is lost (the wait only waits; the rejection is taken here). A
    store error (the store closed) is raised by the step that meets it."""

    def __init__(self, watch: _native.RejectionWatch) -> None:
        self._watch = watch

    @property
    def sync(self) -> _native.RejectionWatch:
        """The underlying ``fencing.RejectionWatch``."""
        return self._watch

    def __aiter__(self) -> RejectionWatch:
        return self

    async def __anext__(self) -> Dict[str, Any]:
        return await _next_of(self._watch)


class LeaseWatch:
    """Who holds a scope's lease: the lease as it is when the watch began,
    then after each change, as ``Holding`` values: ``async for h in watch``.
    Each wait runs on a thread of its own; a cancelled task stops it, and no
    change is lost (the wait only waits; the change is taken here). A store
    error (the store closed) is raised by the step that meets it."""

    def __init__(self, watch: _native.LeaseWatch) -> None:
        self._watch = watch

    @property
    def sync(self) -> _native.LeaseWatch:
        """The underlying ``fencing.LeaseWatch``."""
        return self._watch

    @property
    def scope(self) -> str:
        """The scope watched."""
        return self._watch.scope

    def __aiter__(self) -> LeaseWatch:
        return self

    async def __anext__(self) -> Holding:
        return await _next_of(self._watch)


class Store:
    """A ``fencing.Store`` for asyncio: the same methods, as coroutines.
    ``async with`` closes it."""

    def __init__(self, store: _native.Store) -> None:
        if not isinstance(store, _native.Store):
            raise TypeError(f"expected a fencing.Store, got {type(store).__qualname__}")
        self._store = store

    @classmethod
    async def open(cls, url: str) -> Store:
        """Opens the store a URL names, off the event loop."""
        return cls(await _run(_native.Store, url))

    @property
    def sync(self) -> _native.Store:
        """The underlying ``fencing.Store`` (for blocking code in threads)."""
        return self._store

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._store.closed

    @property
    def location(self) -> str:
        """Where the store is (``fencing.Store.location``)."""
        return self._store.location

    @property
    def backend_kind(self) -> str:
        """The kind of store (``fencing.Store.backend_kind``): ``"memory"``,
        ``"sqlite"``, ``"postgres"`` or ``"etcd"``."""
        return self._store.backend_kind

    def __repr__(self) -> str:
        return repr(self._store).replace("fencing.", "fencing.aio.", 1)

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        await self.close()
        return False

    async def close(self) -> None:
        """Closes the store, once the leases taken for cancelled calls are
        given back; later calls raise ClosedError."""
        await _run(_undone)
        await _run(self._store.close)

    async def next_token(self, scope: str) -> int:
        """Increments the scope's counter and returns the new token."""
        return await _run(self._store.next_token, scope)

    async def advance_counter(self, scope: str, floor: int) -> int:
        """Raises the scope's counter to at least ``floor``; returns the counter."""
        return await _run(self._store.advance_counter, scope, floor)

    async def acquire(self, scope: str, *, holder: str, ttl: Seconds) -> Lease:
        """Takes the scope's lease; LeaseHeldError while another is live. If
        the awaiting task is cancelled, a lease the call took anyway is
        released at once."""
        store = self._store
        return await _taking_lease(
            functools.partial(store.acquire, scope, holder=holder, ttl=ttl),
            undo=lambda lease: _release_quietly(store, lease),
        )

    async def acquire_wait(
        self, scope: str, *, holder: str, ttl: Seconds, timeout: Seconds
    ) -> Lease:
        """Waits until the lease is free or ``timeout`` passes (TimeoutError).
        The wait runs on a thread of its own, not on the loop's executor; if
        the awaiting task is cancelled, a lease that arrives anyway is
        released."""
        return await _wait_for_lease(
            self._store, scope=scope, holder=holder, ttl=ttl, timeout=timeout
        )

    async def renew(
        self,
        lease: Union[Lease, str],
        *,
        token: Optional[int] = None,
        ttl: Optional[Seconds] = None,
    ) -> Lease:
        """Extends a live lease; LeaseLostError if it is no longer live."""
        return await _run(self._store.renew, lease, token=token, ttl=ttl)

    async def release(self, lease: Union[Lease, str], *, token: Optional[int] = None) -> bool:
        """Ends a lease early if it is still live; returns whether it did."""
        return await _run(self._store.release, lease, token=token)

    def lease(
        self, scope: str, *, holder: str, ttl: Seconds, timeout: Optional[Seconds] = None
    ) -> KeepAlive:
        """``async with store.lease(...) as lease``: acquire (waiting up to
        ``timeout`` seconds when given), keep alive, release; a lease lost
        during the block raises the loss at exit."""
        if timeout is None:
            return KeepAlive(self._store.lease(scope, holder=holder, ttl=ttl))
        cancel = _native.Cancel()
        keeper = self._store.lease(scope, holder=holder, ttl=ttl, timeout=timeout, cancel=cancel)
        return KeepAlive(keeper, cancel)

    def keep_alive(self, lease: Lease) -> KeepAlive:
        """``async with store.keep_alive(lease)``: keep an acquired lease alive."""
        return KeepAlive(self._store.keep_alive(lease))

    async def put(
        self,
        scope: str,
        key: str,
        value: Bytes,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Stores ``value`` under ``key`` if ``token`` is not stale."""
        return await _run(
            self._store.put,
            scope,
            key,
            value,
            token=token,
            seq=seq,
            holder=holder,
            expected_version=expected_version,
        )

    async def delete(
        self,
        scope: str,
        key: str,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Deletes the entry under ``key`` if ``token`` is not stale."""
        return await _run(
            self._store.delete,
            scope,
            key,
            token=token,
            seq=seq,
            holder=holder,
            expected_version=expected_version,
        )

    async def apply(
        self,
        scope: str,
        ops: Iterable[Union[Put, Delete]],
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
    ) -> List[Receipt]:
        """Applies several puts and deletes under one check, all or nothing."""
        return await _run(self._store.apply, scope, _batch(ops), token=token, seq=seq, holder=holder)

    async def execute(
        self,
        scope: str,
        op: Union[Put, Delete],
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
    ) -> Receipt:
        """Runs one ``Put`` or ``Delete`` with the checks of ``put`` and ``delete``."""
        return await _run(self._store.execute, scope, op, token=token, seq=seq, holder=holder)

    async def claim(
        self, scope: str, *, token: int, seq: Optional[int] = None, holder: Optional[str] = None
    ) -> None:
        """Raises the scope's fence to ``token`` without writing."""
        await _run(self._store.claim, scope, token=token, seq=seq, holder=holder)

    async def etcd_check(
        self, scope: str, *, token: int, seq: Optional[int] = None, holder: Optional[str] = None
    ) -> EtcdCheck:
        """What one's own etcd transaction must compare and put to commit only
        while ``token`` is current (see ``fencing.Store.etcd_check``)."""
        return await _run(self._store.etcd_check, scope, token=token, seq=seq, holder=holder)

    async def get(
        self, scope: str, key: str, *, token: Optional[int] = None, holder: Optional[str] = None
    ) -> Optional[Entry]:
        """Reads an entry (None if missing); with ``token=``, checked like a write."""
        return await _run(self._store.get, scope, key, token=token, holder=holder)

    async def list(self, scope: str, *, after: Optional[str] = None, limit: Optional[int] = None) -> Page:
        """Up to ``limit`` keys (default ``DEFAULT_LIST_LIMIT``) after ``after``, in byte order."""
        return await _run(self._store.list, scope, after=after, limit=limit)

    async def fence_of(self, scope: str) -> int:
        """The greatest token the scope has accepted (0: none)."""
        return await _run(self._store.fence_of, scope)

    async def status(self, scope: str) -> ScopeStatus:
        """The scope's counter, fence, live lease and number of entries."""
        return await _run(self._store.status, scope)

    async def failover(self) -> int:
        """The failover step (see ``Store.failover``); the base, every token at or below it stale."""
        return await _run(self._store.failover)

    async def retire(self, scope: str) -> bool:
        """Drops a scope with no live lease and no entries."""
        return await _run(self._store.retire, scope)

    async def advance_clock(self, by: Seconds) -> None:
        """Moves a manual clock forward (``?clock=manual``)."""
        await _run(self._store.advance_clock, by)

    async def ping(self) -> None:
        """One cheap round trip that changes nothing (see ``Store.ping``)."""
        await _run(self._store.ping)

    async def metrics(self) -> Dict[str, Any]:
        """This handle's counters and recent rejections."""
        return await _run(self._store.metrics)

    async def metrics_text(self) -> str:
        """The counters in the Prometheus text format."""
        return await _run(self._store.metrics_text)

    async def events(self, scope: Optional[str] = None, *, limit: int = 20) -> Dict[str, Any]:
        """The store's own record of recent rejections and last writes."""
        return await _run(self._store.events, scope, limit=limit)

    async def watch_rejections(self, scope: Optional[str] = None) -> RejectionWatch:
        """``async for r in await store.watch_rejections():`` each rejection
        the store records from now on, oldest first (see ``RejectionWatch``)."""
        return RejectionWatch(await _run(self._store.watch_rejections, scope))

    async def watch(self, scope: str) -> LeaseWatch:
        """``async for h in await store.watch(scope):`` who holds the
        scope's lease, now and after each change (see ``LeaseWatch``)."""
        return LeaseWatch(await _run(self._store.watch, scope))


class Objects:
    """A ``fencing.Objects`` for asyncio: the same methods, as coroutines.
    ``async with`` closes it."""

    def __init__(self, objects: _native.Objects) -> None:
        if not isinstance(objects, _native.Objects):
            raise TypeError(f"expected a fencing.Objects, got {type(objects).__qualname__}")
        self._objects = objects

    @classmethod
    async def open(cls, url: str) -> Objects:
        """Opens the fenced objects a URL names, off the event loop."""
        return cls(await _run(_native.Objects, url))

    @property
    def sync(self) -> _native.Objects:
        """The underlying ``fencing.Objects`` (for blocking code in threads)."""
        return self._objects

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._objects.closed

    def __repr__(self) -> str:
        return repr(self._objects).replace("fencing.", "fencing.aio.", 1)

    async def __aenter__(self) -> Objects:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        await self.close()
        return False

    async def close(self) -> None:
        """Closes the handle; later calls raise ClosedError."""
        await _run(self._objects.close)

    async def put(
        self,
        path: str,
        value: Bytes,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Writes ``value`` as the object at ``path`` if ``token`` is not stale."""
        return await _run(
            self._objects.put,
            path,
            value,
            token=token,
            seq=seq,
            holder=holder,
            expected_version=expected_version,
        )

    async def delete(
        self,
        path: str,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Deletes the object at ``path`` if ``token`` is not stale."""
        return await _run(
            self._objects.delete,
            path,
            token=token,
            seq=seq,
            holder=holder,
            expected_version=expected_version,
        )

    async def get(self, path: str) -> Optional[Object]:
        """Reads the object at ``path`` (None if there is none)."""
        return await _run(self._objects.get, path)
