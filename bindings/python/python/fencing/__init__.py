"""Fencing tokens, leases and a fenced store.

A lease holder can pause (GC, VM suspend, a slow network) past its expiry and
wake up still believing it owns the resource. Fencing closes that hole at the
resource: every acquisition gets a strictly increasing token, every protected
write carries it, and the store atomically rejects a token older than the
greatest it has accepted::

    import fencing

    with fencing.open("sqlite:fence.db") as store:
        with store.lease("report", holder="worker-a", ttl=30) as lease:
            store.put("report", "body", b"...", token=lease.token)

The work is done by the Rust core (``fencing._native``); the GIL is released
during every call, so threads share one ``Store``. ``fencing.aio`` offers the
same API to asyncio code.

The core logs to the standard ``logging`` module, logger ``"fencing"``: a
WARNING for every stale rejection, lost lease, failed renewal and failover
step, DEBUG for normal operation (docs/operations.md, "Logs").
"""

from __future__ import annotations

from ._errors import (
    BackendError,
    ClosedError,
    FencingError,
    InvalidArgumentError,
    LeaseHeldError,
    LeaseLostError,
    NotFoundError,
    SequenceError,
    SequenceOutOfOrderError,
    StaleTokenError,
    TimeoutError,
    TokenExhaustedError,
    VersionMismatchError,
)
from ._native import (
    DEFAULT_LIST_LIMIT,
    FAILOVER_STEP,
    MAX_BATCH_OPS,
    MAX_HOLDER_BYTES,
    MAX_KEY_BYTES,
    MAX_LIST_LIMIT,
    MAX_SCOPE_BYTES,
    MAX_TOKEN,
    MAX_VALUE_BYTES,
    Cancel,
    Delete,
    Entry,
    EtcdCheck,
    Holding,
    KeepAlive,
    Lease,
    LeaseWatch,
    Object,
    Objects,
    Page,
    Put,
    Receipt,
    RejectionWatch,
    ScopeStatus,
    Store,
    __version__,
    error_from_sqlite_message,
    error_from_sqlstate,
    migrate,
    open,
    open_objects,
    parse_token,
    reset_log_cache,
)
from ._postgres import from_postgres_error
from ._sqlite import from_sqlite_error

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "MAX_BATCH_OPS",
    "MAX_HOLDER_BYTES",
    "MAX_KEY_BYTES",
    "MAX_LIST_LIMIT",
    "MAX_SCOPE_BYTES",
    "MAX_TOKEN",
    "FAILOVER_STEP",
    "MAX_VALUE_BYTES",
    "BackendError",
    "Cancel",
    "ClosedError",
    "Delete",
    "Entry",
    "EtcdCheck",
    "FencingError",
    "Holding",
    "InvalidArgumentError",
    "KeepAlive",
    "Lease",
    "LeaseHeldError",
    "LeaseLostError",
    "LeaseWatch",
    "NotFoundError",
    "Object",
    "Objects",
    "Page",
    "Put",
    "Receipt",
    "RejectionWatch",
    "ScopeStatus",
    "SequenceError",
    "SequenceOutOfOrderError",
    "StaleTokenError",
    "Store",
    "TimeoutError",
    "TokenExhaustedError",
    "VersionMismatchError",
    "__version__",
    "error_from_sqlite_message",
    "error_from_sqlstate",
    "from_postgres_error",
    "from_sqlite_error",
    "migrate",
    "open",
    "open_objects",
    "parse_token",
    "reset_log_cache",
]
