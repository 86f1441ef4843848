"""Metrics where Python services look: a ``prometheus_client`` collector.

::

    from prometheus_client import REGISTRY
    from fencing.metrics import Collector

    REGISTRY.register(Collector(store))  # or Collector(store_a, store_b)

Each scrape reads ``store.metrics()`` (one snapshot of each handle's counters
and call durations) and yields the same families, names and units as
``store.metrics_text()``, every sample labelled ``store`` with
``store.location`` (never a password). Give one collector every store of the
process: a family name may appear only once in a registry. ``prometheus_client`` is optional: it
is imported when a ``Collector`` is made, not when ``fencing`` is.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, Iterator, Protocol

__all__ = ["Collector"]

# Help texts for the counters the core keeps; a counter the core adds later
# is still exported, with a generic help.
_HELP: Dict[str, str] = {
    "tokens_issued": "Tokens issued by next_token and acquire",
    "leases_acquired": "Leases acquired",
    "acquire_conflicts": "Acquisitions refused because a lease was held",
    "renewals": "Leases renewed",
    "renewal_failures": "Renewals that failed",
    "releases": "Leases released early",
    "writes_accepted": "Fenced writes accepted (a batch counts once)",
    "stale_rejections": "Operations rejected with STALE_TOKEN",
    "sequence_rejections": "Operations rejected with SEQUENCE_OUT_OF_ORDER",
    "version_conflicts": "Writes rejected with VERSION_MISMATCH",
    "pauses_detected": "Keep-alive renewals late by more than a third of the TTL",
}

# Keys of store.metrics() that are not counters.
_NOT_COUNTERS = ("rejections", "call_durations", "longest_pause_ms")


class _Store(Protocol):
    """What the collector needs of a store: ``fencing.Store`` or anything alike."""

    @property
    def location(self) -> str: ...

    def metrics(self) -> Dict[str, Any]: ...


def _prometheus_client() -> Any:
    try:
        return importlib.import_module("prometheus_client.core")
    except ImportError as e:
        raise ImportError(
            "fencing.metrics.Collector needs prometheus_client: pip install prometheus_client"
        ) from e


class Collector:
    """A ``prometheus_client`` collector for one or more store handles."""

    def __init__(self, store: _Store, *more: _Store) -> None:
        self._core = _prometheus_client()
        self._stores = (store, *more)

    def collect(self) -> Iterator[Any]:
        core = self._core
        families: Dict[str, Any] = {}
        pause = core.GaugeMetricFamily(
            "fencing_longest_pause_seconds",
            "Longest keep-alive lateness seen, in seconds",
            labels=["store"],
        )
        calls = core.HistogramMetricFamily(
            "fencing_call_duration_seconds",
            "Time taken by Store API calls, by operation",
            labels=["store", "op"],
        )
        for store in self._stores:
            snapshot = store.metrics()
            where = store.location
            for name, value in snapshot.items():
                if name in _NOT_COUNTERS:
                    continue
                if name not in families:
                    help_text = _HELP.get(name, name.replace("_", " "))
                    families[name] = core.CounterMetricFamily(
                        f"fencing_{name}", help_text, labels=["store"]
                    )
                families[name].add_metric([where], value)
            pause.add_metric([where], snapshot["longest_pause_ms"] / 1000)
            for op, d in snapshot["call_durations"].items():
                buckets = [(_le(bound), n) for bound, n in d["buckets"]]
                buckets.append(("+Inf", d["count"]))
                calls.add_metric([where, op], buckets, d["sum"])
        yield from families.values()
        yield pause
        yield calls

    def describe(self) -> Iterator[Any]:
        # Nothing described up front: the registry then calls collect() only
        # at scrape time, never at register().
        return iter(())


def _le(bound: float) -> str:
    """An upper bound as the text format writes it (``0.00001``, not ``1e-05``)."""
    text = f"{bound:.9f}".rstrip("0")
    return text + "0" if text.endswith(".") else text
