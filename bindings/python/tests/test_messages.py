"""Messages that say what to do, in Python's own names and units (issue: the first hour)."""

from __future__ import annotations

import datetime

import pytest

import fencing


def test_a_lease_where_a_token_goes_says_pass_lease_token(mem: fencing.Store) -> None:
    lease = mem.acquire("s", holder="h", ttl=10)
    with pytest.raises(fencing.InvalidArgumentError, match=r"pass lease\.token"):
        mem.put("s", "k", b"v", token=lease)  # type: ignore[arg-type]
    with mem.lease("t", holder="h", ttl=10) as held:
        with pytest.raises(fencing.InvalidArgumentError, match=r"pass lease\.token"):
            mem.put("t", "k", b"v", token=held)  # type: ignore[arg-type]
    # Nothing was written.
    assert mem.get("s", "k") is None
    assert mem.fence_of("s") == lease.token


@pytest.mark.parametrize("ttl", [0, 0.0, datetime.timedelta(0), 366 * 86400 + 1, 0.0004])
def test_a_ttl_out_of_range_is_reported_in_seconds(mem: fencing.Store, ttl: object) -> None:
    with pytest.raises(fencing.InvalidArgumentError) as caught:
        mem.acquire("s", holder="h", ttl=ttl)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "0.001..=31622400 seconds" in message, message
    assert "ns" not in message and "ms" not in message, message
    assert mem.status("s").lease is None


def test_lease_held_message_says_seconds_like_remaining(mem: fencing.Store) -> None:
    mem.acquire("s", holder="a", ttl=30)
    with pytest.raises(fencing.LeaseHeldError) as caught:
        mem.acquire("s", holder="b", ttl=30)
    message = str(caught.value)
    assert " s left" in message and "ms left" not in message, message
    assert f"{caught.value.remaining:.3f} s left" in message, message
