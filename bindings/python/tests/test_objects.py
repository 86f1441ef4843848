"""Fenced objects (docs/objects.md): ``fencing.open_objects`` and
``fencing.aio.open_objects`` on ``memory:``, on ``file:///`` a fresh
directory, and on S3 when ``FENCING_TEST_S3_BUCKET`` names a bucket (on Azure when
``FENCING_TEST_AZ_CONTAINER`` names a container)
(``scripts/s3-server run -- ...``; skipped without one, failed when
``FENCING_REQUIRE_S3=1``, as in CI)."""

from __future__ import annotations

import asyncio
import inspect
import os
import pathlib
import threading
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import fencing
import fencing.aio

PATH = "reports/today.csv"


@pytest.fixture
def file_url(tmp_path: pathlib.Path) -> str:
    """``file:///`` a fresh, empty directory."""
    root = tmp_path / "objects"
    root.mkdir()
    return f"file://{root}"


# Each cloud: the variable its server's script sets (the bucket or container),
# the variable that makes a missing server a failure (CI), and the script.
CLOUDS = {
    "s3": ("FENCING_TEST_S3_BUCKET", "FENCING_REQUIRE_S3", "scripts/s3-server"),
    "az": ("FENCING_TEST_AZ_CONTAINER", "FENCING_REQUIRE_AZ", "scripts/azure-server"),
}


@pytest.fixture(params=sorted(CLOUDS))
def cloud_url(request: pytest.FixtureRequest) -> str:
    """A fresh prefix in the test bucket (container) of a real S3 or Azure server."""
    scheme = request.param
    var, require, script = CLOUDS[scheme]
    name = os.environ.get(var, "")
    if name:
        return f"{scheme}://{name}/py-{uuid.uuid4().hex}"
    if os.environ.get(require) == "1":
        pytest.fail(f"{require}=1 but {var} is not set: run under {script} run", pytrace=False)
    pytest.skip(f"no {scheme}:// server: run the tests under `{script} run -- ...`")


def stale_holder_sequence(url: str) -> None:
    """Worker B (token 2) writes; worker A, paused with token 1, is refused,
    each through a handle of its own; B's object stays."""
    with fencing.open_objects(url) as b, fencing.open_objects(url) as a:
        assert a.get(PATH) is None
        r = b.put(PATH, b"a,b\n", token=2, holder="worker-b")
        assert (r.version, r.token) == (1, 2)
        with pytest.raises(fencing.StaleTokenError) as info:
            a.put(PATH, b"stale", token=1, holder="worker-a")
        e = info.value
        assert (e.code, e.scope, e.presented, e.current) == ("STALE_TOKEN", PATH, 1, 2)
        with pytest.raises(fencing.StaleTokenError):
            a.delete(PATH, token=1)
        for reader in (a, b):
            now = reader.get(PATH)
            assert now is not None
            assert (now.value, now.token, now.version) == (b"a,b\n", 2, 1)
    # A handle opened later reads what was stored.
    with fencing.open_objects(url) as later:
        assert later.get(PATH) == now


def test_a_stale_holder_is_refused_on_files(file_url: str) -> None:
    stale_holder_sequence(file_url)


def test_a_stale_holder_is_refused_in_the_clouds(cloud_url: str) -> None:
    stale_holder_sequence(cloud_url)


@pytest.fixture(params=["memory", "file"])
def objects(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[fencing.Objects]:
    """A fresh objects handle on each local store."""
    url = "memory:" if request.param == "memory" else f"file://{tmp_path}"
    with fencing.open_objects(url) as o:
        yield o


def test_get_of_a_missing_path_is_none(objects: fencing.Objects) -> None:
    assert objects.get("never/written") is None


def test_delete_then_get(objects: fencing.Objects) -> None:
    with pytest.raises(fencing.NotFoundError) as missing:
        objects.delete("d", token=1)
    assert (missing.value.scope, missing.value.key) == ("d", "d")
    assert objects.put("d", b"x", token=4).version == 1
    gone = objects.delete("d", token=4, expected_version=1)
    assert (gone.version, gone.token) == (0, 4)
    assert objects.get("d") is None
    # The path keeps its fence; versions never restart.
    with pytest.raises(fencing.StaleTokenError):
        objects.put("d", b"y", token=3)
    assert objects.put("d", b"z", token=4, expected_version=0).version == 3


def test_expected_version_and_seq_are_the_stores_rules(objects: fencing.Objects) -> None:
    objects.put("v", bytearray(b"1"), token=2, expected_version=0)
    with pytest.raises(fencing.VersionMismatchError) as mismatch:
        objects.put("v", b"2", token=2, expected_version=0)
    assert (mismatch.value.expected, mismatch.value.actual) == (0, 1)
    objects.put("v", memoryview(b"2"), token=2, seq=5)
    with pytest.raises(fencing.SequenceOutOfOrderError) as seq:
        objects.put("v", b"3", token=2, seq=4)
    assert (seq.value.presented, seq.value.last) == (4, 5)
    got = objects.get("v")
    assert got is not None and (got.value, got.version, got.token) == (b"2", 2, 2)
    assert objects.put("v", b"", token=fencing.MAX_TOKEN).token == fencing.MAX_TOKEN


def test_values_and_close(tmp_path: pathlib.Path) -> None:
    o = fencing.Objects(f"file://{tmp_path}")
    assert repr(o) == "<fencing.Objects open>" and not o.closed
    first = o.put("p", b"\x00\xff", token=7)
    assert isinstance(first, fencing.Receipt) and (first.version, first.token) == (1, 7)
    got = o.get("p")
    assert isinstance(got, fencing.Object)
    assert repr(got) == "Object(value=<2 bytes>, version=1, token=7)"
    assert got == o.get("p") and got != object()
    o.put("p", b"\x00\xff", token=7)
    assert o.get("p") != got  # the same bytes and token, a newer version
    o.close()
    o.close()
    assert o.closed and repr(o) == "<fencing.Objects closed>"
    for call in (lambda: o.get("p"), lambda: o.put("p", b"x", token=8), lambda: o.delete("p", token=8)):
        with pytest.raises(fencing.ClosedError):
            call()
    with fencing.open_objects(f"file://{tmp_path}") as again:
        still = again.get("p")
        assert still is not None and (still.value, still.version) == (b"\x00\xff", 2)
    assert again.closed


def test_threads_share_one_handle() -> None:
    with fencing.open_objects("memory:") as o:
        errors: List[BaseException] = []

        def worker(i: int) -> None:
            try:
                for n in range(1, 11):
                    assert o.put(f"w/{i}", str(n).encode(), token=n).version == n
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        for i in range(4):
            got = o.get(f"w/{i}")
            assert got is not None and (got.value, got.version, got.token) == (b"10", 10, 10)


# ----- bad input: INVALID_ARGUMENT, and nothing changes -----

BAD_URLS: List[Any] = [
    "",
    "nope:",
    "memory",
    "memory:?clock=manual",
    "sqlite:objects.db",
    "file://relative/dir",
    "s3://",
    "s3://Not_A_Bucket",
    "s3://bucket?secret=1",
    None,
    1,
    b"memory:",
    "memory:\ud800",
]

BAD_PATHS: List[Any] = [
    "",
    "/absolute",
    "a//b",
    "a/",
    "..",
    "a/./b",
    "x.fenced",
    "a/b.fenced/c",
    "a\0b",
    "a*b",
    "a\\b",
    "bad\ud800text",
    "k" * 1025,
    "s" * 249,
    None,
    1,
    b"p",
    ["p"],
]

BAD_TOKENS: List[Any] = [0, -1, 2**63, 2**64, -(10**40), True, False, 1.0, "1", b"1", None]
BAD_COUNTS: List[Any] = [-1, 2**64, 1.0, "1", True]
BAD_VALUES: List[Any] = ["text", None, 3, 1.5, [1, 2], object()]


@pytest.mark.parametrize("url", BAD_URLS, ids=repr)
def test_a_bad_url_is_invalid(url: Any) -> None:
    with pytest.raises(fencing.InvalidArgumentError):
        fencing.open_objects(url)
    with pytest.raises(fencing.InvalidArgumentError):
        fencing.Objects(url)


def test_a_missing_directory_is_refused_at_open(tmp_path: pathlib.Path) -> None:
    with pytest.raises(fencing.BackendError) as info:
        fencing.open_objects(f"file://{tmp_path / 'missing'}")
    assert info.value.kind == "unreachable"
    assert not (tmp_path / "missing").exists()


def bad_calls() -> Iterator[Tuple[str, Callable[[fencing.Objects], Any]]]:
    for p in BAD_PATHS:
        yield f"put-path-{p!r:.20}", lambda o, p=p: o.put(p, b"x", token=9)
        yield f"delete-path-{p!r:.20}", lambda o, p=p: o.delete(p, token=9)
        yield f"get-path-{p!r:.20}", lambda o, p=p: o.get(p)
    for t in BAD_TOKENS:
        yield f"put-token-{t!r}", lambda o, t=t: o.put(PATH, b"x", token=t)
        yield f"delete-token-{t!r}", lambda o, t=t: o.delete(PATH, token=t)
    for n in BAD_COUNTS:
        yield f"put-seq-{n!r}", lambda o, n=n: o.put(PATH, b"x", token=9, seq=n)
        yield f"put-expected-{n!r}", lambda o, n=n: o.put(PATH, b"x", token=9, expected_version=n)
        yield f"delete-expected-{n!r}", lambda o, n=n: o.delete(PATH, token=9, expected_version=n)
    for v in BAD_VALUES:
        yield f"put-value-{type(v).__name__}", lambda o, v=v: o.put(PATH, v, token=9)
    for h in ["", "a\0b", "bad\ud800", "h" * 257, 1, b"h"]:
        yield f"put-holder-{h!r:.20}", lambda o, h=h: o.put(PATH, b"x", token=9, holder=h)
    # A Lease where its token goes: the message says to pass lease.token.
    yield "put-token-lease", lambda o: o.put(PATH, b"x", token=fencing.open("memory:").acquire("s", holder="a", ttl=1))


BAD_CALLS = list(bad_calls())


def tree(root: pathlib.Path) -> Dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("call", [c for _, c in BAD_CALLS], ids=[n for n, _ in BAD_CALLS])
def test_bad_input_is_invalid_and_changes_nothing(
    call: Callable[[fencing.Objects], Any], tmp_path: pathlib.Path
) -> None:
    with fencing.open_objects(f"file://{tmp_path}") as o:
        o.put(PATH, b"kept", token=9, seq=3)
        before = tree(tmp_path)
        with pytest.raises(fencing.InvalidArgumentError):
            call(o)
        assert tree(tmp_path) == before
        kept = o.get(PATH)
        assert kept is not None and (kept.value, kept.version, kept.token) == (b"kept", 1, 9)
        # The fence and the seq are where they were: token 9 with seq 4 passes.
        assert o.put(PATH, b"next", token=9, seq=4).version == 2


def test_a_missing_or_unknown_argument_is_a_type_error(objects: fencing.Objects) -> None:
    with pytest.raises(TypeError):
        objects.put(PATH, b"x")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        objects.put(PATH, b"x", 1)  # type: ignore[misc]
    with pytest.raises(TypeError):
        objects.get(PATH, token=1)  # type: ignore[call-arg]
    assert objects.get(PATH) is None


# ----- fencing.aio -----


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_aio_has_the_same_methods_as_the_blocking_objects() -> None:
    blocking = {n for n in dir(fencing.Objects) if not n.startswith("_")}
    asynchronous = {n for n in dir(fencing.aio.Objects) if not n.startswith("_")}
    assert blocking - asynchronous == set()
    for name in blocking - {"closed"}:
        assert inspect.iscoroutinefunction(getattr(fencing.aio.Objects, name)), name


def test_aio_stale_holder_and_close(file_url: str) -> None:
    async def main() -> Optional[fencing.Object]:
        async with fencing.aio.open_objects(file_url) as b:
            assert isinstance(b, fencing.aio.Objects)
            assert repr(b) == "<fencing.aio.Objects open>"
            assert await b.get(PATH) is None
            assert (await b.put(PATH, b"B", token=2)).version == 1
            a = await fencing.aio.open_objects(file_url)
            with pytest.raises(fencing.StaleTokenError) as info:
                await a.put(PATH, b"A", token=1, holder="worker-a")
            assert (info.value.scope, info.value.presented, info.value.current) == (PATH, 1, 2)
            assert (await a.put("other", b"x", token=1)).token == 1
            assert (await a.delete("other", token=1)).version == 0
            await a.close()
            assert a.closed and a.sync.closed
            with pytest.raises(fencing.ClosedError):
                await a.get(PATH)
            got = await b.get(PATH)
        assert b.closed
        with pytest.raises(fencing.ClosedError):
            await b.put(PATH, b"late", token=3)
        return got

    got = run(main())
    assert got is not None and (got.value, got.token, got.version) == (b"B", 2, 1)


def test_aio_refuses_bad_input_as_the_blocking_objects() -> None:
    async def main() -> None:
        with pytest.raises(fencing.InvalidArgumentError):
            await fencing.aio.open_objects("nope:")
        with pytest.raises(TypeError):
            fencing.aio.Objects(fencing.open("memory:"))  # type: ignore[arg-type]
        async with fencing.aio.Objects(fencing.open_objects("memory:")) as o:
            with pytest.raises(fencing.InvalidArgumentError):
                await o.put("a//b", b"x", token=1)
            with pytest.raises(fencing.InvalidArgumentError):
                await o.put(PATH, b"x", token=0)
            assert await o.get(PATH) is None

    run(main())
