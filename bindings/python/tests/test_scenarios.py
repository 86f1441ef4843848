"""Replays every shared scenario file (tests/scenarios/*.json) through the
Python API, on ``memory:``, on ``sqlite:`` (a fresh file each), on
``postgres://`` ($FENCING_TEST_PG_URL, a fresh schema each) and on
``etcd://`` ($FENCING_TEST_ETCD_CLUSTER, a fresh key prefix each).

The runner follows the rules of the Rust reference runner
(tests/runner/src/lib.rs) and of tests/scenarios/README.md: how arguments are
read, how each result and error is rendered, and the subset comparison.
Arguments go to the binding as a Python caller would pass them (tokens as
ints, durations as timedeltas, values as bytes), so the binding's own
conversions are what accepts or refuses them.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
from typing import Any, Dict, List, Optional, Union

import pytest

import fencing

# The repository root: $FENCING_REPO_ROOT, else three levels above tests/.
ROOT = pathlib.Path(os.environ.get("FENCING_REPO_ROOT") or pathlib.Path(__file__).parents[3])
SCENARIO_DIR = ROOT.resolve() / "tests" / "scenarios"
SCENARIOS = sorted(SCENARIO_DIR.glob("*.json"))

Json = Any


class RunnerError(Exception):
    """The scenario file is malformed (not an outcome of the operation)."""


# ----- reading arguments (the Rust runner's `Args`) -----


def text(v: Json) -> Optional[str]:
    """A string field: literal text, or {"repeat": "ab", "count": 3}."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        unit, count = v.get("repeat"), v.get("count")
        if isinstance(unit, str) and isinstance(count, int) and not isinstance(count, bool):
            if count >= 0:
                return unit * count
    return None


class Args:
    def __init__(self, step: Dict[str, Json]) -> None:
        self.step = step

    def string(self, name: str) -> str:
        s = text(self.step.get(name))
        if s is None:
            raise RunnerError(f"missing string {name!r}")
        return s

    def optional_string(self, name: str) -> Any:
        """None when absent; a non-string goes to the binding, which refuses it."""
        v = self.step.get(name)
        s = text(v)
        return s if s is not None else v

    def decimal(self, name: str) -> Optional[int]:
        """A token-domain number, written as canonical decimal text."""
        v = self.step.get(name)
        if v is None:
            return None
        if isinstance(v, str):
            return fencing.parse_token(v)
        raise fencing.InvalidArgumentError(f"{name} must be decimal text, got {v!r}")

    def token(self, name: str) -> int:
        # "0" parses to 0, which the binding refuses as a token.
        v = self.step.get(name)
        if isinstance(v, str):
            return fencing.parse_token(v)
        raise fencing.InvalidArgumentError(f"{name} must be a token, got {v!r}")

    def ms(self, name: str) -> datetime.timedelta:
        """Milliseconds as a JSON integer; negative ones reach the binding."""
        v = self.step.get(name)
        if v is None:
            raise fencing.InvalidArgumentError(f"missing {name}")
        if isinstance(v, int) and not isinstance(v, bool):
            return datetime.timedelta(milliseconds=v)
        raise fencing.InvalidArgumentError(f"{name} must be whole milliseconds, got {v!r}")

    def fence(self) -> Dict[str, Any]:
        return {
            "token": self.token("token"),
            "seq": self.decimal("seq"),
            "holder": self.optional_string("holder"),
        }

    def value(self) -> bytes:
        return value_of(self.step)

    def ops(self) -> List[Union[fencing.Put, fencing.Delete]]:
        items = self.step.get("ops")
        if not isinstance(items, list):
            raise fencing.InvalidArgumentError("ops must be a list")
        ops: List[Union[fencing.Put, fencing.Delete]] = []
        for item in items:
            a = Args(item)
            version = a.decimal("expected_version")
            put, delete = text(item.get("put")), text(item.get("delete"))
            if put is not None:
                ops.append(fencing.Put(put, a.value(), expected_version=version))
            elif delete is not None:
                ops.append(fencing.Delete(delete, expected_version=version))
            else:
                raise fencing.InvalidArgumentError(f"bad batch item {item!r}")
        return ops


def value_of(step: Dict[str, Json]) -> bytes:
    s = text(step.get("value"))
    if s is not None:
        return s.encode("utf-8")
    h = step.get("value_hex")
    if isinstance(h, str):
        if len(h) % 2 or h != h.lower():
            raise fencing.InvalidArgumentError("bad value_hex")
        try:
            return bytes.fromhex(h)
        except ValueError:
            raise fencing.InvalidArgumentError("bad value_hex") from None
    raise fencing.InvalidArgumentError("missing value")


# ----- rendering results (the Rust runner's render_*) -----


def ms_of(seconds: float) -> int:
    return round(seconds * 1000)


def render_lease(lease: fencing.Lease) -> Dict[str, Json]:
    return {
        "scope": lease.scope,
        "holder": lease.holder,
        "token": str(lease.token),
        "ttl_ms": ms_of(lease.ttl),
        "remaining_ms": ms_of(lease.remaining),
    }


def render_receipt(r: fencing.Receipt) -> Dict[str, Json]:
    return {"version": str(r.version), "token": str(r.token)}


def render_entry(e: Union[fencing.Entry, fencing.Object, None]) -> Dict[str, Json]:
    if e is None:
        return {"found": False}
    out: Dict[str, Json] = {
        "found": True,
        "value_hex": e.value.hex(),
        "value_len": len(e.value),
        "version": str(e.version),
        "token": str(e.token),
    }
    try:
        out["value"] = e.value.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return out


def render_metrics(store: fencing.Store) -> Dict[str, Json]:
    m = store.metrics()
    out: Dict[str, Json] = {k: str(v) for k, v in m.items() if k not in ("rejections", "call_durations")}
    out["rejections"] = [
        {
            "code": r["code"],
            "scope": r["scope"],
            "key": r["key"],
            "presented": str(r["presented"]),
            "current": str(r["current"]),
            "holder": r["holder"],
        }
        for r in m["rejections"]
    ]
    return out


def render_error(e: fencing.FencingError) -> Dict[str, Json]:
    out: Dict[str, Json] = {"code": e.code}
    if isinstance(e, fencing.StaleTokenError):
        out.update(scope=e.scope, presented=str(e.presented), current=str(e.current))
    elif isinstance(e, fencing.SequenceError):
        out.update(presented=str(e.presented), last=str(e.last))
    elif isinstance(e, fencing.VersionMismatchError):
        out.update(expected=str(e.expected), actual=str(e.actual))
    elif isinstance(e, fencing.NotFoundError):
        out.update(scope=e.scope, key=e.key)
    elif isinstance(e, fencing.LeaseHeldError):
        out.update(holder=e.holder, token=str(e.token), remaining_ms=ms_of(e.remaining))
    elif isinstance(e, fencing.LeaseLostError):
        out.update(
            current_token=None if e.current_token is None else str(e.current_token),
            current_holder=e.current_holder,
        )
    elif isinstance(e, fencing.BackendError):
        out.update(kind=e.kind)
    return out


# ----- comparison (the Rust runner's `subset`) -----


def same(want: Json, got: Json) -> bool:
    """JSON equality: a bool is not a number, 1 is not 1.0."""
    return type(want) is type(got) and want == got


def subset(want: Json, got: Json, path: str = "") -> None:
    if isinstance(want, dict) and isinstance(got, dict):
        for k, wv in want.items():
            if k in got:
                subset(wv, got[k], f"{path}.{k}")
            elif wv is not None:
                raise AssertionError(f"{path}.{k}: missing, expected {wv!r}")
        return
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (wv, gv) in enumerate(zip(want, got)):
            subset(wv, gv, f"{path}[{i}]")
        return
    if not same(want, got):
        raise AssertionError(f"{path or 'value'}: expected {want!r}, got {got!r}")


# ----- running -----


class Objects:
    """The scenario's one ``memory:`` objects handle, opened by its first
    ``object_*`` step that needs it."""

    def __init__(self) -> None:
        self._objects: Optional[fencing.Objects] = None

    def handle(self) -> fencing.Objects:
        if self._objects is None:
            self._objects = fencing.open_objects("memory:")
        return self._objects

    def close(self) -> None:
        if self._objects is not None:
            self._objects.close()


def execute_object(objects: Objects, step: Dict[str, Json]) -> Json:
    """The fenced objects' steps (``object_*``), beside the store."""
    op = step.get("op")
    a = Args(step)
    if op == "object_open":
        fencing.open_objects(a.string("url")).close()
        return {}
    path = a.string("path")
    if op == "object_put":
        fence = a.fence()
        version = a.decimal("expected_version")
        return render_receipt(objects.handle().put(path, a.value(), expected_version=version, **fence))
    if op == "object_delete":
        fence = a.fence()
        version = a.decimal("expected_version")
        return render_receipt(objects.handle().delete(path, expected_version=version, **fence))
    if op == "object_get":
        return render_entry(objects.handle().get(path))
    raise RunnerError(f"unknown op {op!r}")


def execute(store: fencing.Store, step: Dict[str, Json]) -> Json:
    op = step.get("op")
    a = Args(step)
    if op == "open":
        fencing.open(a.string("url")).close()
        return {}
    if op == "close":
        store.close()
        return {}
    if op == "next_token":
        return {"token": str(store.next_token(a.string("scope")))}
    if op == "advance_counter":
        scope = a.string("scope")
        return {"counter": str(store.advance_counter(scope, a.token("floor")))}
    if op == "acquire":
        scope, holder = a.string("scope"), a.string("holder")
        return render_lease(store.acquire(scope, holder=holder, ttl=a.ms("ttl_ms")))
    if op == "acquire_wait":
        scope, holder = a.string("scope"), a.string("holder")
        ttl = a.ms("ttl_ms")
        lease = store.acquire_wait(scope, holder=holder, ttl=ttl, timeout=a.ms("timeout_ms"))
        return render_lease(lease)
    if op == "renew":
        scope = a.string("scope")
        token = a.token("token")
        return render_lease(store.renew(scope, token=token, ttl=a.ms("ttl_ms")))
    if op == "release":
        scope = a.string("scope")
        return {"released": store.release(scope, token=a.token("token"))}
    if op in ("put", "delete"):
        scope, key = a.string("scope"), a.string("key")
        fence = a.fence()
        version = a.decimal("expected_version")
        if op == "put":
            r = store.put(scope, key, a.value(), expected_version=version, **fence)
        else:
            r = store.delete(scope, key, expected_version=version, **fence)
        return render_receipt(r)
    if op == "apply":
        scope = a.string("scope")
        fence = a.fence()
        receipts = store.apply(scope, a.ops(), **fence)
        return {"receipts": [render_receipt(r) for r in receipts]}
    if op == "claim":
        scope = a.string("scope")
        store.claim(scope, **a.fence())
        return {}
    if op == "get":
        scope, key = a.string("scope"), a.string("key")
        if step.get("token") is None:
            return render_entry(store.get(scope, key))
        fence = a.fence()
        # Reads ignore seq; the holder is recorded with a rejection.
        return render_entry(store.get(scope, key, token=fence["token"], holder=fence["holder"]))
    if op == "list":
        scope = a.string("scope")
        kwargs: Dict[str, Any] = {}
        after = a.optional_string("after")
        if after is not None:
            kwargs["after"] = after
        if step.get("limit") is not None:
            kwargs["limit"] = step["limit"]
        page = store.list(scope, **kwargs)
        return {"keys": page.keys, "next": page.next}
    if op == "fence_of":
        return {"fence": str(store.fence_of(a.string("scope")))}
    if op == "status":
        s = store.status(a.string("scope"))
        return {
            "counter": str(s.counter),
            "fence": str(s.fence),
            "lease": None if s.lease is None else render_lease(s.lease),
            "entries": str(s.entries),
        }
    if op == "retire":
        return {"retired": store.retire(a.string("scope"))}
    if op == "advance_clock":
        store.advance_clock(a.ms("ms"))
        return {}
    if op == "metrics":
        return render_metrics(store)
    raise RunnerError(f"unknown op {op!r}")


class WorkFailed(Exception):
    """The error a ``finish`` step's failed work raises inside the block."""


Holds = Dict[str, fencing.KeepAlive]


def hold(store: fencing.Store, holds: Holds, step: Dict[str, Json]) -> Json:
    """Enters a ``with store.lease(...)`` block, left open until ``finish``."""
    a = Args(step)
    scope, holder = a.string("scope"), a.string("holder")
    if scope in holds:
        raise RunnerError(f"{scope!r} is already held by an earlier hold step")
    keeper = store.lease(scope, holder=holder, ttl=a.ms("ttl_ms"))
    keeper.__enter__()
    holds[scope] = keeper
    return render_lease(keeper.lease)


def finish(holds: Holds, step: Dict[str, Json]) -> Json:
    """Leaves the hold's block, normally or by the work's exception: the
    context manager's own exit decides (docs/semantics.md, "Ending a held
    lease"). Released, the block's outcome stands: ``{released: true}``."""
    scope = Args(step).string("scope")
    work = step.get("work")
    if work not in ("ok", "failed"):
        raise RunnerError(f'"work" must be "ok" or "failed", not {work!r}')
    keeper = holds.pop(scope, None)
    if keeper is None:
        raise RunnerError(f"no hold step holds {scope!r}")
    error = WorkFailed("the work failed") if work == "failed" else None
    try:
        if error is None:
            keeper.__exit__(None, None, None)
        else:
            try:
                raise error
            except WorkFailed as e:
                if not keeper.__exit__(type(e), e, e.__traceback__):
                    raise
    except WorkFailed as e:
        assert e is error, e
    return {"released": True}


def run_step(
    store: fencing.Store,
    step: Dict[str, Json],
    holds: Optional[Holds] = None,
    objects: Optional[Objects] = None,
) -> None:
    holds = {} if holds is None else holds
    objects = Objects() if objects is None else objects
    op = step.get("op")
    try:
        if op == "hold":
            got = hold(store, holds, step)
        elif op == "finish":
            got = finish(holds, step)
        elif isinstance(op, str) and op.startswith("object_"):
            got = execute_object(objects, step)
        else:
            got = execute(store, step)
    except fencing.FencingError as e:
        if "error" not in step:
            raise AssertionError(f"unexpected error {e.code}: {e}") from e
        rendered = render_error(e)
        if step.get("op") == "finish":
            # The failed work's own exception, attached to the loss.
            rendered["cause"] = "work" if isinstance(e.__cause__, WorkFailed) else None
        try:
            subset(step["error"], rendered)
        except AssertionError as m:
            raise AssertionError(f"error {rendered}: {m}") from e
        return
    if "error" in step:
        raise AssertionError(f"expected error {step['error']}, got success {got}")
    if "expect" in step:
        try:
            subset(step["expect"], got)
        except AssertionError as m:
            raise AssertionError(f"result {got}: {m}") from None


def url_for(doc: Dict[str, Json], base: str) -> str:
    options = doc.get("options") or {}
    parts = []
    for k, v in options.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif not isinstance(v, str):
            raise RunnerError(f"option {k}: unsupported value {v!r}")
        parts.append(f"{k}={v}")
    if not parts:
        return base
    return f"{base}{'&' if '?' in base else '?'}{'&'.join(parts)}"


def run_scenario(path: pathlib.Path, base: str) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    steps = doc["steps"]
    store = fencing.open(url_for(doc, base))
    holds: Holds = {}
    objects = Objects()
    try:
        for i, step in enumerate(steps, 1):
            try:
                run_step(store, step, holds, objects)
            except AssertionError as e:
                raise AssertionError(f"{path.name} step {i} ({json.dumps(step)}): {e}") from None
    finally:
        for keeper in holds.values():
            try:
                keeper.release()
            except fencing.FencingError:
                pass
        objects.close()
        store.close()


def test_scenarios_are_found() -> None:
    assert SCENARIO_DIR.is_dir(), SCENARIO_DIR
    assert len(SCENARIOS) >= 50, f"only {len(SCENARIOS)} scenarios in {SCENARIO_DIR}"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_memory(path: pathlib.Path) -> None:
    run_scenario(path, "memory:")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_sqlite(path: pathlib.Path, tmp_path: pathlib.Path) -> None:
    run_scenario(path, f"sqlite:{tmp_path / 'scenario.db'}")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_postgres(path: pathlib.Path, pg_url: str) -> None:
    # A fresh schema per scenario (pg_url); scenario options follow with `&`.
    run_scenario(path, pg_url)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_etcd(path: pathlib.Path, etcd_url: str) -> None:
    # A fresh key prefix per scenario (etcd_url); scenario options follow with `?`.
    run_scenario(path, etcd_url)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_postgres_over_tls(path: pathlib.Path, pg_schema: str) -> None:
    # The TLS-only server (scripts/pg-tls), verified against its test CA.
    url = os.environ.get("FENCING_TEST_PG_TLS_URL", "")
    cert_dir = os.environ.get("FENCING_TEST_PG_TLS_DIR", "")
    if not (url and cert_dir):
        if os.environ.get("FENCING_REQUIRE_PG") == "1":
            pytest.fail("FENCING_REQUIRE_PG=1 but the TLS server is not set up", pytrace=False)
        pytest.skip("no TLS server: run the tests under `scripts/pg-tls run -- ...`")
    ca = pathlib.Path(cert_dir) / "ca.crt"
    run_scenario(path, f"{url}?schema={pg_schema}&sslmode=verify-full&sslrootcert={ca}")


# ----- the runner itself must be able to fail -----


def test_runner_detects_a_wrong_expectation() -> None:
    store = fencing.open("memory:")
    try:
        with pytest.raises(AssertionError, match="expected '2', got '1'"):
            run_step(store, {"op": "next_token", "scope": "s", "expect": {"token": "2"}})
        with pytest.raises(AssertionError, match="expected error"):
            run_step(store, {"op": "fence_of", "scope": "s", "error": {"code": "NOT_FOUND"}})
        with pytest.raises(AssertionError, match="unexpected error STALE_TOKEN"):
            run_step(store, {"op": "claim", "scope": "s", "token": "5"})
            run_step(store, {"op": "claim", "scope": "s", "token": "4"})
        with pytest.raises(AssertionError, match="current"):
            run_step(
                store,
                {
                    "op": "claim",
                    "scope": "s",
                    "token": "4",
                    "error": {"code": "STALE_TOKEN", "current": "4"},
                },
            )
        objects = Objects()
        run_step(store, {"op": "object_put", "path": "p", "value": "v", "token": "5"}, objects=objects)
        with pytest.raises(AssertionError, match="expected '4', got '5'"):
            run_step(store, {"op": "object_get", "path": "p", "expect": {"token": "4"}}, objects=objects)
        with pytest.raises(AssertionError, match="scope: expected 'q', got 'p'"):
            stale = {"op": "object_put", "path": "p", "value": "w", "token": "4"}
            run_step(store, {**stale, "error": {"code": "STALE_TOKEN", "scope": "q"}}, objects=objects)
        with pytest.raises(AssertionError, match="kind: expected 'busy', got 'unreachable'"):
            bad = {"op": "object_open", "url": "file:///nonexistent-fencing-dir/x"}
            run_step(store, {**bad, "error": {"code": "BACKEND", "kind": "busy"}})
        objects.close()
    finally:
        store.close()


def test_subset_is_strict_about_json_types() -> None:
    subset({"a": "1", "b": None}, {"a": "1"})
    for want, got in [(True, 1), (1, 1.0), ("1", 1), ([1], [1, 2])]:
        with pytest.raises(AssertionError):
            subset(want, got)

