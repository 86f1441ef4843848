"""Fencing one's own etcd keys (docs/etcd.md, "Fence your own etcd keys"):
``Store.etcd_check`` says what one's own etcd transaction must compare and
put so that it commits only while its token is current. The transaction
here is the caller's own, sent to etcd's JSON gateway with urllib
($FENCING_TEST_ETCD_URL, ``POST /v3/kv/txn``). Runs on
$FENCING_TEST_ETCD_CLUSTER (skipped without it, failed when
FENCING_REQUIRE_ETCD=1)."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request
from typing import Any, Dict, Optional

import pytest

import fencing
import fencing.aio


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def gateway(base: str, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
    request = urllib.request.Request(
        f"{base}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: Dict[str, Any] = json.load(response)
    return answer


def own_txn(base: str, check: fencing.EtcdCheck, key: bytes, value: bytes) -> bool:
    """The caller's own transaction: its put, under what the check said.
    Whether it committed (the gateway leaves ``succeeded`` out when false)."""
    body = json.loads(check.gateway_json)
    body["success"].append({"request_put": {"key": b64(key), "value": b64(value)}})
    return gateway(base, "/v3/kv/txn", body).get("succeeded", False) is True


def own_get(base: str, key: bytes) -> Optional[bytes]:
    kvs = gateway(base, "/v3/kv/range", {"key": b64(key)}).get("kvs", [])
    return base64.b64decode(kvs[0]["value"]) if kvs else None


def test_a_holder_overtaken_after_its_check_writes_nothing(etcd_url: str, etcd_gateway: str) -> None:
    own = f"app/{etcd_url.rsplit('/', 1)[1]}/doc".encode()
    with fencing.open(etcd_url) as store:
        assert store.backend_kind == "etcd"
        a = store.next_token("s")
        b = store.next_token("s")
        a_check = store.etcd_check("s", token=a)
        b_check = store.etcd_check("s", token=b)
        assert isinstance(b_check, fencing.EtcdCheck)
        assert store.fence_of("s") == 0  # a check writes nothing itself
        # The fields and the gateway body say the same.
        body = json.loads(b_check.gateway_json)
        assert b_check.unchanged and b_check.puts
        assert [(c["key"], c["target"], c["result"], c["mod_revision"]) for c in body["compare"]] == [
            (b64(key), "MOD", "EQUAL", str(rev)) for key, rev in b_check.unchanged
        ]
        assert [(p["request_put"]["key"], p["request_put"]["value"]) for p in body["success"]] == [
            (b64(key), b64(value)) for key, value in b_check.puts
        ]
        for key, rev in b_check.unchanged:
            assert type(key) is bytes and type(rev) is int
        for key, value in b_check.puts:
            assert type(key) is bytes and type(value) is bytes
        assert "puts=<" in repr(b_check)

        assert own_txn(etcd_gateway, b_check, own, b"B") is True
        # A checked before B wrote: its transaction applies nothing.
        assert own_txn(etcd_gateway, a_check, own, b"A") is False
        assert own_get(etcd_gateway, own) == b"B"
        # The fence moved with B's own write: the store refuses A now.
        assert store.fence_of("s") == b
        with pytest.raises(fencing.StaleTokenError) as stale:
            store.etcd_check("s", token=a, holder="worker-a")
        assert (stale.value.presented, stale.value.current) == (a, b)
        assert store.metrics()["rejections"][-1]["holder"] == "worker-a"
        with pytest.raises(fencing.StaleTokenError):
            store.put("s", "k", b"A", token=a)

        # seq is checked as a write's is.
        store.put("s", "k", b"B", token=b, seq=5)
        with pytest.raises(fencing.SequenceError):
            store.etcd_check("s", token=b, seq=5)
        again = store.etcd_check("s", token=b, seq=6)
        assert again != b_check  # the record has moved on since

        async def through_aio() -> fencing.EtcdCheck:
            return await fencing.aio.Store(store).etcd_check("s", token=b, seq=6)

        assert asyncio.run(through_aio()) == again


def test_bad_input_is_refused_and_other_stores_have_no_etcd_keys(etcd_url: str) -> None:
    with fencing.open(etcd_url) as store:
        for bad in [0, -1, 2**64, 1.0, "1", None, True]:
            with pytest.raises(fencing.InvalidArgumentError):
                store.etcd_check("s", token=bad)  # type: ignore[arg-type]
        for scope in ["", "a\0b", 5, b"s"]:
            with pytest.raises(fencing.InvalidArgumentError):
                store.etcd_check(scope, token=1)  # type: ignore[arg-type]
        with pytest.raises(fencing.InvalidArgumentError):
            store.etcd_check("s", token=1, seq=-1)
        with pytest.raises(fencing.InvalidArgumentError):
            store.etcd_check("s", token=1, holder=5)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            store.etcd_check("s")  # type: ignore[call-arg]
        status = store.status("s")
        assert (status.counter, status.fence) == (0, 0)
        assert store.metrics()["rejections"] == []
    with fencing.open("memory:") as memory:
        with pytest.raises(fencing.InvalidArgumentError) as not_etcd:
            memory.etcd_check("s", token=1)
        assert not_etcd.value.code == "INVALID_ARGUMENT"
        assert memory.fence_of("s") == 0
