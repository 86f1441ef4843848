"""Fencing's errors from an SQLite driver's exception.

A caller who fences their own tables on the embedded default inserts into
the ``fencing_check`` view inside their own transaction, through their own
driver (docs/sqlite.md); a stale token aborts that statement with a message
that starts with ``STALE_TOKEN:``, and the caller rolls back::

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO fencing_check (scope, token) VALUES (?, ?)", (scope, token))
        conn.execute("UPDATE report SET body = ? WHERE id = ?", (body, 7))
        conn.execute("COMMIT")
    except sqlite3.Error as e:
        conn.execute("ROLLBACK")
        err = fencing.from_sqlite_error(e)
        if err is None:
            raise
        raise err from e    # fencing.StaleTokenError

Which message means what is the core's (``error_from_sqlite_message``); this
only reads the driver's exception, duck-typed, so no driver is imported.
"""

from __future__ import annotations

from typing import Optional

from ._errors import FencingError
from ._native import error_from_sqlite_message

__all__ = ["from_sqlite_error"]


def from_sqlite_error(exc: BaseException) -> Optional[FencingError]:
    """The fencing exception an SQLite driver's exception carries (a
    rejection of the ``fencing_check`` view), or None when it is not one.

    Reads the message from ``exc.args[0]`` when it is a str (``sqlite3``,
    ``apsw``), else ``str(exc)``. The message carries no details: ``scope``
    and the numbers of the returned exception are None; the scope and
    token are the ones you passed. The exception is returned, not raised:
    ``raise err from exc``.
    """
    first = exc.args[0] if exc.args else None
    message = first if isinstance(first, str) else str(exc)
    return error_from_sqlite_message(message)
