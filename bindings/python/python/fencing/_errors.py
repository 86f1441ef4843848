"""The exception tree: ``FencingError`` and one subclass per stable code.

The native module raises these classes with the details of each outcome as
attributes, so callers never parse messages::

    try:
        store.put("report", "body", data, token=lease.token)
    except fencing.StaleTokenError as e:
        log.warning("fenced off: token %d, fence is at %d", e.presented, e.current)
"""

from __future__ import annotations

import builtins
from typing import ClassVar, Optional

__all__ = [
    "FencingError",
    "StaleTokenError",
    "SequenceOutOfOrderError",
    "SequenceError",
    "VersionMismatchError",
    "NotFoundError",
    "LeaseHeldError",
    "LeaseLostError",
    "TokenExhaustedError",
    "InvalidArgumentError",
    "TimeoutError",
    "BackendError",
    "ClosedError",
]


class FencingError(Exception):
    """Every error fencing raises. ``code`` is the stable code text
    (``"STALE_TOKEN"``, ...), the same in every language; the subclasses'
    names and attributes are the core's (docs/semantics.md, "Error codes")."""

    code: ClassVar[str] = ""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)

    @property
    def message(self) -> str:
        """The human-readable message (never parse it: use the attributes)."""
        return str(self.args[0]) if self.args else ""


class StaleTokenError(FencingError):
    """The presented token is older than the scope's fence (or equal to a
    sealed fence). A normal outcome for a paused holder; retrying with the
    same token can never succeed."""

    code: ClassVar[str] = "STALE_TOKEN"

    def __init__(
        self, message: str = "", *, scope: str = "", presented: int = 0, current: int = 0
    ) -> None:
        super().__init__(message)
        #: The scope whose fence refused the token.
        self.scope = scope
        #: The token the operation presented.
        self.presented = presented
        #: The scope's fence: the greatest token it has accepted.
        self.current = current


class SequenceOutOfOrderError(FencingError):
    """The write's ``seq`` is not after the last accepted seq of its token."""

    code: ClassVar[str] = "SEQUENCE_OUT_OF_ORDER"

    def __init__(self, message: str = "", *, presented: int = 0, last: int = 0) -> None:
        super().__init__(message)
        #: The seq the write presented.
        self.presented = presented
        #: The last seq accepted under the same token.
        self.last = last


class VersionMismatchError(FencingError):
    """The entry's version differs from ``expected_version``."""

    code: ClassVar[str] = "VERSION_MISMATCH"

    def __init__(self, message: str = "", *, expected: int = 0, actual: int = 0) -> None:
        super().__init__(message)
        #: The version the write expected (0: must not exist).
        self.expected = expected
        #: The entry's version (0: it does not exist).
        self.actual = actual


class NotFoundError(FencingError):
    """The entry to delete does not exist."""

    code: ClassVar[str] = "NOT_FOUND"

    def __init__(self, message: str = "", *, scope: str = "", key: str = "") -> None:
        super().__init__(message)
        #: The scope that was searched.
        self.scope = scope
        #: The missing key.
        self.key = key


class LeaseHeldError(FencingError):
    """Another lease on the scope is live (acquire, or retire)."""

    code: ClassVar[str] = "LEASE_HELD"

    def __init__(
        self,
        message: str = "",
        *,
        scope: str = "",
        holder: str = "",
        token: int = 0,
        remaining: float = 0.0,
    ) -> None:
        super().__init__(message)
        #: The scope whose lease is held.
        self.scope = scope
        #: Who holds it.
        self.holder = holder
        #: The holder's token.
        self.token = token
        #: Seconds left on the holder's lease, on the store's clock.
        self.remaining = remaining


class LeaseLostError(FencingError):
    """The lease is no longer the live one (renew, keep-alive). ``current_token``
    and ``current_holder`` name the lease that is live now, or are None."""

    code: ClassVar[str] = "LEASE_LOST"

    def __init__(
        self,
        message: str = "",
        *,
        scope: str = "",
        current_token: Optional[int] = None,
        current_holder: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        #: The scope of the lost lease.
        self.scope = scope
        #: The token of the lease that is live now, if any.
        self.current_token = current_token
        #: The holder of the lease that is live now, if any.
        self.current_holder = current_holder


#: The name ``SequenceOutOfOrderError`` had before 0.2; the same class.
SequenceError = SequenceOutOfOrderError


class TokenExhaustedError(FencingError):
    """The scope's counter is at MAX_TOKEN: tokens never wrap."""

    code: ClassVar[str] = "TOKEN_EXHAUSTED"


class InvalidArgumentError(FencingError, ValueError):
    """A bad argument: wrong type, token out of range, scope/key/holder/value
    size, ttl, URL, batch or page size. Also a ``ValueError``. Nothing changed."""

    code: ClassVar[str] = "INVALID_ARGUMENT"


class TimeoutError(FencingError, builtins.TimeoutError):
    """``acquire_wait`` ran out of time. Also the builtin ``TimeoutError``."""

    code: ClassVar[str] = "TIMEOUT"


class BackendError(FencingError):
    """I/O, database or connection failure; the message says which, and
    ``kind`` what a caller may conclude (docs/semantics.md, "Error codes")."""

    code: ClassVar[str] = "BACKEND"

    def __init__(self, message: str = "", *, kind: str = "other") -> None:
        super().__init__(message)
        #: How the backend failed: ``"busy"``, ``"timeout"``, ``"unreachable"``,
        #: ``"refused"``, ``"corrupt"``, ``"outcome_unknown"`` or ``"other"``
        #: (more may be added).
        self.kind = kind


class ClosedError(FencingError):
    """The store was closed."""

    code: ClassVar[str] = "CLOSED"


# Shown as fencing.StaleTokenError (where users import them from), not as
# fencing._errors.StaleTokenError, in tracebacks and reprs.
for _name in __all__:
    globals()[_name].__module__ = "fencing"  # the alias is the same class
del _name
