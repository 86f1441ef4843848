"""Type stubs of the native module (hand-written; checked against the real
module by ``python -m mypy.stubtest fencing`` in CI)."""

import builtins
import datetime
from types import TracebackType
from typing import Any, Dict, Final, Iterable, List, Optional, Tuple, Type, Union, final, overload

from typing_extensions import Self

from ._errors import FencingError

__all__ = [
    "Cancel",
    "KeepAlive",
    "error_schema",
    "reset_log_cache",
    "error_from_sqlite_message",
    "error_from_sqlstate",
    "migrate",
    "open",
    "open_objects",
    "parse_token",
    "Store",
    "Objects",
    "Object",
    "Delete",
    "Entry",
    "EtcdCheck",
    "Lease",
    "Page",
    "Put",
    "Receipt",
    "ScopeStatus",
    "RejectionWatch",
    "Holding",
    "LeaseWatch",
    "MAX_TOKEN",
    "FAILOVER_STEP",
    "MAX_SCOPE_BYTES",
    "MAX_HOLDER_BYTES",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "MAX_BATCH_OPS",
    "MAX_LIST_LIMIT",
    "DEFAULT_LIST_LIMIT",
    "__version__",
]

_Seconds = Union[float, datetime.timedelta]
_Bytes = Union[bytes, bytearray, memoryview]

__version__: Final[str]
MAX_TOKEN: Final[int]
FAILOVER_STEP: Final[int]
MAX_SCOPE_BYTES: Final[int]
MAX_HOLDER_BYTES: Final[int]
MAX_KEY_BYTES: Final[int]
MAX_VALUE_BYTES: Final[int]
MAX_BATCH_OPS: Final[int]
MAX_LIST_LIMIT: Final[int]
DEFAULT_LIST_LIMIT: Final[int]

def open(url: str) -> Store:
    """Opens the store a URL names (``memory:``, ``sqlite:PATH``,
    ``postgres://...``; docs/semantics.md, "URLs and options"); the same as
    ``Store(url)``."""

def open_objects(url: str) -> Objects:
    """Opens the fenced objects a URL names (``memory:``, ``file:///DIR``,
    ``s3://BUCKET[/PREFIX]``, ``az://CONTAINER[/PREFIX]``; docs/objects.md); the same as
    ``Objects(url)``."""

def migrate(url: str) -> None:
    """Creates or upgrades the schema of the store a URL names, without
    opening a store; idempotent."""

def parse_token(text: str) -> int:
    """Parses a token's canonical decimal text (``"42"`` -> 42)."""

def reset_log_cache() -> None:
    """Makes fencing read the levels of the ``logging`` logger ``"fencing"``
    again: it caches them when it first logs, so call this after changing
    the ``logging`` configuration later than that."""

def error_schema() -> List[Tuple[str, str, List[Tuple[str, str]]]]:
    """The core's error codes and their details, from which the exceptions'
    classes and attributes follow: ``[(code, class name, [(attribute,
    kind), ...]), ...]``, kind one of ``"text"``, ``"number"``,
    ``"duration"`` (seconds), ``"optional_number"``, ``"optional_text"``."""

def error_from_sqlstate(sqlstate: str, detail: Optional[str] = None) -> Optional[FencingError]:
    """The fencing exception a PostgreSQL error's SQLSTATE (``"FN001"``) and
    DETAIL (JSON) describe, or None for a SQLSTATE that is not fencing's."""

def error_from_sqlite_message(message: str) -> Optional[FencingError]:
    """The fencing exception an SQLite error message stands for when the
    ``fencing_check`` view raised it (``"STALE_TOKEN: ..."``):
    ``StaleTokenError``, ``SequenceOutOfOrderError`` or ``InvalidArgumentError``, whose
    details are None (the message carries none); None for any other message.
    Returned, not raised."""

@final
class Cancel:
    """A flag to give up waits: ``store.acquire_wait(..., cancel=flag)`` ends with
    TimeoutError and no lease within about 20 ms of ``flag.fire()``, from any thread. It
    stays fired; one flag may serve many waits."""

    def __new__(cls) -> Self: ...
    def fire(self) -> None:
        """Gives up every wait this flag was given."""
    @property
    def fired(self) -> bool:
        """Whether ``fire`` was called."""

@final
class RejectionWatch:
    """Each rejection the store records from the moment the watch began, oldest first, as the
    dicts of ``Store.events()``. Iterating blocks until the next (Ctrl-C ends it); after a store
    error iteration ends. ``wait`` and ``pop`` split a step in two."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> Dict[str, Any]: ...
    def wait(self, timeout: Optional[_Seconds] = None, *, cancel: Optional[Cancel] = None) -> bool:
        """Waits until a rejection is pending, ``timeout`` seconds pass (None: no limit) or
        ``cancel`` is fired; returns whether one is pending."""
    def pop(self) -> Optional[Dict[str, Any]]:
        """The oldest pending rejection, or None, without waiting."""

@final
class Holding:
    """A scope's lease as a watch saw it (``Store.watch``)."""

    @property
    def scope(self) -> str:
        """The scope watched."""
    @property
    def lease(self) -> Optional[Lease]:
        """The live lease, or None (never taken, released, expired, or ended by a failover
        step)."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class LeaseWatch:
    """Who holds a scope's lease: the lease as it is when the watch begins, then after each
    change (acquired, renewed, released, expired), in order, as ``Holding`` values. Iterating
    blocks until the next change (Ctrl-C ends it); after a store error iteration ends. ``wait``
    and ``pop`` split a step in two."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> Holding: ...
    def wait(self, timeout: Optional[_Seconds] = None, *, cancel: Optional[Cancel] = None) -> bool:
        """Waits until a change is pending, ``timeout`` seconds pass (None: no limit) or
        ``cancel`` is fired; returns whether one is pending."""
    def pop(self) -> Optional[Holding]:
        """The pending ``Holding``, or None, without waiting."""
    @property
    def scope(self) -> str:
        """The scope watched."""

@final
class Lease:
    """A lease: permission with a deadline."""

    @property
    def scope(self) -> str:
        """The scope the lease is on."""
    @property
    def holder(self) -> str:
        """Who holds it (a label for people; the token is what counts)."""
    @property
    def token(self) -> int:
        """The lease's fencing token: present it with every write."""
    @property
    def ttl(self) -> float:
        """The lease's time to live, in seconds."""
    @property
    def remaining(self) -> float:
        """Seconds left when the store answered, on the store's own clock."""
    @property
    def expires_at(self) -> datetime.datetime:
        """When it expires, on the store's clock (never compare with this host's clock)."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Receipt:
    """The outcome of one accepted put or delete."""

    @property
    def version(self) -> int:
        """The entry's version after the write (0 after a delete)."""
    @property
    def token(self) -> int:
        """The token the write presented."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __hash__(self, /) -> int: ...

@final
class Entry:
    """A stored value and the generation that wrote it."""

    @property
    def key(self) -> str:
        """The entry's key."""
    @property
    def value(self) -> bytes:
        """The stored bytes."""
    @property
    def version(self) -> int:
        """1 when created, one more with every put."""
    @property
    def token(self) -> int:
        """The token of the write that stored it."""
    def __eq__(self, other: object, /) -> bool: ...

@final
class EtcdCheck:
    """What one's own etcd transaction must compare and put so that it commits only while the
    token is current (``Store.etcd_check``; docs/etcd.md, "Fence your own etcd keys"). If that
    transaction fails on these comparisons, the scope changed meanwhile: check again."""

    @property
    def unchanged(self) -> builtins.list[Tuple[bytes, int]]:
        """Each key with the mod revision it must still have (0: still absent)."""
    @property
    def puts(self) -> builtins.list[Tuple[bytes, bytes]]:
        """The keys and values to put in the same transaction: the scope's record with the
        fence raised to the token."""
    @property
    def gateway_json(self) -> str:
        """The same as a body for etcd's JSON gateway (``POST /v3/kv/txn``):
        ``{"compare": [...], "success": [...]}``, keys and values in base64; add one's own
        comparisons and requests to the lists."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Object:
    """A fenced object as read (``Objects.get``): its bytes, and the token and version of the
    write that stored them."""

    @property
    def value(self) -> bytes:
        """The stored bytes."""
    @property
    def version(self) -> int:
        """Grows with every write of the path, deletes included; never reused."""
    @property
    def token(self) -> int:
        """The token of the write that stored these bytes."""
    def __eq__(self, other: object, /) -> bool: ...

@final
class Page:
    """One page of a scope's keys, in byte order."""

    @property
    def keys(self) -> List[str]:
        """The keys of this page, in byte order."""
    @property
    def next(self) -> Optional[str]:
        """Pass as ``after`` for the next page; None on the last page."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class ScopeStatus:
    """Everything known about one scope, for operators."""

    @property
    def counter(self) -> int:
        """The last token the scope issued (0: none)."""
    @property
    def fence(self) -> int:
        """The greatest token the scope has accepted (0: none)."""
    @property
    def entries(self) -> int:
        """How many entries the scope holds."""
    @property
    def lease(self) -> Optional[Lease]:
        """The live lease, or None."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Put:
    """Store ``value`` under ``key``: one operation of a ``Store.apply`` batch, or the one of
    ``Store.execute``."""

    def __new__(
        cls, key: str, value: _Bytes, *, expected_version: Optional[int] = None
    ) -> Self: ...
    @property
    def key(self) -> str:
        """The key to write."""
    @property
    def value(self) -> bytes:
        """The bytes to store."""
    @property
    def expected_version(self) -> Optional[int]:
        """The version the entry must have (0: must not exist), or None."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Delete:
    """Delete the entry under ``key``: one operation of a ``Store.apply`` batch, or the one of
    ``Store.execute``."""

    def __new__(cls, key: str, *, expected_version: Optional[int] = None) -> Self: ...
    @property
    def key(self) -> str:
        """The key to delete."""
    @property
    def expected_version(self) -> Optional[int]:
        """The version the entry must have, or None."""
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class KeepAlive:
    """Holds a lease while a ``with`` block runs: renews it in the background
    and releases it at exit; a lost lease raises LeaseLostError at exit."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def release(self) -> bool:
        """Stops renewing and releases the lease: True when it was held to the end, False when
        it was lost; raises ClosedError (or the backend's error) when that cannot be told."""
    def check(self) -> None:
        """Raises the error that ended the lease (LeaseLostError, ...) if it is gone."""
    def put(self, key: str, value: _Bytes, *, expected_version: Optional[int] = None) -> Receipt:
        """``Store.put`` in the lease's scope with the lease's token; raises the
        loss without writing when the lease is known lost."""
    def delete(self, key: str, *, expected_version: Optional[int] = None) -> Receipt:
        """``Store.delete`` in the lease's scope with the lease's token."""
    def apply(self, ops: Iterable[Union[Put, Delete]]) -> builtins.list[Receipt]:
        """``Store.apply`` in the lease's scope with the lease's token."""
    def claim(self) -> None:
        """Raises the lease's scope's fence to the lease's token."""
    def get(self, key: str) -> Optional[Entry]:
        """``Store.get`` in the lease's scope, checked with the lease's token."""
    def _loss_fd(self) -> int:
        """Readable once the lease is lost or the keep-alive ended (for fencing.aio)."""
    @property
    def lost(self) -> bool:
        """Whether the lease is lost (or may be: its deadline passed)."""
    @property
    def lost_error(self) -> Optional[BaseException]:
        """The error that ended the lease, or None while it is held."""
    @property
    def active(self) -> bool:
        """Whether the lease is still being held and renewed."""
    @property
    def lease(self) -> Lease:
        """The lease as last renewed."""
    @property
    def token(self) -> int:
        """The lease's token: present it with every write."""
    @property
    def scope(self) -> str:
        """The scope the lease is on."""
    @property
    def holder(self) -> str:
        """Who holds it."""
    @property
    def expires_at(self) -> datetime.datetime:
        """When the lease as last renewed expires, on the store's clock."""
    @property
    def last_lateness(self) -> float:
        """How late the last renewal ran behind its schedule, in seconds (a pause shows here)."""

@final
class Store:
    """A handle on one fencing store, opened from a URL."""

    def __new__(cls, url: str) -> Self: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def close(self) -> None:
        """Closes the store; later calls on it (and on every clone) raise ClosedError."""
    @property
    def closed(self) -> bool:
        """Whether the store was closed."""
    @property
    def location(self) -> str:
        """Where the store is: ``memory:``; ``sqlite:`` and the file's absolute
        path (a relative path as this process resolved it at open); or the
        PostgreSQL URL without its query and its password. For logs."""
    @property
    def backend_kind(self) -> str:
        """The kind of store: ``"memory"``, ``"sqlite"``, ``"postgres"`` or ``"etcd"``."""
    def next_token(self, scope: str) -> int:
        """Issues the scope's next token (strictly greater than every earlier one)."""
    def advance_counter(self, scope: str, floor: int) -> int:
        """Raises the scope's counter to at least ``floor`` (never lowers it); returns the counter."""
    def acquire(self, scope: str, *, holder: str, ttl: _Seconds) -> Lease:
        """Takes the scope's lease with a new token; LeaseHeldError while another lease is live."""
    def acquire_wait(
        self,
        scope: str,
        *,
        holder: str,
        ttl: _Seconds,
        timeout: _Seconds,
        cancel: Optional[Cancel] = None,
    ) -> Lease:
        """Like ``acquire``, but waits up to ``timeout`` seconds for a live lease to end;
        TimeoutError after, or once ``cancel`` is fired (no lease taken). Ctrl-C ends it
        with KeyboardInterrupt."""
    @overload
    def renew(self, lease: Lease, *, token: None = None, ttl: Optional[_Seconds] = None) -> Lease:
        """Extends a lease by ``ttl`` from now (default: the lease's own ttl), only while it is the
        live lease; else LeaseLostError naming the current one. By scope, ``token=`` and
        ``ttl=`` are required."""
    @overload
    def renew(self, lease: str, *, token: int, ttl: _Seconds) -> Lease:
        """Extends a lease by ``ttl`` from now (default: the lease's own ttl), only while it is the
        live lease; else LeaseLostError naming the current one. By scope, ``token=`` and
        ``ttl=`` are required."""
    @overload
    def release(self, lease: Lease, *, token: None = None) -> bool:
        """Ends a lease early if it is still live; returns whether it did. Never touches a newer
        lease."""
    @overload
    def release(self, lease: str, *, token: int) -> bool:
        """Ends a lease early if it is still live; returns whether it did. Never touches a newer
        lease."""
    def lease(
        self,
        scope: str,
        *,
        holder: str,
        ttl: _Seconds,
        timeout: Optional[_Seconds] = None,
        cancel: Optional[Cancel] = None,
    ) -> KeepAlive:
        """Acquires the lease (waiting up to ``timeout`` seconds for a live one to end, like
        ``acquire_wait``, ``cancel`` and Ctrl-C included) and keeps it alive in the background
        while a ``with`` block runs (renewed about every ttl/3); ended at exit as
        docs/semantics.md "Ending a held lease" says."""
    def keep_alive(self, lease: Lease) -> KeepAlive:
        """Keeps an already acquired lease alive in the background, like ``lease``."""
    def put(
        self,
        scope: str,
        key: str,
        value: _Bytes,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Writes ``value`` under ``key`` if ``token`` passes the scope's fence (StaleTokenError
        otherwise), and ``seq``/``expected_version`` their checks."""
    def delete(
        self,
        scope: str,
        key: str,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Deletes the entry under ``key``, checked like ``put``; NotFoundError when it does not
        exist."""
    def apply(
        self,
        scope: str,
        ops: Iterable[Union[Put, Delete]],
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
    ) -> builtins.list[Receipt]:
        """Applies every operation of the batch or none, behind one fence check; one receipt per
        operation."""
    def execute(
        self,
        scope: str,
        op: Union[Put, Delete],
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
    ) -> Receipt:
        """Runs one operation (as ``apply`` takes them) with the checks of ``put`` and
        ``delete``; its receipt."""
    def claim(
        self, scope: str, *, token: int, seq: Optional[int] = None, holder: Optional[str] = None
    ) -> None:
        """Raises the scope's fence to ``token`` without writing (StaleTokenError if it is older)."""
    def etcd_check(
        self, scope: str, *, token: int, seq: Optional[int] = None, holder: Optional[str] = None
    ) -> EtcdCheck:
        """Checks ``token`` against the scope's fence now (StaleTokenError as a write would) and
        says what one's own etcd transaction must compare and put to commit only while the token
        is current (docs/etcd.md, "Fence your own etcd keys"). InvalidArgumentError on a store
        that is not ``etcd://``."""
    def get(
        self, scope: str, key: str, *, token: Optional[int] = None, holder: Optional[str] = None
    ) -> Optional[Entry]:
        """Reads an entry (None if missing); with ``token=``, checked like a write first."""
    def list(self, scope: str, *, after: Optional[str] = None, limit: Optional[int] = None) -> Page:
        """Up to ``limit`` keys (default ``DEFAULT_LIST_LIMIT``) after ``after``, in byte order;
        pass the page's ``next`` as ``after`` for the following page."""
    def fence_of(self, scope: str) -> int:
        """The greatest token the scope has accepted (0: none)."""
    def status(self, scope: str) -> ScopeStatus:
        """The scope's counter, fence, entry count and live lease."""
    def retire(self, scope: str) -> bool:
        """Drops a scope that has no live lease and no entries; a scope created afterwards
        starts above every token this one issued or accepted. Returns whether there was
        state to drop."""
    def failover(self) -> int:
        """The failover step, once on a new primary promoted from an asynchronous standby
        (or a restored backup): every counter, fence and floor moves to ``FAILOVER_STEP`` above
        the store's ceiling (above every value the store held) and every lease ends. Returns
        that base: every token at or below it is stale."""
    def advance_clock(self, by: _Seconds) -> None:
        """Moves a manual clock (``?clock=manual``) forward by ``by`` seconds; for tests."""
    def ping(self) -> None:
        """One cheap round trip that changes nothing, for health checks: returns while the
        store answers and its schema is this build's. ``ClosedError`` once closed;
        ``BackendError`` when unreachable, or (kind ``refused``) when its schema is older (run
        ``fencing migrate``) or newer."""
    def metrics(self) -> Dict[str, Any]:
        """The handle's counters, its last rejections (``rejections``) and its call durations per
        operation (``call_durations``: ``buckets`` as cumulative ``(upper bound in seconds,
        calls)``, ``count``, ``sum`` in seconds), as a dict."""
    def metrics_text(self) -> str:
        """The handle's metrics in the Prometheus text format."""
    def watch_rejections(self, scope: Optional[str] = None) -> RejectionWatch:
        """Each rejection the store records from now on (of ``scope``, or of every scope),
        oldest first, as ``events()`` gives them; ``for r in store.watch_rejections()`` blocks
        until the next (Ctrl-C ends it)."""
    def watch(self, scope: str) -> LeaseWatch:
        """Who holds ``scope``'s lease, live: the lease as it is now, then after each change
        (acquired, renewed, released, expired), as ``Holding`` values; ``for h in
        store.watch(scope)`` blocks until the next change (Ctrl-C ends it)."""
    def events(self, scope: Optional[str] = None, *, limit: int = 20) -> Dict[str, Any]:
        """The store's own record (docs/operations.md): recent recorded rejections and the last
        writer of each scope (of ``scope`` only, if given), newest first, at most ``limit`` of
        each. Written by every process that uses the store; never holds values."""

@final
class Objects:
    """Fenced objects on the store a URL names (``memory:``, ``file:///DIR``,
    ``s3://BUCKET[/PREFIX]``, ``az://CONTAINER[/PREFIX]``; docs/objects.md): each object path
    remembers the greatest token
    accepted for it."""

    def __new__(cls, url: str) -> Self: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def close(self) -> None:
        """Closes the handle; later calls on it raise ClosedError."""
    @property
    def closed(self) -> bool:
        """Whether the handle was closed."""
    def put(
        self,
        path: str,
        value: _Bytes,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Writes ``value`` as the object at ``path`` if ``token`` passes the path's fence
        (StaleTokenError otherwise), and ``seq``/``expected_version`` their checks."""
    def delete(
        self,
        path: str,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt:
        """Deletes the object at ``path``, checked like ``put``; NotFoundError when there is
        none. The path keeps its fence."""
    def get(self, path: str) -> Optional[Object]:
        """Reads the object at ``path`` (None if there is none)."""
