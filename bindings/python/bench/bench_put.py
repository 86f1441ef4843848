"""A fenced put on ``memory:`` from Python, beside a pure-Python implementation
of the same check-and-set (a dict and a ``threading.Lock``), in the same run.

    python bench/bench_put.py            # full run: 7 rounds of 200,000 puts each
    python bench/bench_put.py --smoke    # every path once, tiny; no timing claims
    python bench/bench_put.py --quick    # 5 rounds of 50,000 puts

With FENCING_BENCH_OUT=FILE, each line is also appended to FILE as JSON (the
format of benches/src/report.rs), for scripts/bench's report.

Each round times both implementations back to back (alternating which goes
first); the figure is the median time per put over the rounds. The ratio is
pure-Python time / fencing time: above 1 means fencing is faster. The same
shape as the Rust benchmark (benches/benches/memory_put.rs): 1024 keys of 16
bytes per thread, 64-byte values, one token, every put accepted. Extra lines:
two threads on distinct scopes (aggregate time per put), and a stale put that
is rejected (an exception on both sides). Nothing here asserts on timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Tuple

import fencing

KEYS = 1024
VALUE = b"\xa5" * 64


class Stale(Exception):
    """The baseline's stale-token rejection."""

    def __init__(self, presented: int, current: int) -> None:
        super().__init__(f"stale token: presented {presented}, fence is at {current}")
        self.presented = presented
        self.current = current


class Baseline:
    """The check-and-set with nothing else: per scope a fence and a dict of
    entries, under one lock. Rejects a token below the fence, else raises the
    fence and stores the value at version + 1; returns (version, token)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scopes: Dict[str, List[Any]] = {}

    def put(self, scope: str, key: str, value: bytes, *, token: int) -> Tuple[int, int]:
        with self._lock:
            s = self._scopes.get(scope)
            if s is None:
                s = self._scopes[scope] = [0, {}]
            if token < s[0]:
                raise Stale(token, s[0])
            s[0] = token
            entries = s[1]
            old = entries.get(key)
            version = 1 if old is None else old[1] + 1
            entries[key] = (value, version, token)
            return (version, token)


def keys_for(thread: int) -> List[str]:
    return [f"t{thread}-key-{i:09d}"[:16].ljust(16, "_") for i in range(KEYS)]


def run_puts(put: Callable[..., Any], scope: str, keys: List[str], token: int, ops: int) -> None:
    mask = KEYS - 1
    value = VALUE
    for i in range(ops):
        put(scope, keys[i & mask], value, token=token)


def run_stale(put: Callable[..., Any], scope: str, keys: List[str], ops: int, error: type) -> None:
    mask = KEYS - 1
    value = VALUE
    for i in range(ops):
        try:
            put(scope, keys[i & mask], value, token=1)
        except error:
            pass
        else:
            raise AssertionError("a stale put was accepted")


def time_threads(n: int, work: Callable[[int], None]) -> float:
    """Wall time for n threads each running work(i), from a common start."""
    barrier = threading.Barrier(n + 1)
    threads = [threading.Thread(target=lambda i=i: (barrier.wait(), work(i))) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter_ns()
    for t in threads:
        t.join()
    return float(time.perf_counter_ns() - start)


def measure(kind: str, ops: int, threads: int, stale: bool) -> float:
    """Nanoseconds per put (aggregate over the threads) for one round."""
    if kind == "fencing":
        store = fencing.open("memory:")
        put: Callable[..., Any] = store.put
        error: type = fencing.StaleTokenError
        for t in range(threads):
            store.claim(f"scope-{t}", token=2 if stale else 1)
    else:
        baseline = Baseline()
        put = baseline.put
        error = Stale
        for t in range(threads):
            baseline.put(f"scope-{t}", "warm-up", b"", token=2 if stale else 1)
    keys = [keys_for(t) for t in range(threads)]
    if stale:
        elapsed = time_threads(threads, lambda t: run_stale(put, f"scope-{t}", keys[t], ops, error))
    else:
        elapsed = time_threads(threads, lambda t: run_puts(put, f"scope-{t}", keys[t], 1, ops))
    if kind == "fencing":
        m = store.metrics()
        counted = m["stale_rejections"] if stale else m["writes_accepted"]
        assert counted == ops * threads, (kind, counted)
        store.close()
    return elapsed / (ops * threads)


def bench(name: str, rounds: int, ops: int, threads: int, stale: bool) -> Dict[str, float]:
    samples: Dict[str, List[float]] = {"fencing": [], "python": []}
    for r in range(rounds):
        order = ["fencing", "python"] if r % 2 == 0 else ["python", "fencing"]
        for kind in order:
            samples[kind].append(measure(kind, ops, threads, stale))
    return {kind: statistics.median(v) for kind, v in samples.items()}


def record(line: str, threads: int, fenced: float, baseline: float, rounds: int, smoke: bool, wheel: str) -> None:
    """Appends the result to the JSON Lines file FENCING_BENCH_OUT names, in
    the format of benches/src/report.rs (ns per put; the goal: at least as
    fast as pure Python, fenced time / baseline time <= 1, and <= 1.2 for the
    cp39-abi3 wheel, whose 3.9 limited API has no vectorcall: issue 27)."""
    path = os.environ.get("FENCING_BENCH_OUT")
    if not path:
        return
    most = 1.2 if wheel == "cp39-abi3" else 1.0
    goal = {"on": "ratio", "op": "<=", "value": most} if line == "put" else None
    ratio = fenced / baseline
    entry = {
        "group": "python",
        "line": line if not wheel else f"{line} [{wheel}]",
        "concurrency": threads,
        "concurrency_unit": "threads",
        "unit": "ns/op",
        "fenced": fenced,
        "baseline": baseline,
        "ratio": ratio,
        "baseline_name": "pure Python: dict + threading.Lock check-and-set",
        "goal": goal,
        "met": None if goal is None else ratio <= most,
        "rounds": rounds,
        "smoke": smoke,
        "note": f"Python {platform.python_version()}" + (f", {wheel} wheel" if wheel else ""),
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def wheel_tag() -> str:
    """The installed wheel's abi tag (cp39-abi3, cp310-abi3), or '' when unknown."""
    try:
        import importlib.metadata

        text = importlib.metadata.distribution("fencing").read_text("WHEEL") or ""
    except Exception:
        return ""
    for row in text.splitlines():
        if row.startswith("Tag: "):
            parts = row[5:].split("-")
            return "-".join(parts[:2])
    return ""


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=200_000, help="puts per thread per round")
    parser.add_argument("--smoke", action="store_true", help="run every path once, tiny")
    parser.add_argument("--quick", action="store_true", help="5 rounds of 50,000 puts")
    args = parser.parse_args(argv)
    if args.smoke:
        rounds, ops = 1, 2_000
    elif args.quick:
        rounds, ops = 5, 50_000
    else:
        rounds, ops = args.rounds, args.ops

    print(
        f"fencing {fencing.__version__}, Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.machine()}, "
        f"{rounds} round(s) x {ops} puts per thread, median ns per put"
    )
    if args.smoke:
        print("smoke run: the figures below mean nothing")
    print(f"{'case':<36} {'fencing':>10} {'pure Python':>12} {'ratio':>7}")
    cases = [
        ("put, 1 thread", "put", 1, False),
        ("put, 2 threads, distinct scopes", "put", 2, False),
        ("stale put rejected, 1 thread", "stale put rejected", 1, True),
    ]
    wheel = wheel_tag()
    for name, line, threads, stale in cases:
        result = bench(name, rounds, ops, threads, stale)
        ratio = result["python"] / result["fencing"]
        print(f"{name:<36} {result['fencing']:>10.0f} {result['python']:>12.0f} {ratio:>6.2f}x")
        record(line, threads, result["fencing"], result["python"], rounds, args.smoke, wheel)
    print("ratio = pure-Python time / fencing time (above 1: fencing is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
