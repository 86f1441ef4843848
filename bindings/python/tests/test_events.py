"""The store's own record (docs/operations.md): a snapshot of recent
rejections and last writers, shared by every handle on the store."""

from __future__ import annotations

import asyncio
import datetime

import pytest

import fencing
import fencing.aio


def test_events_snapshot_from_another_handle(sqlite_url: str) -> None:
    with fencing.open(sqlite_url) as writer, fencing.open(sqlite_url) as operator:
        writer.put("r:7", "report", b"B", token=2, holder="worker-b")
        with pytest.raises(fencing.StaleTokenError):
            writer.put("r:7", "report", b"SECRET", token=1, holder="worker-a")
        ev = operator.events()
        [rej] = ev["rejections"]
        assert rej["code"] == "STALE_TOKEN"
        assert (rej["scope"], rej["key"], rej["presented"], rej["current"]) == ("r:7", "report", 1, 2)
        assert (rej["holder"], rej["seq"], rej["suppressed"], rej["id"]) == ("worker-a", None, 0, 1)
        assert isinstance(rej["at"], datetime.datetime)
        [w] = ev["last_writes"]
        assert (w["scope"], w["holder"], w["token"]) == ("r:7", "worker-b", 2)
        assert b"SECRET" not in repr(ev).encode()
        assert operator.events("other", limit=1) == {"rejections": [], "last_writes": []}
        # The operator's own handle counted nothing: the record is the store's.
        assert operator.metrics()["stale_rejections"] == 0


def test_events_bad_arguments(mem: fencing.Store) -> None:
    for limit in (0, 257, -1):
        with pytest.raises(fencing.InvalidArgumentError, match="limit"):
            mem.events(limit=limit)
    with pytest.raises(fencing.InvalidArgumentError):
        mem.events("")
    with pytest.raises(fencing.InvalidArgumentError):
        mem.events(limit="20")  # type: ignore[arg-type]


def test_events_in_aio() -> None:
    async def main() -> None:
        async with fencing.aio.open("memory:?clock=manual") as s:
            await s.claim("s", token=5)
            with pytest.raises(fencing.StaleTokenError):
                await s.claim("s", token=4, holder="late")
            ev = await s.events("s", limit=5)
            assert [r["holder"] for r in ev["rejections"]] == ["late"]

    asyncio.run(main())
