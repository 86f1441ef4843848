"""Threads share one store; the GIL is released while the core works."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import threading
from typing import Callable, Dict, List, Tuple

import pytest

import fencing

BOUND = 60.0  # seconds: the most any wait here may take


def run_threads(n: int, target: Callable[[int], None]) -> None:
    errors: List[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]


def test_threads_write_their_own_scopes(store: fencing.Store) -> None:
    def worker(i: int) -> None:
        token = store.next_token(f"scope-{i}")
        for n in range(200):
            store.put(f"scope-{i}", f"k{n % 10}", f"{i}:{n}".encode(), token=token)

    run_threads(8, worker)
    for i in range(8):
        entry = store.get(f"scope-{i}", "k9")
        assert entry is not None
        assert (entry.value, entry.version, entry.token) == (f"{i}:199".encode(), 20, 1)
        assert store.list(f"scope-{i}").keys == [f"k{n}" for n in range(10)]
    assert store.metrics()["writes_accepted"] == 1600


def test_threads_take_turns_on_one_lease(store: fencing.Store) -> None:
    """Read-modify-write under the lease: no update is lost, and every
    accepted write carries a greater token than the one before it."""
    rounds, workers = 10, 6
    tokens: List[int] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        for _ in range(rounds):
            lease = store.acquire_wait("counter", holder=f"t{i}", ttl=BOUND, timeout=BOUND)
            entry = store.get("counter", "n")
            n = 0 if entry is None else int(entry.value)
            store.put("counter", "n", str(n + 1).encode(), token=lease.token)
            with lock:
                tokens.append(lease.token)
            assert store.release(lease) is True

    run_threads(workers, worker)
    entry = store.get("counter", "n")
    assert entry is not None
    assert int(entry.value) == rounds * workers
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
    assert entry.token == tokens[-1] == rounds * workers
    m = store.metrics()
    assert (m["leases_acquired"], m["releases"], m["writes_accepted"]) == (60, 60, 60)


def test_stale_writers_in_threads_never_win(mem: fencing.Store) -> None:
    """Many threads write with their own token while the fence moves up:
    the stored entry always carries the greatest token accepted."""
    accepted: Dict[int, int] = {}
    lock = threading.Lock()

    def worker(i: int) -> None:
        for n in range(1, 101):
            token = n * 10 + i
            try:
                mem.put("s", "k", str(token).encode(), token=token)
            except fencing.StaleTokenError as e:
                assert e.current >= token
                continue
            with lock:
                accepted[token] = accepted.get(token, 0) + 1

    run_threads(8, worker)
    entry = mem.get("s", "k")
    assert entry is not None
    assert entry.token == max(accepted) == mem.fence_of("s")
    assert int(entry.value) == entry.token
    m = mem.metrics()
    assert m["writes_accepted"] + m["stale_rejections"] == 800


def test_gil_is_released_while_acquire_wait_blocks(mem: fencing.Store) -> None:
    """A thread blocked in acquire_wait lets this thread run Python code that
    releases the lease. If the wait held the GIL, the release could not run
    and the waiter would time out."""
    held = mem.acquire("s", holder="main", ttl=3600)
    got: List[fencing.Lease] = []
    waiting = threading.Event()

    def waiter(_: int) -> None:
        waiting.set()
        got.append(mem.acquire_wait("s", holder="waiter", ttl=10, timeout=BOUND))

    t = threading.Thread(target=waiter, args=(0,))
    t.start()
    assert waiting.wait(BOUND)
    total = sum(i * i for i in range(200_000))  # Python work, needs the GIL
    assert total > 0
    assert mem.release(held) is True
    t.join(BOUND)
    assert not t.is_alive()
    assert [(lease.holder, lease.token) for lease in got] == [("waiter", 2)]


def test_one_store_closed_from_another_thread(sqlite_url: str) -> None:
    store = fencing.open(sqlite_url)
    results: List[str] = []
    started = threading.Barrier(5)

    def worker(i: int) -> None:
        started.wait(BOUND)
        for n in range(10_000):
            try:
                store.put("s", f"k{i}", b"v", token=1)
            except fencing.ClosedError:
                results.append("closed")
                return
        results.append("finished")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    started.wait(BOUND)
    store.close()
    for t in threads:
        t.join(BOUND)
    assert not any(t.is_alive() for t in threads)
    assert len(results) == 4 and set(results) <= {"closed", "finished"}
    with pytest.raises(fencing.ClosedError):
        store.get("s", "k0")
    # Writes that were in flight either committed or did not: the file is whole.
    with fencing.open(sqlite_url) as again:
        keys = again.list("s").keys
        assert set(keys) <= {"k0", "k1", "k2", "k3"}
        assert again.fence_of("s") == (1 if keys else 0)
        for k in keys:
            e = again.get("s", k)
            assert e is not None and (e.value, e.token) == (b"v", 1)


INTERRUPTED = r"""
import sys, fencing
store = fencing.Store(sys.argv[1])
store.acquire("busy", holder="other", ttl=3600)
try:
    # Inside the try: a Ctrl-C that lands before the wait is caught too.
    print("waiting", flush=True)
    if sys.argv[2] == "acquire_wait":
        store.acquire_wait("busy", holder="me", ttl=60, timeout=120)
    else:
        with store.lease("busy", holder="me", ttl=60, timeout=120):
            pass
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


@pytest.mark.parametrize("wait", ["acquire_wait", "lease"])
def test_ctrl_c_ends_a_blocking_wait(
    tmp_path: pathlib.Path, wait: str, interrupt_while_waiting: Callable[..., Tuple[int, str, str]]
) -> None:
    # A blocking acquire_wait (or lease with a timeout) runs without the
    # GIL; Ctrl-C (SIGINT) must still end it promptly with
    # KeyboardInterrupt, as it would time.sleep. Bounded far below the
    # wait's 120 s timeout.
    status, out, err = interrupt_while_waiting(INTERRUPTED, f"sqlite:{tmp_path / 'wait.db'}", wait, timeout=60)
    assert "interrupted" in out, (out, err)
    assert "KeyboardInterrupt" in err, err
    assert status != 0


def test_a_cancel_fired_from_another_thread_ends_a_blocking_wait(mem: fencing.Store) -> None:
    held = mem.acquire("busy", holder="a", ttl=3600)
    cancel = fencing.Cancel()
    assert not cancel.fired
    threading.Timer(0.05, cancel.fire).start()
    with pytest.raises(fencing.TimeoutError):
        mem.acquire_wait("busy", holder="b", ttl=60, timeout=120, cancel=cancel)
    assert cancel.fired
    assert mem.status("busy").counter == held.token
    # A fired flag stays fired: a call given it takes nothing, not even a
    # free lease.
    with pytest.raises(fencing.TimeoutError):
        mem.acquire_wait("free", holder="b", ttl=60, timeout=1, cancel=cancel)
    with pytest.raises(fencing.TimeoutError):
        with mem.lease("free", holder="b", ttl=60, timeout=1, cancel=cancel):
            pass
    assert mem.status("free").counter == 0
    for bad in ("no", 1, object()):
        with pytest.raises(fencing.InvalidArgumentError, match="cancel must be a fencing.Cancel"):
            mem.acquire_wait("free", holder="b", ttl=60, timeout=1, cancel=bad)  # type: ignore[arg-type]
    assert repr(cancel) == "<fencing.Cancel fired=True>"


def stale_write(store: fencing.Store, scope: str) -> None:
    """Token 2 writes, then token 1 is refused: one recorded rejection."""
    store.advance_counter(scope, 2)
    store.put(scope, "k", b"v", token=2)
    with pytest.raises(fencing.StaleTokenError):
        store.put(scope, "k", b"SECRET", token=1)


def test_a_watch_yields_each_rejection_recorded_after_it_began() -> None:
    with fencing.open("memory:") as store:
        stale_write(store, "before")
        watch = store.watch_rejections()
        assert watch.pop() is None
        assert watch.wait(timeout=0) is False
        threading.Timer(0.05, stale_write, (store, "a")).start()
        first = next(watch)
        assert (first["scope"], first["presented"], first["current"]) == ("a", 1, 2)
        assert "SECRET" not in repr(first)
        only_b = store.watch_rejections("b")
        stale_write(store, "b")
        assert next(only_b)["scope"] == "b"
        assert next(watch)["scope"] == "b"
        store.close()
        with pytest.raises(fencing.ClosedError):
            next(watch)
        assert list(watch) == []
        with pytest.raises(fencing.InvalidArgumentError):
            fencing.open("memory:").watch_rejections("")


LATE_INTERRUPT = r"""
import os, signal, subprocess, sys, threading, time, fencing

path, how, locker, warm = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "warm"
store = fencing.Store(f"sqlite:{path}?busy_timeout_ms=30000")
if warm:  # the core's first log record: logging's levels are read now, not in the wait
    store.release(store.acquire("other", holder="a", ttl=1))
# Another process holds the file's write lock: the acquire, once sent,
# waits for it inside its one attempt, where no Ctrl-C ends the wait.
lock = subprocess.Popen([sys.executable, "-c", locker, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
assert lock.stdout.readline().strip() == "locked"


def interrupt_then_unlock() -> None:
    time.sleep(0.5)  # the attempt waits for the lock
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the winning attempt is in flight
    time.sleep(0.3)
    lock.communicate("\n")  # the attempt goes through: the lease is taken


threading.Thread(target=interrupt_then_unlock).start()
try:
    if how == "acquire_wait":
        lease = store.acquire_wait("job", holder="a", ttl=3600, timeout=60)
        for _ in range(1000):  # where a pending signal is raised at the latest
            pass
        print("returned", lease.token, flush=True)
    else:
        with store.lease("job", holder="a", ttl=3600, timeout=60) as held:
            for _ in range(1000):
                pass
            print("returned", held.token, flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
print("lease", store.status("job").lease, flush=True)
"""


@pytest.mark.parametrize("logging", ["warm", "cold"])
@pytest.mark.parametrize("wait", ["acquire_wait", "lease"])
def test_ctrl_c_while_the_winning_attempt_is_in_flight_takes_no_lease(
    tmp_path: pathlib.Path, wait: str, logging: str, locker_script: str
) -> None:
    # docs/semantics.md, "Giving up a call": Ctrl-C raises KeyboardInterrupt
    # with no lease taken, also when it lands while the acquire that wins is
    # on its way and the wait no longer asks for signals. "cold": the core's
    # first log record comes as the lease arrives, and Python's logging,
    # called to read its levels, runs the Ctrl-C's handler: the
    # KeyboardInterrupt must come out of the call all the same.
    path = tmp_path / "late.db"
    fencing.open(f"sqlite:{path}").close()  # the schema, before the lock
    try:
        done = subprocess.run(
            [sys.executable, "-c", LATE_INTERRUPT, str(path), wait, locker_script, logging],
            capture_output=True, text=True, timeout=BOUND,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the wait did not end: {e.stdout!r}")
    assert done.stdout.split("\n")[:2] == ["interrupted", "lease None"], (done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
