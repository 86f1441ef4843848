"""Fencing's errors from a PostgreSQL driver's exception.

A caller who fences their own tables runs ``SELECT fencing.check(scope,
token)`` inside their own transaction, through their own driver; a stale
token raises SQLSTATE ``FN001`` there, and the whole transaction rolls back::

    try:
        with conn.transaction():
            conn.execute("SELECT fencing.check(%s, %s)", (scope, token))
            conn.execute("UPDATE report SET body = %s WHERE id = %s", (body, 7))
    except psycopg.Error as e:
        err = fencing.from_postgres_error(e)
        if err is None:
            raise
        raise err from e    # fencing.StaleTokenError, with presented/current

The SQLSTATE table is the core's (``error_from_sqlstate``); this only reads
the driver's exception, duck-typed, so no driver is imported.
"""

from __future__ import annotations

from typing import Optional

from ._errors import FencingError
from ._native import error_from_sqlstate

__all__ = ["from_postgres_error"]


def _text(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None


def from_postgres_error(exc: BaseException) -> Optional[FencingError]:
    """The fencing exception a PostgreSQL driver's exception carries, or None
    when it is not one of fencing's SQLSTATEs (class ``FN``).

    Reads the SQLSTATE from ``exc.sqlstate`` (psycopg 3, asyncpg) or
    ``exc.pgcode`` (psycopg2), and the DETAIL from ``exc.diag.message_detail``
    (psycopg 2 and 3) or ``exc.detail`` (asyncpg). The exception is returned,
    not raised: ``raise err from exc``.
    """
    sqlstate = _text(getattr(exc, "sqlstate", None)) or _text(getattr(exc, "pgcode", None))
    if sqlstate is None:
        return None
    diag = getattr(exc, "diag", None)
    detail = _text(getattr(diag, "message_detail", None)) if diag is not None else None
    if detail is None:
        detail = _text(getattr(exc, "detail", None))
    return error_from_sqlstate(sqlstate, detail)
