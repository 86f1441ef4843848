"""Bad input of every kind raises the right exception class and changes nothing."""

from __future__ import annotations

import datetime
import math
from typing import Any, Callable, Iterator, List, Tuple

import pytest

import fencing

S = fencing.Store
Case = Tuple[str, Callable[[S], Any]]

BIG = fencing.MAX_VALUE_BYTES + 1
SURROGATE = "bad\ud800text"  # a str that is not valid UTF-8


def _enter(keeper: fencing.KeepAlive) -> None:
    with keeper:
        pass


def cases() -> Iterator[Case]:
    # --- tokens: only ints in 1..=MAX_TOKEN ---
    for name, tok in [
        ("bool-true", True),
        ("bool-false", False),
        ("float", 1.0),
        ("str", "1"),
        ("bytes", b"1"),
        ("none", None),
        ("zero", 0),
        ("negative", -1),
        ("2^63", 2**63),
        ("2^64", 2**64),
        ("huge", 10**40),
        ("huge-negative", -(10**40)),
    ]:
        yield f"put-token-{name}", lambda s, t=tok: s.put("s", "k", b"x", token=t)
        yield f"delete-token-{name}", lambda s, t=tok: s.delete("s", "k", token=t)
        yield f"claim-token-{name}", lambda s, t=tok: s.claim("s", token=t)
        yield f"apply-token-{name}", lambda s, t=tok: s.apply("s", [fencing.Delete("k")], token=t)
        yield f"execute-token-{name}", lambda s, t=tok: s.execute("s", fencing.Delete("k"), token=t)
        yield f"renew-token-{name}", lambda s, t=tok: s.renew("s", token=t, ttl=1)
        yield f"release-token-{name}", lambda s, t=tok: s.release("s", token=t)
        yield f"advance-counter-{name}", lambda s, t=tok: s.advance_counter("s", t)
        if tok is not None:  # token=None is a plain read
            yield f"get-token-{name}", lambda s, t=tok: s.get("s", "k", token=t)

    # --- seq and expected_version: ints in 0..=2^63-1 ---
    for name, n in [
        ("negative", -1),
        ("2^63", 2**63),
        ("2^64", 2**64),
        ("float", 1.0),
        ("str", "1"),
        ("bool", True),
    ]:
        yield f"put-seq-{name}", lambda s, n=n: s.put("s", "k", b"x", token=5, seq=n)
        yield f"claim-seq-{name}", lambda s, n=n: s.claim("s", token=5, seq=n)
        yield f"execute-seq-{name}", lambda s, n=n: s.execute("s", fencing.Put("k", b"x"), token=5, seq=n)
        yield f"put-expected-{name}", lambda s, n=n: s.put("s", "k", b"x", token=5, expected_version=n)
        yield f"delete-expected-{name}", lambda s, n=n: s.delete("s", "k", token=5, expected_version=n)
        yield f"apply-op-expected-{name}", lambda s, n=n: s.apply(
            "s", [fencing.Put("k", b"x", expected_version=n)], token=5
        )
        yield f"execute-op-expected-{name}", lambda s, n=n: s.execute(
            "s", fencing.Delete("k", expected_version=n), token=5
        )

    # --- scopes, keys, holders: str, sized, no NUL, valid UTF-8 ---
    bad_names: List[Tuple[str, Any]] = [
        ("none", None),
        ("int", 1),
        ("bytes", b"s"),
        ("list", ["s"]),
        ("empty", ""),
        ("nul", "a\0b"),
        ("surrogate", SURROGATE),
    ]
    for name, v in bad_names + [("257-bytes", "x" * 257), ("258-utf8-bytes", "é" * 129)]:
        yield f"scope-{name}-next-token", lambda s, v=v: s.next_token(v)
        yield f"scope-{name}-put", lambda s, v=v: s.put(v, "k", b"x", token=5)
        yield f"scope-{name}-get", lambda s, v=v: s.get(v, "k")
        yield f"scope-{name}-acquire", lambda s, v=v: s.acquire(v, holder="b", ttl=1)
        yield f"scope-{name}-fence-of", lambda s, v=v: s.fence_of(v)
        yield f"scope-{name}-status", lambda s, v=v: s.status(v)
        yield f"scope-{name}-retire", lambda s, v=v: s.retire(v)
        yield f"scope-{name}-list", lambda s, v=v: s.list(v)
        yield f"scope-{name}-claim", lambda s, v=v: s.claim(v, token=5)
        yield f"scope-{name}-execute", lambda s, v=v: s.execute(v, fencing.Put("k", b"x"), token=5)
    for name, v in bad_names + [("1025-bytes", "k" * 1025)]:
        yield f"key-{name}-put", lambda s, v=v: s.put("s", v, b"x", token=5)
        yield f"key-{name}-delete", lambda s, v=v: s.delete("s", v, token=5)
        yield f"key-{name}-get", lambda s, v=v: s.get("s", v)
        yield f"key-{name}-list-after", lambda s, v=v: s.list("s", after=v) if v is not None else s.list(
            "s", after=1
        )
        yield f"key-{name}-batch", lambda s, v=v: s.apply("s", [fencing.Put(v, b"x")], token=5)
        yield f"key-{name}-execute", lambda s, v=v: s.execute("s", fencing.Delete(v), token=5)
    for name, v in bad_names + [("257-bytes", "h" * 257)]:
        if v is None:
            continue  # holder=None means "no holder" for writes
        yield f"holder-{name}-acquire", lambda s, v=v: s.acquire("t", holder=v, ttl=1)
        yield f"holder-{name}-put", lambda s, v=v: s.put("s", "k", b"x", token=5, holder=v)
        yield f"holder-{name}-claim", lambda s, v=v: s.claim("s", token=5, holder=v)
        yield f"holder-{name}-execute", lambda s, v=v: s.execute(
            "s", fencing.Put("k", b"x"), token=5, holder=v
        )
        yield f"holder-{name}-get", lambda s, v=v: s.get("s", "k", token=5, holder=v)
        yield f"holder-{name}-lease", lambda s, v=v: _enter(s.lease("t", holder=v, ttl=1))
    yield "acquire-holder-none", lambda s: s.acquire("t", holder=None, ttl=1)
    yield "get-holder-without-token", lambda s: s.get("s", "k", holder="a")

    # --- values: bytes-like, at most 1 MiB ---
    for name, v in [
        ("str", "text"),
        ("none", None),
        ("int", 3),
        ("float", 1.5),
        ("list", [1, 2]),
        ("object", object()),
        ("too-big-bytes", b"x" * BIG),
        ("too-big-bytearray", bytearray(BIG)),
        ("too-big-memoryview", memoryview(b"y" * BIG)),
    ]:
        yield f"value-{name}-put", lambda s, v=v: s.put("s", "k", v, token=5)
        yield f"value-{name}-batch", lambda s, v=v: s.apply("s", [fencing.Put("k", v)], token=5)
        yield f"value-{name}-execute", lambda s, v=v: s.execute("s", fencing.Put("k", v), token=5)

    # --- durations: seconds (int/float) or timedelta, 1 ms..=366 days ---
    for name, ttl in [
        ("zero", 0),
        ("zero-float", 0.0),
        ("sub-ms", 0.0004),
        ("negative", -1),
        ("negative-float", -0.5),
        ("nan", math.nan),
        ("inf", math.inf),
        ("huge-float", 1e300),
        ("huge-int", 10**30),
        ("367-days", 367 * 86400),
        ("zero-timedelta", datetime.timedelta(0)),
        ("negative-timedelta", datetime.timedelta(milliseconds=-1)),
        ("str", "1"),
        ("none", None),
        ("bool", True),
        ("complex", 1j),
    ]:
        yield f"ttl-{name}-acquire", lambda s, t=ttl: s.acquire("s", holder="b", ttl=t)
        yield f"ttl-{name}-acquire-wait", lambda s, t=ttl: s.acquire_wait(
            "t", holder="b", ttl=t, timeout=0
        )
        yield f"ttl-{name}-renew", lambda s, t=ttl: s.renew("s", token=1, ttl=t)
        yield f"ttl-{name}-lease", lambda s, t=ttl: _enter(s.lease("t", holder="b", ttl=t))
    for name, by in [("negative", -1), ("nan", math.nan), ("str", "1"), ("none", None)]:
        yield f"timeout-{name}", lambda s, b=by: s.acquire_wait("t", holder="b", ttl=1, timeout=b)
        yield f"advance-clock-{name}", lambda s, b=by: s.advance_clock(b)

    # --- list limits ---
    for name, limit in [("0", 0), ("1001", 1001), ("negative", -1), ("float", 1.5), ("str", "9"), ("bool", True)]:
        yield f"list-limit-{name}", lambda s, n=limit: s.list("s", limit=n)

    # --- batches ---
    for name, ops in [
        ("empty", []),
        ("1001", [fencing.Put("k", b"x")] * 1001),
        ("str", "ops"),
        ("bytes", b"ops"),
        ("int", 5),
        ("none", None),
        ("tuples", [("k", b"v")]),
        ("dicts", [{"put": "k", "value": b"v"}]),
        ("one-bad-item", [fencing.Put("k", b"x"), "delete k"]),
    ]:
        yield f"apply-{name}", lambda s, o=ops: s.apply("s", o, token=5)
    # --- one op: a Put or a Delete, not a batch of them ---
    for name, op in [
        ("none", None),
        ("str", "delete k"),
        ("bytes", b"k"),
        ("list-of-one", [fencing.Put("k", b"x")]),
        ("tuple", ("k", b"v")),
        ("dict", {"put": "k", "value": b"v"}),
        ("the-class", fencing.Put),
        ("object", object()),
    ]:
        yield f"execute-op-{name}", lambda s, o=op: s.execute("s", o, token=5)

    # --- lease arguments ---
    yield "renew-int", lambda s: s.renew(5)
    yield "renew-scope-without-token", lambda s: s.renew("s", ttl=1)
    yield "renew-scope-without-ttl", lambda s: s.renew("s", token=1)
    yield "release-none", lambda s: s.release(None)
    yield "release-scope-without-token", lambda s: s.release("s")
    yield "keep-alive-not-a-lease", lambda s: s.keep_alive("s")


CASES = list(cases())


def snapshot(store: fencing.Store) -> Any:
    st = store.status("s")
    e = store.get("s", "k")
    # Not call_durations: every call is timed, this snapshot's own reads too.
    m = {k: v for k, v in store.metrics().items() if k != "call_durations"}
    return (
        (st.counter, st.fence, st.entries, st.lease),
        None if e is None else (e.value, e.version, e.token),
        store.list("s").keys,
        store.status("t"),
        m,
    )


@pytest.fixture
def prepared(store: fencing.Store) -> fencing.Store:
    lease = store.acquire("s", holder="a", ttl=60)
    store.put("s", "k", b"v", token=lease.token, seq=3)
    return store


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_and_changes_nothing(prepared: fencing.Store, case: Case) -> None:
    _, call = case
    before = snapshot(prepared)
    with pytest.raises(fencing.InvalidArgumentError) as info:
        call(prepared)
    assert isinstance(info.value, ValueError)
    assert info.value.code == "INVALID_ARGUMENT"
    assert str(info.value)
    assert snapshot(prepared) == before


def test_bad_op_constructors() -> None:
    for make in [
        lambda: fencing.Put(1, b"v"),
        lambda: fencing.Put("k", "text"),
        lambda: fencing.Put("k", None),
        lambda: fencing.Put(SURROGATE, b"v"),
        lambda: fencing.Put("k", b"v", expected_version=-1),
        lambda: fencing.Put("k", b"v", expected_version=1.0),
        lambda: fencing.Delete(b"k"),
        lambda: fencing.Delete("k", expected_version="1"),
    ]:
        with pytest.raises(fencing.InvalidArgumentError):
            make()


def test_bad_urls() -> None:
    for url in [None, 1, b"memory:", SURROGATE, "memory:" + "?" * 5000, "", "memory", "sqlite:"]:
        with pytest.raises(fencing.InvalidArgumentError):
            fencing.open(url)  # type: ignore[arg-type]
        with pytest.raises(fencing.InvalidArgumentError):
            fencing.Store(url)  # type: ignore[arg-type]


def test_sqlite_double_slash_is_refused_with_the_right_spelling(tmp_path: Any, monkeypatch: Any) -> None:
    # SQLAlchemy's habit: taken as a path, sqlite://rel.db would be /rel.db.
    monkeypatch.chdir(tmp_path)
    for url in ["sqlite://rel.db", "sqlite:///rel.db"]:
        with pytest.raises(fencing.InvalidArgumentError) as caught:
            fencing.open(url)
        assert "sqlite:rel.db" in str(caught.value)
        assert "sqlite:/rel.db" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_calling_errors_are_type_errors(mem: fencing.Store) -> None:
    # A wrong call shape is Python's own TypeError, as for any function.
    with pytest.raises(TypeError):
        mem.put("s", "k", b"v")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        mem.put("s", "k", b"v", 1)  # type: ignore[misc]
    with pytest.raises(TypeError):
        mem.acquire("s", "h", 1)  # type: ignore[misc]
    with pytest.raises(TypeError):
        mem.get("s", "k", tokn=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        mem.execute("s", fencing.Put("k", b"v"), 1)  # type: ignore[misc]
    with pytest.raises(TypeError):
        mem.etcd_check("s", 1)  # type: ignore[misc]
    assert mem.fence_of("s") == 0


def test_the_bounds_themselves_are_accepted(store: fencing.Store) -> None:
    scope, key, holder = "s" * 256, "k" * 1024, "h" * 256
    lease = store.acquire(scope, holder=holder, ttl=366 * 86400)
    assert lease.holder == holder
    store.put(scope, key, b"x" * fencing.MAX_VALUE_BYTES, token=lease.token, seq=2**63 - 1)
    e = store.get(scope, key)
    assert e is not None and len(e.value) == fencing.MAX_VALUE_BYTES
    assert store.put(scope, key, b"", token=lease.token, expected_version=1).version == 2
    assert len(store.apply(scope, [fencing.Put("b", b"")] * 1000, token=2)) == 1000
    assert len(store.list(scope, limit=1000).keys) == 2
    assert store.acquire("u", holder="h", ttl=0.001).ttl == 0.001
    assert store.acquire("é" * 128, holder="h", ttl=datetime.timedelta(days=366)).scope == "é" * 128


def test_advance_clock_needs_a_manual_clock() -> None:
    with fencing.open("memory:") as s:
        with pytest.raises(fencing.InvalidArgumentError):
            s.advance_clock(1)


def test_closed_store_raises_closed_for_every_call(store: fencing.Store) -> None:
    lease = store.acquire("s", holder="a", ttl=5)
    keeper = store.lease("t", holder="a", ttl=5)
    store.close()
    calls: List[Callable[[], Any]] = [
        lambda: store.next_token("s"),
        lambda: store.advance_counter("s", 5),
        lambda: store.acquire("s", holder="b", ttl=1),
        lambda: store.acquire_wait("s", holder="b", ttl=1, timeout=1),
        lambda: store.renew(lease),
        lambda: store.release(lease),
        lambda: store.put("s", "k", b"v", token=1),
        lambda: store.delete("s", "k", token=1),
        lambda: store.apply("s", [fencing.Put("k", b"v")], token=1),
        lambda: store.execute("s", fencing.Put("k", b"v"), token=1),
        lambda: store.execute("s", fencing.Delete("k"), token=1),
        lambda: store.etcd_check("s", token=1),
        lambda: store.claim("s", token=1),
        lambda: store.get("s", "k"),
        lambda: store.list("s"),
        lambda: store.fence_of("s"),
        lambda: store.status("s"),
        lambda: store.retire("s"),
        lambda: store.advance_clock(1),
        lambda: _enter(keeper),
        lambda: _enter(store.keep_alive(lease)),
    ]
    for call in calls:
        with pytest.raises(fencing.ClosedError):
            call()
    # Argument errors still come first, as in every face.
    with pytest.raises(fencing.InvalidArgumentError):
        store.put("s", "k", b"v", token=0)
    assert store.metrics()["writes_accepted"] == 0
    assert f'fencing_writes_accepted_total{{store="{store.location}"}} 0\n' in store.metrics_text()


# --- batches: collected no further than the limit ---


def counted_deletes(most: int = 20 * fencing.MAX_BATCH_OPS) -> "Tuple[Iterator[fencing.Delete], List[int]]":
    """An endless iterable of deletes, and how many were taken from it (it
    raises once far past the limit, so that a batch collected to the end
    fails the test instead of filling the memory)."""
    taken = [0]

    def endless() -> Iterator[fencing.Delete]:
        while True:
            taken[0] += 1
            if taken[0] > most:
                raise RuntimeError("the batch was still being collected, far past the limit")
            yield fencing.Delete("k")

    return endless(), taken


def test_an_endless_batch_is_refused_one_past_the_limit(mem: fencing.Store) -> None:
    import asyncio

    import fencing.aio

    ops, taken = counted_deletes()
    with pytest.raises(fencing.InvalidArgumentError, match="over the limit"):
        mem.apply("s", ops, token=1)
    assert taken[0] == fencing.MAX_BATCH_OPS + 1
    with mem.lease("held", holder="a", ttl=60) as lease:
        ops, taken = counted_deletes()
        with pytest.raises(fencing.InvalidArgumentError, match="over the limit"):
            lease.apply(ops)
        assert taken[0] == fencing.MAX_BATCH_OPS + 1

    async def main() -> None:
        store = fencing.aio.Store(mem)
        ops, taken = counted_deletes()
        with pytest.raises(fencing.InvalidArgumentError, match="over the limit"):
            await store.apply("s", ops, token=1)
        assert taken[0] == fencing.MAX_BATCH_OPS + 1
        async with store.lease("aio-held", holder="a", ttl=60) as held:
            ops, taken = counted_deletes()
            with pytest.raises(fencing.InvalidArgumentError, match="over the limit"):
                await held.apply(ops)
            assert taken[0] == fencing.MAX_BATCH_OPS + 1

    asyncio.run(asyncio.wait_for(main(), 60))
    assert mem.fence_of("s") == 0


# --- a timedelta: its own fields, whatever a subclass says ---


class LyingDelta(datetime.timedelta):
    """A timedelta whose ``days`` attribute lies (huge: ``days * 86400``
    would overflow 64 bits)."""

    @property
    def days(self) -> int:  # type: ignore[override]
        return 2**62


def test_a_timedelta_subclass_is_read_by_its_real_fields(mem: fencing.Store) -> None:
    lease = mem.acquire("s", holder="a", ttl=LyingDelta(seconds=30))
    assert lease.ttl == 30.0
    assert mem.renew(lease, ttl=LyingDelta(seconds=40)).ttl == 40.0
    mem.advance_clock(LyingDelta(seconds=41))
    assert mem.status("s").lease is None
    with pytest.raises(fencing.InvalidArgumentError):
        mem.acquire("s", holder="a", ttl=LyingDelta(days=367))
    with pytest.raises(fencing.InvalidArgumentError):
        mem.acquire("s", holder="a", ttl=LyingDelta(seconds=-1))
