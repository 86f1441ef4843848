"""Logs: the core's events reach ``logging.getLogger("fencing")``."""

from __future__ import annotations

import logging
import time

import pytest

import fencing


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="fencing")
    fencing.reset_log_cache()
    return caplog


def ours(caplog: pytest.LogCaptureFixture, scope: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "fencing" and f'scope="{scope}"' in r.getMessage()]


def test_a_stale_put_logs_one_warning_with_scope_and_tokens_not_the_value(
    warnings: pytest.LogCaptureFixture,
) -> None:
    store = fencing.open("memory:")
    old = store.acquire("py-log-stale", holder="worker-a", ttl=30).token
    store.release("py-log-stale", token=old)
    new = store.acquire("py-log-stale", holder="worker-b", ttl=30).token
    with pytest.raises(fencing.StaleTokenError):
        store.put("py-log-stale", "k", b"secret-value-bytes", token=old)

    records = ours(warnings, "py-log-stale")
    assert len(records) == 1, [r.getMessage() for r in warnings.records]
    record = records[0]
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "STALE_TOKEN" in message
    assert f"presented={old}" in message
    assert f"current={new}" in message
    assert "secret-value-bytes" not in message
    assert "secret" not in message


def test_normal_operation_is_quiet_at_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="fencing")
    fencing.reset_log_cache()
    store = fencing.open("memory:")
    lease = store.acquire("py-log-quiet", holder="worker", ttl=30)
    store.put("py-log-quiet", "k", b"v", token=lease.token)
    store.renew("py-log-quiet", token=lease.token, ttl=30)
    store.release(lease)
    assert ours(caplog, "py-log-quiet") == []


def test_debug_shows_normal_operation_after_reset(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="fencing")
    fencing.reset_log_cache()
    store = fencing.open("memory:")
    lease = store.acquire("py-log-debug", holder="worker", ttl=30)
    messages = [r.getMessage() for r in ours(caplog, "py-log-debug")]
    assert any(m.startswith("lease acquired") for m in messages), messages
    assert all(r.levelno == logging.DEBUG for r in ours(caplog, "py-log-debug"))
    store.release(lease)


def test_a_lease_lost_by_the_keep_alive_warns_from_its_thread(
    warnings: pytest.LogCaptureFixture,
) -> None:
    store = fencing.open("memory:?clock=manual")
    with pytest.raises(fencing.LeaseLostError):
        with store.lease("py-log-lost", holder="worker-a", ttl=0.3) as lease:
            store.advance_clock(10)
            store.acquire("py-log-lost", holder="worker-b", ttl=30)
            deadline = time.monotonic() + 10
            while not lease.lost and time.monotonic() < deadline:
                time.sleep(0.02)
            assert lease.lost
    records = [r for r in ours(warnings, "py-log-lost") if "lease lost" in r.getMessage()]
    assert len(records) == 1, [r.getMessage() for r in warnings.records]
    assert 'reason="LEASE_LOST"' in records[0].getMessage()
    assert 'holder="worker-a"' in records[0].getMessage()
