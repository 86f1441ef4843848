"""``with store.lease(...)``: renews through a long block, releases at exit,
and never loses a lease silently. No assertion here depends on timing: waits
are for conditions, each bounded."""

from __future__ import annotations

import datetime
import pathlib
import threading
import time
from typing import Any, Callable, Iterator, List

import pytest

import fencing

BOUND = 60.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.005)


@pytest.fixture(params=["memory", "sqlite"])
def real_clock_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    """A store on the real clock: leases expire unless renewed."""
    return "memory:" if request.param == "memory" else f"sqlite:{tmp_path / 'k.db'}"


@pytest.fixture
def real_clock(real_clock_url: str) -> Iterator[fencing.Store]:
    with fencing.open(real_clock_url) as s:
        yield s


def test_keeps_the_lease_through_a_long_block(real_clock: fencing.Store, real_clock_url: str) -> None:
    store = real_clock
    ttl = 1.5  # renewed about every 0.5 s
    with store.lease("job", holder="worker", ttl=ttl) as lease:
        assert isinstance(lease, fencing.KeepAlive)
        assert lease.active and not lease.lost and lease.lost_error is None
        first = lease.lease
        assert (lease.scope, lease.holder, lease.token) == ("job", "worker", 1)
        writes = 0
        deadline = time.monotonic() + BOUND
        # Work until the lease has been renewed 4 times: the block outlives
        # the original lease's expiry.
        while store.metrics()["renewals"] < 4:
            store.put("job", "progress", str(writes).encode(), token=lease.token)
            writes += 1
            lease.check()
            time.sleep(0.01)
            assert time.monotonic() < deadline, "no renewals"
        assert not lease.lost
        assert lease.token == first.token
        assert lease.expires_at > first.expires_at
        assert lease.lease.remaining > 0
        assert lease.last_lateness >= 0.0
        if real_clock_url.startswith("sqlite:"):
            # Another handle on the file sees it held too.
            with fencing.open(real_clock_url) as other:
                with pytest.raises(fencing.LeaseHeldError) as held:
                    other.acquire("job", holder="thief", ttl=1)
                assert (held.value.holder, held.value.token) == ("worker", 1)
        with pytest.raises(fencing.LeaseHeldError):
            store.acquire("job", holder="thief", ttl=1)
    # Released at exit: the next holder gets it at once.
    assert not lease.active and not lease.lost
    m = store.metrics()
    assert m["renewals"] >= 4 and m["renewal_failures"] == 0 and m["releases"] == 1
    nxt = store.acquire("job", holder="next", ttl=1)
    assert nxt.token == 2
    assert writes > 0
    entry = store.get("job", "progress")
    assert entry is not None and entry.token == 1


def test_loses_the_lease_and_says_so(mem: fencing.Store) -> None:
    with pytest.raises(fencing.LeaseLostError) as at_exit:
        with mem.lease("job", holder="a", ttl=0.3) as lease:
            mem.advance_clock(1)  # the lease expires on the store's clock
            b = mem.acquire("job", holder="b", ttl=60)
            wait_for(lambda: lease.lost, "the keep-alive to notice")
            err = lease.lost_error
            assert isinstance(err, fencing.LeaseLostError)
            assert (err.scope, err.current_token, err.current_holder) == ("job", 2, "b")
            with pytest.raises(fencing.LeaseLostError):
                lease.check()
            with pytest.raises(fencing.StaleTokenError):
                mem.put("job", "k", b"late", token=lease.token)
    assert (at_exit.value.current_token, at_exit.value.current_holder) == (2, "b")
    assert lease.lost and not lease.active
    # The newer holder's lease is untouched.
    st = mem.status("job").lease
    assert st is not None and (st.holder, st.token) == ("b", b.token)
    assert mem.metrics()["renewal_failures"] >= 1


def test_a_loss_the_keep_alive_has_not_seen_yet_is_raised_at_exit(mem: fencing.Store) -> None:
    # ttl 60 s: the next renewal is 20 s away, so only the exit can notice.
    with pytest.raises(fencing.LeaseLostError) as at_exit:
        with mem.lease("job", holder="a", ttl=60) as lease:
            mem.advance_clock(61)
            mem.acquire("job", holder="b", ttl=60)
            assert not lease.lost
    assert (at_exit.value.current_token, at_exit.value.current_holder) == (2, "b")
    assert lease.lost
    assert isinstance(lease.lost_error, fencing.LeaseLostError)


def test_an_expired_lease_nobody_took_is_lost_too(mem: fencing.Store) -> None:
    with pytest.raises(fencing.LeaseLostError) as at_exit:
        with mem.lease("job", holder="a", ttl=60):
            mem.advance_clock(60)  # expired at now == expires_at
    assert (at_exit.value.current_token, at_exit.value.current_holder) == (None, None)


def test_a_failed_block_under_a_lost_lease_raises_the_loss_with_its_error_as_cause(
    mem: fencing.Store,
) -> None:
    # docs/semantics.md, "Ending a held lease": the loss wins.
    work = KeyError("the work failed")
    with pytest.raises(fencing.LeaseLostError) as at_exit:
        with mem.lease("job", holder="a", ttl=60) as lease:
            mem.advance_clock(61)
            mem.acquire("job", holder="b", ttl=60)
            raise work
    assert at_exit.value.__cause__ is work
    assert (at_exit.value.current_token, at_exit.value.current_holder) == (2, "b")
    assert lease.lost


def test_a_failed_block_under_a_released_lease_keeps_its_own_error(mem: fencing.Store) -> None:
    work = KeyError("the work failed")
    with pytest.raises(KeyError) as raised:
        with mem.lease("job", holder="a", ttl=60) as lease:
            raise work
    assert raised.value is work
    assert not lease.lost
    assert mem.status("job").lease is None


def test_a_failed_block_in_a_closed_store_raises_closed_with_its_error_as_cause(
    mem: fencing.Store,
) -> None:
    work = KeyError("the work failed")
    with pytest.raises(fencing.ClosedError) as at_exit:
        with mem.lease("job", holder="a", ttl=60):
            mem.close()
            raise work
    assert at_exit.value.__cause__ is work


def test_lease_waits_for_the_lease_with_a_timeout(mem: fencing.Store) -> None:
    held = mem.acquire("job", holder="b", ttl=60)
    with pytest.raises(fencing.TimeoutError):
        with mem.lease("job", holder="a", ttl=60, timeout=0.05):
            pass
    mem.release(held)
    with mem.lease("job", holder="a", ttl=60, timeout=30) as lease:
        assert lease.token == 2
    with pytest.raises(fencing.InvalidArgumentError):
        mem.lease("job", holder="a", ttl=60, timeout=-1)


def test_closing_the_store_inside_the_block(mem: fencing.Store) -> None:
    with pytest.raises(fencing.ClosedError):
        with mem.lease("job", holder="a", ttl=60):
            mem.close()


def test_keep_alive_of_an_acquired_lease(real_clock: fencing.Store) -> None:
    store = real_clock
    acquired = store.acquire("job", holder="w", ttl=1.5)
    keeper = store.keep_alive(acquired)
    assert keeper.token == acquired.token and not keeper.active
    assert "not entered" in repr(keeper)
    with keeper as k:
        assert k is keeper
        wait_for(lambda: store.metrics()["renewals"] >= 3, "three renewals")
        assert not k.lost
        assert "held" in repr(k)
    assert "released" in repr(keeper)
    assert store.status("job").lease is None


def test_early_release(mem: fencing.Store) -> None:
    with mem.lease("job", holder="a", ttl=60) as lease:
        assert lease.release() is True
        assert not lease.active
        assert mem.acquire("job", holder="b", ttl=1).token == 2
        assert lease.release() is False  # nothing more to release
    assert not lease.lost


def test_lifecycle_misuse(mem: fencing.Store) -> None:
    keeper = mem.lease("job", holder="a", ttl=timedelta_s(60))
    with pytest.raises(fencing.InvalidArgumentError):
        keeper.token
    with keeper:
        with pytest.raises(fencing.InvalidArgumentError):
            keeper.__enter__()
    with pytest.raises(fencing.InvalidArgumentError):
        keeper.__enter__()
    # A failed acquisition can be retried with the same object.
    held = mem.acquire("other", holder="x", ttl=60)
    retry = mem.lease("other", holder="a", ttl=60)
    with pytest.raises(fencing.LeaseHeldError):
        retry.__enter__()
    mem.release(held)
    with retry as lease:
        assert lease.token == 2


def timedelta_s(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=seconds)


def test_leaving_the_block_during_a_release_in_flight_raises_its_loss(
    tmp_path: pathlib.Path, lock_file: Callable[[pathlib.Path], Any]
) -> None:
    # release() on one thread, __exit__ on another while the release runs
    # (held up by another process's lock on the file): the exit takes the
    # release's verdict, here a loss, instead of ending the block normally.
    path = tmp_path / "exit.db"
    with fencing.open(f"sqlite:{path}?clock=manual&busy_timeout_ms=30000") as store:
        keeper = store.lease("job", holder="a", ttl=60)
        keeper.__enter__()
        store.advance_clock(61)
        store.acquire("job", holder="b", ttl=60)  # the lease is lost
        lock = lock_file(path)
        released: List[object] = []
        exited: List[object] = []

        def leave() -> None:
            try:
                exited.append(keeper.__exit__(None, None, None))
            except BaseException as e:  # what the block's end raises
                exited.append(e)

        releasing = threading.Thread(target=lambda: released.append(keeper.release()))
        releasing.start()
        wait_for(lambda: "busy" in repr(keeper), "the release to begin")
        time.sleep(0.2)  # into the release, which waits for the file's lock
        leaving = threading.Thread(target=leave)
        leaving.start()
        time.sleep(0.3)
        lock.release()
        releasing.join(BOUND)
        leaving.join(BOUND)
        assert not releasing.is_alive() and not leaving.is_alive()
        assert released == [False]
        assert len(exited) == 1 and isinstance(exited[0], fencing.LeaseLostError), exited
        assert not keeper.active


RELEASE_BEHIND_AN_ENTRY = r"""
import threading, time, fencing
s = fencing.Store("memory:")
s.acquire("s", holder="a", ttl=3600)
held = s.lease("s", holder="b", ttl=10, timeout=3600)
threading.Thread(target=held.__enter__, daemon=True).start()
time.sleep(0.2)  # the entry waits for the lease, for up to an hour
print("waiting", flush=True)
try:
    held.release()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


def test_a_release_behind_another_threads_entry_ends_on_ctrl_c(
    interrupt_while_waiting: Callable[..., Any],
) -> None:
    # release() waits for the entry in flight on another thread (its
    # verdict is what release finds); that wait, like every wait of this
    # face, ends on Ctrl-C with KeyboardInterrupt instead of lasting the
    # entry's whole timeout.
    status, out, err = interrupt_while_waiting(RELEASE_BEHIND_AN_ENTRY, timeout=BOUND)
    assert "interrupted" in out, (out, err)
    assert "KeyboardInterrupt" in err, err
    assert status != 0
