"""Type stubs of the native module (hand-written; checked against the real
module by ``python -m mypy.stubtest fencing`` in CI)."""

import builtins
import datetime
from types import TracebackType
from typing import Any, Dict, Final, Iterable, List, Optional, Type, Union, final, overload

from typing_extensions import Self

from ._errors import FencingError

__all__ = [
    "KeepAlive",
    "error_from_sqlite_message",
    "error_from_sqlstate",
    "open",
    "parse_token",
    "Store",
    "Delete",
    "Entry",
    "Lease",
    "Page",
    "Put",
    "Receipt",
    "ScopeStatus",
    "MAX_TOKEN",
    "FAILOVER_STEP",
    "MAX_SCOPE_BYTES",
    "MAX_HOLDER_BYTES",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "MAX_BATCH_OPS",
    "MAX_LIST_LIMIT",
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

def open(url: str) -> Store:
    """Opens the store a URL names (``memory:``, ``sqlite:PATH``); the same as
    ``Store(url)``."""

def parse_token(text: str) -> int:
    """Parses a token's canonical decimal text (``"42"`` -> 42)."""

def error_from_sqlstate(sqlstate: str, detail: Optional[str] = None) -> Optional[FencingError]:
    """The fencing exception a PostgreSQL error's SQLSTATE (``"FN001"``) and
    DETAIL (JSON) describe, or None for a SQLSTATE that is not fencing's."""

def error_from_sqlite_message(message: str) -> Optional[FencingError]:
    """The fencing exception an SQLite error message stands for when the
    ``fencing_check`` view raised it (``"STALE_TOKEN: ..."``):
    ``StaleTokenError``, ``SequenceError`` or ``InvalidArgumentError``, with
    neutral details (the message carries none); None for any other message.
    Returned, not raised."""

@final
class Lease:
    """A lease: permission with a deadline."""

    @property
    def scope(self) -> str: ...
    @property
    def holder(self) -> str: ...
    @property
    def token(self) -> int: ...
    @property
    def ttl(self) -> float: ...
    @property
    def remaining(self) -> float: ...
    @property
    def expires_at(self) -> datetime.datetime: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Receipt:
    """The outcome of one accepted put or delete."""

    @property
    def version(self) -> int: ...
    @property
    def token(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __hash__(self, /) -> int: ...

@final
class Entry:
    """A stored value and the generation that wrote it."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> bytes: ...
    @property
    def version(self) -> int: ...
    @property
    def token(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...

@final
class Page:
    """One page of a scope's keys, in byte order."""

    @property
    def keys(self) -> List[str]: ...
    @property
    def next(self) -> Optional[str]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class ScopeStatus:
    """Everything known about one scope, for operators."""

    @property
    def counter(self) -> int: ...
    @property
    def fence(self) -> int: ...
    @property
    def entries(self) -> int: ...
    @property
    def lease(self) -> Optional[Lease]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Put:
    """Store ``value`` under ``key``: one operation of a ``Store.apply`` batch."""

    def __new__(
        cls, key: str, value: _Bytes, *, expected_version: Optional[int] = None
    ) -> Self: ...
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> bytes: ...
    @property
    def expected_version(self) -> Optional[int]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Delete:
    """Delete the entry under ``key``: one operation of a ``Store.apply`` batch."""

    def __new__(cls, key: str, *, expected_version: Optional[int] = None) -> Self: ...
    @property
    def key(self) -> str: ...
    @property
    def expected_version(self) -> Optional[int]: ...
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
    def release(self) -> bool: ...
    def check(self) -> None: ...
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
    def lost(self) -> bool: ...
    @property
    def lost_error(self) -> Optional[BaseException]: ...
    @property
    def active(self) -> bool: ...
    @property
    def lease(self) -> Lease: ...
    @property
    def token(self) -> int: ...
    @property
    def scope(self) -> str: ...
    @property
    def holder(self) -> str: ...
    @property
    def expires_at(self) -> datetime.datetime: ...
    @property
    def last_lateness(self) -> float: ...

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
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def next_token(self, scope: str) -> int: ...
    def advance_counter(self, scope: str, floor: int) -> int: ...
    def acquire(self, scope: str, *, holder: str, ttl: _Seconds) -> Lease: ...
    def acquire_wait(
        self, scope: str, *, holder: str, ttl: _Seconds, timeout: _Seconds
    ) -> Lease: ...
    @overload
    def renew(self, lease: Lease, *, token: None = None, ttl: Optional[_Seconds] = None) -> Lease: ...
    @overload
    def renew(self, lease: str, *, token: int, ttl: _Seconds) -> Lease: ...
    @overload
    def release(self, lease: Lease, *, token: None = None) -> bool: ...
    @overload
    def release(self, lease: str, *, token: int) -> bool: ...
    def lease(
        self, scope: str, *, holder: str, ttl: _Seconds, timeout: Optional[_Seconds] = None
    ) -> KeepAlive: ...
    def keep_alive(self, lease: Lease) -> KeepAlive: ...
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
    ) -> Receipt: ...
    def delete(
        self,
        scope: str,
        key: str,
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
        expected_version: Optional[int] = None,
    ) -> Receipt: ...
    def apply(
        self,
        scope: str,
        ops: Iterable[Union[Put, Delete]],
        *,
        token: int,
        seq: Optional[int] = None,
        holder: Optional[str] = None,
    ) -> builtins.list[Receipt]: ...
    def claim(
        self, scope: str, *, token: int, seq: Optional[int] = None, holder: Optional[str] = None
    ) -> None: ...
    def get(
        self, scope: str, key: str, *, token: Optional[int] = None, holder: Optional[str] = None
    ) -> Optional[Entry]: ...
    def list(self, scope: str, *, after: Optional[str] = None, limit: int = 100) -> Page: ...
    def fence_of(self, scope: str) -> int: ...
    def status(self, scope: str) -> ScopeStatus: ...
    def retire(self, scope: str) -> bool: ...
    def failover(self) -> int: ...
    def advance_clock(self, by: _Seconds) -> None: ...
    def metrics(self) -> Dict[str, Any]: ...
    def metrics_text(self) -> str: ...
