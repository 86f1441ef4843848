"""The Python API: names, types, values and the fencing story, on both backends."""

from __future__ import annotations

import datetime
import importlib.metadata
import inspect
import os
import pathlib
import pickle

import pytest

import fencing
import fencing.aio


def test_version_matches_the_installed_distribution() -> None:
    assert fencing.__version__ == importlib.metadata.version("fencing")


def test_installed_as_a_typed_package() -> None:
    pkg = pathlib.Path(fencing.__file__).parent
    assert (pkg / "py.typed").is_file()
    assert (pkg / "_native.pyi").is_file()
    assert "site-packages" in pkg.parts


def test_every_public_name_has_a_docstring() -> None:
    missing = []
    for module in (fencing, fencing.aio):
        for name in module.__all__:
            obj = getattr(module, name)
            if name == "__version__" or isinstance(obj, int):
                continue
            if not (obj.__doc__ or "").strip():
                missing.append(f"{module.__name__}.{name}")
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") or attr in ("code",):
                        continue
                    if not (getattr(member, "__doc__", None) or "").strip():
                        missing.append(f"{module.__name__}.{name}.{attr}")
    assert missing == []


def test_constants() -> None:
    assert fencing.MAX_TOKEN == 2**63 - 1
    assert fencing.MAX_SCOPE_BYTES == 256
    assert fencing.MAX_HOLDER_BYTES == 256
    assert fencing.MAX_KEY_BYTES == 1024
    assert fencing.MAX_VALUE_BYTES == 1 << 20
    assert fencing.MAX_BATCH_OPS == 1000
    assert fencing.MAX_LIST_LIMIT == 1000


def test_parse_token() -> None:
    assert fencing.parse_token("42") == 42
    assert fencing.parse_token("0") == 0
    assert fencing.parse_token("9007199254740993") == 2**53 + 1
    assert fencing.parse_token("9223372036854775807") == fencing.MAX_TOKEN
    for bad in ["", "01", "+1", "-1", " 1", "1 ", "1e3", "1.0", "0x10", "١", "9223372036854775808"]:
        with pytest.raises(fencing.InvalidArgumentError):
            fencing.parse_token(bad)
    for wrong in [42, b"42", None]:
        with pytest.raises(fencing.InvalidArgumentError):
            fencing.parse_token(wrong)  # type: ignore[arg-type]


def test_exception_tree() -> None:
    codes = {
        fencing.StaleTokenError: "STALE_TOKEN",
        fencing.SequenceOutOfOrderError: "SEQUENCE_OUT_OF_ORDER",
        fencing.VersionMismatchError: "VERSION_MISMATCH",
        fencing.NotFoundError: "NOT_FOUND",
        fencing.LeaseHeldError: "LEASE_HELD",
        fencing.LeaseLostError: "LEASE_LOST",
        fencing.TokenExhaustedError: "TOKEN_EXHAUSTED",
        fencing.InvalidArgumentError: "INVALID_ARGUMENT",
        fencing.TimeoutError: "TIMEOUT",
        fencing.BackendError: "BACKEND",
        fencing.ClosedError: "CLOSED",
    }
    for cls, code in codes.items():
        assert issubclass(cls, fencing.FencingError)
        assert cls.code == code
        assert cls.__module__ == "fencing"
    assert issubclass(fencing.InvalidArgumentError, ValueError)
    assert issubclass(fencing.TimeoutError, TimeoutError)
    assert fencing.TimeoutError is not TimeoutError


def test_exceptions_can_be_built_by_callers() -> None:
    e = fencing.StaleTokenError("fenced off", scope="s", presented=3, current=4)
    assert (str(e), e.message, e.scope, e.presented, e.current) == ("fenced off", "fenced off", "s", 3, 4)
    lost = fencing.LeaseLostError("gone")
    assert (lost.scope, lost.current_token, lost.current_holder) == ("", None, None)
    held = fencing.LeaseHeldError(holder="h", token=2, remaining=1.5)
    assert (held.holder, held.token, held.remaining, held.code) == ("h", 2, 1.5, "LEASE_HELD")
    t = fencing.TimeoutError("late")
    assert str(t) == "late" and isinstance(t, TimeoutError)


def test_raised_errors_carry_message_args_and_details(mem: fencing.Store) -> None:
    mem.acquire("s", holder="a", ttl=5)
    with pytest.raises(fencing.LeaseHeldError) as held:
        mem.acquire("s", holder="b", ttl=5)
    e = held.value
    assert e.args == (str(e),) and e.message == str(e) and "held by" in str(e)
    assert vars(e) == {"scope": "s", "holder": "a", "token": 1, "remaining": 5.0}
    with pytest.raises(fencing.TimeoutError) as timeout:
        mem.acquire_wait("s", holder="b", ttl=5, timeout=0)
    assert timeout.value.args == ("timed out waiting for the lease",)
    with pytest.raises(fencing.InvalidArgumentError) as bad:
        mem.fence_of("")
    assert "scope must not be empty" in str(bad.value)


def test_exceptions_pickle_with_their_details(mem: fencing.Store) -> None:
    mem.claim("s", token=5)
    with pytest.raises(fencing.StaleTokenError) as info:
        mem.claim("s", token=4)
    e = pickle.loads(pickle.dumps(info.value))
    assert type(e) is fencing.StaleTokenError
    assert (e.scope, e.presented, e.current, e.code) == ("s", 4, 5, "STALE_TOKEN")
    assert str(e) == str(info.value)


def test_paused_worker_story(store: fencing.Store) -> None:
    a = store.acquire("report", holder="worker-a", ttl=10.0)
    assert isinstance(a, fencing.Lease)
    assert (a.scope, a.holder, a.token, a.ttl, a.remaining) == ("report", "worker-a", 1, 10.0, 10.0)
    assert isinstance(a.expires_at, datetime.datetime)
    assert a.expires_at.tzinfo is datetime.timezone.utc
    r = store.put("report", "body", b"A's draft", token=a.token)
    assert (r.version, r.token) == (1, 1)

    store.advance_clock(11)  # A pauses past its expiry
    b = store.acquire("report", holder="worker-b", ttl=datetime.timedelta(seconds=10))
    assert b.token == 2
    assert store.fence_of("report") == 2  # eager fencing: A is shut out already
    with pytest.raises(fencing.StaleTokenError) as info:
        store.put("report", "body", b"A's report", token=a.token)
    assert (info.value.scope, info.value.presented, info.value.current) == ("report", 1, 2)
    assert info.value.code == "STALE_TOKEN"

    r = store.put("report", "body", b"B's report", token=b.token)
    assert (r.version, r.token) == (2, 2)
    e = store.get("report", "body")
    assert isinstance(e, fencing.Entry)
    assert (e.key, e.value, e.version, e.token) == ("body", b"B's report", 2, 2)
    assert type(e.value) is bytes
    # Retrying the stale write can never succeed.
    with pytest.raises(fencing.StaleTokenError):
        store.put("report", "body", b"A's report", token=a.token)
    assert store.get("report", "body") == e


def test_results_compare_and_print(mem: fencing.Store) -> None:
    lease = mem.acquire("s", holder="h", ttl=5)
    assert mem.status("s").lease == lease
    assert repr(lease) == "Lease(scope='s', holder='h', token=1, ttl=5.0, remaining=5.0)"
    r = mem.put("s", "k", b"secret", token=1)
    assert r == mem.put("s", "k2", b"x", token=1)  # same version and token
    assert r != mem.put("s", "k2", b"x", token=1)  # version 2 now
    assert r != "Receipt"
    assert hash(r) == hash(mem.put("s", "k3", b"y", token=1))
    assert repr(r) == "Receipt(version=1, token=1)"
    e = mem.get("s", "k")
    assert e is not None
    assert "secret" not in repr(e)  # payloads stay out of logs
    assert repr(e) == "Entry(key='k', value=<6 bytes>, version=1, token=1)"
    assert repr(fencing.Put("k", b"v", expected_version=0)) == "Put('k', <1 bytes>, expected_version=0)"
    assert repr(fencing.Delete("k")) == "Delete('k')"
    assert fencing.Put("k", b"v") == fencing.Put("k", bytearray(b"v"))
    assert fencing.Put("k", b"v") != fencing.Put("k", b"w")
    assert repr(mem) == "<fencing.Store memory: open>"


def test_receipts_and_versions(store: fencing.Store) -> None:
    t = store.next_token("s")
    assert store.put("s", "k", b"1", token=t).version == 1
    assert store.put("s", "k", bytearray(b"2"), token=t).version == 2
    assert store.put("s", "k", memoryview(b"3"), token=t, expected_version=2).version == 3
    with pytest.raises(fencing.VersionMismatchError) as info:
        store.put("s", "k", b"4", token=t, expected_version=2)
    assert (info.value.expected, info.value.actual) == (2, 3)
    assert store.delete("s", "k", token=t).version == 0
    assert store.get("s", "k") is None
    with pytest.raises(fencing.NotFoundError) as nf:
        store.delete("s", "k", token=t)
    assert (nf.value.scope, nf.value.key) == ("s", "k")
    assert store.put("s", "k", b"", token=t, expected_version=0).version == 1
    e = store.get("s", "k")
    assert e is not None and e.value == b""


def test_seq_orders_writes_within_a_token(store: fencing.Store) -> None:
    store.put("s", "k", b"1", token=3, seq=1)
    store.put("s", "k", b"2", token=3, seq=5, holder="w")
    with pytest.raises(fencing.SequenceError) as info:
        store.put("s", "k", b"3", token=3, seq=5)
    assert (info.value.presented, info.value.last) == (5, 5)
    e = store.get("s", "k")
    assert e is not None and e.value == b"2"


def test_apply_is_all_or_nothing(store: fencing.Store) -> None:
    store.put("s", "a", b"old", token=1)
    with pytest.raises(fencing.NotFoundError):
        store.apply("s", [fencing.Put("a", b"new"), fencing.Delete("missing")], token=2)
    e = store.get("s", "a")
    assert e is not None and e.value == b"old"
    assert store.fence_of("s") == 1  # the failed batch did not move the fence
    receipts = store.apply(
        "s",
        (op for op in [fencing.Put("a", b"new"), fencing.Put("b", b"x"), fencing.Delete("b")]),
        token=2,
    )
    assert [(r.version, r.token) for r in receipts] == [(2, 2), (1, 2), (0, 2)]
    assert store.fence_of("s") == 2
    assert fencing.Put("a", b"v", expected_version=3).expected_version == 3
    assert fencing.Delete("a").expected_version is None
    assert fencing.Put("a", memoryview(b"xyz")[1:]).value == b"yz"


def test_execute_runs_one_op_with_the_checks_of_put_and_delete(store: fencing.Store) -> None:
    t = store.next_token("s")
    first = store.execute("s", fencing.Put("k", b"1"), token=t)
    assert isinstance(first, fencing.Receipt) and (first.version, first.token) == (1, t)
    put = store.execute("s", fencing.Put("k", memoryview(b"2"), expected_version=1), token=t)
    assert (put.version, put.token) == (2, t)
    with pytest.raises(fencing.VersionMismatchError) as mismatch:
        store.execute("s", fencing.Put("k", b"3", expected_version=1), token=t)
    assert (mismatch.value.expected, mismatch.value.actual) == (1, 2)
    with pytest.raises(fencing.VersionMismatchError):
        store.execute("s", fencing.Delete("k", expected_version=1), token=t)
    e = store.get("s", "k")
    assert e is not None and (e.value, e.version) == (b"2", 2)
    # seq and holder go with the fence, as put's do.
    store.execute("s", fencing.Put("k", b"4"), token=t, seq=5, holder="w")
    with pytest.raises(fencing.SequenceError) as seq:
        store.execute("s", fencing.Put("k", b"5"), token=t, seq=5)
    assert (seq.value.presented, seq.value.last) == (5, 5)
    deleted = store.execute("s", fencing.Delete("k", expected_version=3), token=t)
    assert (deleted.version, deleted.token) == (0, t)
    assert store.get("s", "k") is None
    with pytest.raises(fencing.NotFoundError) as nf:
        store.execute("s", fencing.Delete("k"), token=t)
    assert (nf.value.scope, nf.value.key) == ("s", "k")
    # A newer token shuts the old one out.
    newer = store.next_token("s")
    store.execute("s", fencing.Put("k", b"new"), token=newer)
    with pytest.raises(fencing.StaleTokenError) as stale:
        store.execute("s", fencing.Put("k", b"late"), token=t, holder="old")
    assert (stale.value.presented, stale.value.current) == (t, newer)
    e = store.get("s", "k")
    assert e is not None and (e.value, e.token) == (b"new", newer)
    last = store.metrics()["rejections"][-1]
    assert (last["code"], last["key"], last["presented"], last["holder"]) == ("STALE_TOKEN", "k", t, "old")
    # Timed as the put or delete it is: 7 puts and 3 deletes above.
    calls = store.metrics()["call_durations"]
    assert (calls["put"]["count"], calls["delete"]["count"], calls["apply"]["count"]) == (7, 3, 0)


def test_backend_kind(sqlite_url: str) -> None:
    for url, kind in [("memory:", "memory"), ("memory:?clock=manual", "memory"), (sqlite_url, "sqlite")]:
        with fencing.open(url) as s:
            assert s.backend_kind == kind
            with pytest.raises(AttributeError):
                s.backend_kind = "etcd"  # type: ignore[misc]
    assert s.closed and s.backend_kind == "sqlite"  # known without the store


def test_claim_then_read_with_token(store: fencing.Store) -> None:
    store.put("s", "k", b"v", token=1)
    store.claim("s", token=2)
    with pytest.raises(fencing.StaleTokenError):
        store.get("s", "k", token=1, holder="old")
    e = store.get("s", "k", token=2)
    assert e is not None and e.value == b"v"
    assert store.fence_of("s") == 2
    rej = store.metrics()["rejections"]
    assert [(r["code"], r["presented"], r["current"], r["holder"]) for r in rej] == [
        ("STALE_TOKEN", 1, 2, "old")
    ]
    assert isinstance(rej[0]["at"], datetime.datetime)


def test_large_tokens_round_trip_exactly(sqlite_url: str) -> None:
    # Jumps past 2**48 need a store whose jumps are unbounded
    # (docs/semantics.md, "Failover").
    with pytest.raises(fencing.InvalidArgumentError):
        fencing.open(sqlite_url).advance_counter("s", 2**53)
    store = fencing.open(sqlite_url + "?jumps=unbounded")
    assert store.advance_counter("s", 2**53) == 2**53
    t = store.next_token("s")
    assert t == 2**53 + 1
    r = store.put("s", "k", b"v", token=t)
    assert r.token == 2**53 + 1
    store.put("m", "k", b"v", token=fencing.MAX_TOKEN)
    e = store.get("m", "k")
    assert e is not None and e.token == 2**63 - 1
    assert store.fence_of("m") == fencing.MAX_TOKEN


def test_token_exhaustion_changes_nothing() -> None:
    store = fencing.open("memory:?jumps=unbounded")
    assert store.advance_counter("s", fencing.MAX_TOKEN) == fencing.MAX_TOKEN
    with pytest.raises(fencing.TokenExhaustedError):
        store.next_token("s")
    with pytest.raises(fencing.TokenExhaustedError):
        store.acquire("s", holder="h", ttl=1)
    st = store.status("s")
    assert (st.counter, st.lease) == (fencing.MAX_TOKEN, None)


def test_leases(store: fencing.Store) -> None:
    a = store.acquire("s", holder="a", ttl=2)
    with pytest.raises(fencing.LeaseHeldError) as held:
        store.acquire("s", holder="b", ttl=2)
    assert (held.value.holder, held.value.token, held.value.remaining) == ("a", 1, 2.0)
    a2 = store.renew(a, ttl=5)
    assert (a2.token, a2.ttl, a2.remaining) == (1, 5.0, 5.0)
    assert store.renew(a2).ttl == 5.0
    assert store.renew("s", token=1, ttl=3).remaining == 3.0
    store.advance_clock(3)
    with pytest.raises(fencing.LeaseLostError) as lost:
        store.renew(a)
    assert (lost.value.scope, lost.value.current_token, lost.value.current_holder) == ("s", None, None)
    b = store.acquire("s", holder="b", ttl=2)
    with pytest.raises(fencing.LeaseLostError) as lost:
        store.renew(a)
    assert (lost.value.current_token, lost.value.current_holder) == (2, "b")
    assert store.release(a) is False  # never touches the newer lease
    assert store.release("s", token=b.token) is True
    assert store.release(b) is False
    c = store.acquire_wait("s", holder="c", ttl=1, timeout=0)
    assert c.token == 3
    with pytest.raises(fencing.TimeoutError) as to:
        store.acquire_wait("s", holder="d", ttl=1, timeout=0.01)
    assert isinstance(to.value, TimeoutError)
    with pytest.raises(fencing.LeaseHeldError):
        store.retire("s")
    store.release(c)
    assert store.retire("s") is True
    assert store.retire("s") is False


def test_list_pages(store: fencing.Store) -> None:
    for k in ["b", "a", "c", "é"]:
        store.put("s", k, b"", token=1)
    p = store.list("s", limit=2)
    assert (p.keys, p.next) == (["a", "b"], "b")
    p = store.list("s", after=p.next, limit=2)
    assert (p.keys, p.next) == (["c", "é"], None)
    assert store.list("s").keys == ["a", "b", "c", "é"]
    assert store.list("s") == store.list("s", limit=100)
    st = store.status("s")
    assert (st.counter, st.fence, st.entries, st.lease) == (0, 1, 4, None)


def test_metrics(store: fencing.Store) -> None:
    lease = store.acquire("s", holder="a", ttl=5)
    store.put("s", "k", b"v", token=lease.token)
    store.claim("s", token=7)
    with pytest.raises(fencing.StaleTokenError):
        store.put("s", "k", b"w", token=lease.token, holder="a")
    m = store.metrics()
    assert m["tokens_issued"] == 1
    assert m["leases_acquired"] == 1
    assert m["writes_accepted"] == 1
    assert m["stale_rejections"] == 1
    assert set(m) >= {"renewals", "pauses_detected", "longest_pause_ms", "rejections"}
    [rej] = m["rejections"]
    assert rej["scope"] == "s" and rej["key"] == "k" and rej["presented"] == 1 and rej["current"] == 7
    text = store.metrics_text()
    label = '{store="%s"}' % store.location
    assert f"fencing_writes_accepted_total{label} 1\n" in text
    assert f"fencing_stale_rejections_total{label} 1\n" in text
    assert f"fencing_longest_pause_seconds{label} 0\n" in text
    assert "k" not in [line.split()[0] for line in text.splitlines() if not line.startswith("#")]


def test_close_and_context_manager(sqlite_url: str) -> None:
    with fencing.Store(sqlite_url) as s:
        assert not s.closed
        s.put("s", "k", b"v", token=1)
    assert s.closed
    assert repr(s) == f"<fencing.Store {s.location} closed>"
    assert s.location.startswith("sqlite:/")
    with pytest.raises(fencing.ClosedError):
        s.get("s", "k")
    s.close()  # twice is harmless
    # The data is durable: another handle sees it.
    with fencing.open(sqlite_url) as again:
        e = again.get("s", "k")
        assert e is not None and e.value == b"v"
        assert again.fence_of("s") == 1


def test_sqlite_handles_share_one_file(sqlite_url: str) -> None:
    with fencing.open(sqlite_url) as a, fencing.open(sqlite_url) as b:
        la = a.acquire("s", holder="a", ttl=60)
        with pytest.raises(fencing.LeaseHeldError) as held:
            b.acquire("s", holder="b", ttl=60)
        assert held.value.holder == "a"
        b.claim("s", token=la.token + 1)
        with pytest.raises(fencing.StaleTokenError):
            a.put("s", "k", b"v", token=la.token)


def test_open_errors(tmp_path: pathlib.Path) -> None:
    with pytest.raises(fencing.InvalidArgumentError):
        fencing.open("nosuch:x")
    with pytest.raises(fencing.InvalidArgumentError):
        fencing.open("memory:?color=red")
    with pytest.raises(fencing.BackendError):
        fencing.open(f"sqlite:{tmp_path / 'missing-dir' / 'x.db'}")
    not_sqlite = tmp_path / "not.db"
    not_sqlite.write_bytes(b"this is not a database file, just text" * 100)
    with pytest.raises(fencing.BackendError):
        fencing.open(f"sqlite:{not_sqlite}")
    assert not_sqlite.read_bytes() == b"this is not a database file, just text" * 100


def test_failover_makes_every_earlier_token_stale(sqlite_url: str) -> None:
    with fencing.open(sqlite_url) as store:
        t = store.next_token("s")
        store.put("s", "k", b"v", token=t)
        # The store's ceiling (1 + 2**32 after token 1) is below its jump
        # limit (2**48 before any step): the base is the step above the limit.
        base = 2**48 + fencing.FAILOVER_STEP
        assert store.failover() == base
        with pytest.raises(fencing.StaleTokenError):
            store.put("s", "k", b"late", token=t)
        assert store.next_token("s") == base + 1
        assert store.fence_of("never-seen") == base


def test_a_relative_sqlite_path_is_shown_resolved(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two processes in two directories that open sqlite:fencing.db open two
    # stores: the store says which file it is.
    monkeypatch.chdir(tmp_path)
    here = os.path.join(os.getcwd(), "fencing.db")
    with fencing.Store("sqlite:fencing.db") as s:
        assert s.location == f"sqlite:{here}"
        assert repr(s) == f"<fencing.Store sqlite:{here} open>"
    assert fencing.Store("memory:").location == "memory:"
