"""fencing.metrics.Collector through a real prometheus_client registry."""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

import pytest

import fencing

prometheus_client = pytest.importorskip("prometheus_client")


def scrape(*stores: fencing.Store) -> str:
    from fencing.metrics import Collector

    registry = prometheus_client.CollectorRegistry()
    registry.register(Collector(*stores))
    text: str = prometheus_client.generate_latest(registry).decode()
    return text


def sample(text: str, name: str, **labels: str) -> float:
    """The one sample of ``name`` with exactly ``labels``, read by prometheus_client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    [value] = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and s.labels == labels
    ]
    return float(value)


def test_collector_exports_counters_pause_and_call_durations() -> None:
    with fencing.open("memory:?clock=manual") as store:
        store.next_token("s")
        lease = store.acquire("s", holder="a", ttl=30)
        store.put("s", "k", b"v", token=lease.token)
        with pytest.raises(fencing.StaleTokenError):
            store.put("s", "k", b"w", token=1)
        text = scrape(store)
        core_text = store.metrics_text()
    mem = "memory:"
    assert sample(text, "fencing_tokens_issued_total", store=mem) == 2
    assert sample(text, "fencing_writes_accepted_total", store=mem) == 1
    assert sample(text, "fencing_stale_rejections_total", store=mem) == 1
    assert "# TYPE fencing_longest_pause_seconds gauge" in text
    assert sample(text, "fencing_longest_pause_seconds", store=mem) == 0
    assert "# TYPE fencing_call_duration_seconds histogram" in text
    hist = "fencing_call_duration_seconds"
    assert sample(text, hist + "_count", store=mem, op="put") == 2
    assert sample(text, hist + "_bucket", store=mem, op="put", le="+Inf") == 2
    assert sample(text, hist + "_bucket", store=mem, op="put", le="10.0") == 2
    assert sample(text, hist + "_sum", store=mem, op="put") > 0
    assert sample(text, hist + "_count", store=mem, op="get") == 0
    # The buckets are cumulative, end at the count, and follow the core's.
    buckets = [
        line for line in text.splitlines() if line.startswith(hist + "_bucket{") and 'op="put"' in line
    ]
    counts = [float(line.rsplit(" ", 1)[1]) for line in buckets]
    assert counts == sorted(counts) and counts[-1] == 2 and len(counts) == 20
    assert 'le="0.00001"' in buckets[0]
    # The same numbers as the core's own text.
    assert 'fencing_tokens_issued_total{store="memory:"} 2\n' in core_text
    assert sample(core_text, hist + "_count", store=mem, op="put") == 2


def test_two_stores_are_told_apart_in_one_family(sqlite_url: str) -> None:
    with fencing.open("memory:") as a, fencing.open(sqlite_url) as b:
        b.next_token("s")
        text = scrape(a, b)
    assert sample(text, "fencing_tokens_issued_total", store="memory:") == 0
    assert sample(text, "fencing_tokens_issued_total", store=b.location) == 1
    assert len(re.findall(r"^# TYPE fencing_tokens_issued_total counter$", text, re.M)) == 1


def test_without_prometheus_client_the_error_says_what_to_install(monkeypatch: Any) -> None:
    # A None entry in sys.modules makes importing that name fail, as when the
    # package is not installed.
    for name in ("prometheus_client", "prometheus_client.core"):
        monkeypatch.setitem(sys.modules, name, None)
    metrics = importlib.import_module("fencing.metrics")  # importing fencing.metrics needs nothing
    with fencing.open("memory:") as store:
        with pytest.raises(ImportError, match="pip install prometheus_client"):
            metrics.Collector(store)
