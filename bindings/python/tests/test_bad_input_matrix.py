"""Rows of docs/bad-input.md that test_bad_input.py does not cover: names of
64 KiB, and a database written by a newer version of fencing. Each is refused
with its exception class and changes nothing."""

from __future__ import annotations

import pathlib
import sqlite3
from typing import Any, Callable, List

import pytest

import fencing

KIB64 = 64 * 1024


def snapshot(store: fencing.Store) -> Any:
    st = store.status("s")
    e = store.get("s", "k")
    return (
        (st.counter, st.fence, st.entries, st.lease),
        None if e is None else (e.value, e.version, e.token),
        store.list("s").keys,
        store.status("t"),
        # Not call_durations: every call is timed, this snapshot's own reads too.
        {k: v for k, v in store.metrics().items() if k != "call_durations"},
    )


@pytest.mark.parametrize("big", ["n" * KIB64, "é" * (KIB64 // 2)], ids=["ascii", "two-byte"])
def test_names_of_64_kib_are_invalid_and_change_nothing(store: fencing.Store, big: str) -> None:
    lease = store.acquire("s", holder="a", ttl=60)
    store.put("s", "k", b"v", token=lease.token)
    before = snapshot(store)
    calls: List[Callable[[], Any]] = [
        lambda: store.next_token(big),
        lambda: store.acquire(big, holder="a", ttl=1),
        lambda: store.acquire("t", holder=big, ttl=1),
        lambda: store.put(big, "k", b"x", token=lease.token),
        lambda: store.put("s", big, b"x", token=lease.token),
        lambda: store.put("s", "k", b"x", token=lease.token, holder=big),
        lambda: store.get("s", big),
        lambda: store.list("s", after=big),
        lambda: store.fence_of(big),
        lambda: store.apply("s", [fencing.Put(big, b"x")], token=lease.token),
    ]
    for call in calls:
        with pytest.raises(fencing.InvalidArgumentError):
            call()
    assert snapshot(store) == before


def test_a_database_from_a_newer_version_is_backend_and_left_alone(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "newer.db"
    with fencing.open(f"sqlite:{path}") as s:
        s.next_token("s")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(fencing.BackendError) as info:
        fencing.open(f"sqlite:{path}")
    assert info.value.code == "BACKEND"
    assert "schema version 99" in str(info.value)
    assert path.read_bytes() == before
