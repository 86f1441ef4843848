"""The paused-worker story with real processes on ``sqlite:``.

A child process holds the lease and writes under its token. The test stops it
with SIGSTOP until its lease has expired (the parent's ``acquire_wait`` returns
only then), acquires, writes, and continues the child: the child's next write
raises StaleTokenError, and the state written under the newer token stays.
Every wait is bounded, and the child is killed whatever happens.
"""

from __future__ import annotations

import json
import os
import pathlib
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterator

import pytest

import fencing

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")

BOUND = 60.0  # seconds: no step of this test may wait longer

CHILD = r"""
import json, sys
import fencing

url, mode = sys.argv[1], sys.argv[2]
store = fencing.open(url)
result = {}

def work(token):
    store.put("report", "body", b"child v1", token=token)
    print(json.dumps({"token": token}), flush=True)
    sys.stdin.readline()  # the parent stops this process here, then says "go"
    try:
        store.put("report", "body", b"child v2", token=token)
        result["write"] = "accepted"
    except fencing.StaleTokenError as e:
        result["write"] = {"code": e.code, "presented": e.presented, "current": e.current}

if mode == "keepalive":
    try:
        with store.lease("report", holder="child", ttl=1.0) as lease:
            work(lease.token)
        result["exit"] = None
    except fencing.LeaseLostError as e:
        result["exit"] = {"code": e.code, "token": e.current_token, "holder": e.current_holder}
else:
    work(store.acquire("report", holder="child", ttl=1.0).token)

store.close()
print(json.dumps(result), flush=True)
"""


class Child:
    def __init__(self, url: str, mode: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def read(self) -> Dict[str, Any]:
        try:
            line = self.lines.get(timeout=BOUND)
        except queue.Empty:
            raise AssertionError(f"child said nothing for {BOUND} s") from None
        result: Dict[str, Any] = json.loads(line)
        return result

    def state(self) -> str:
        """The process state letter from /proc (T: stopped)."""
        stat = pathlib.Path(f"/proc/{self.proc.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(timeout=BOUND)


def write_locked(path: str) -> bool:
    """Whether a process holds the SQLite write lock of the file now (taken
    here without waiting, and given back at once)."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as e:
        if "locked" in str(e):
            return True
        raise
    finally:
        conn.close()


@pytest.fixture
def spawn() -> Iterator[Any]:
    children = []

    def start(url: str, mode: str) -> Child:
        child = Child(url, mode)
        children.append(child)
        return child

    yield start
    for child in children:
        child.kill()
        for stream in (child.proc.stdin, child.proc.stdout, child.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("mode", ["plain", "keepalive"])
def test_stopped_worker_is_fenced_off(spawn: Any, sqlite_url: str, mode: str) -> None:
    child = spawn(sqlite_url, mode)
    child_token = child.read()["token"]

    # Stopped between two renewals of its keep-alive: stopped inside one, it
    # would keep the file's write lock, and the parent would wait for it in vain.
    deadline = time.monotonic() + BOUND
    while True:
        os.kill(child.proc.pid, signal.SIGSTOP)
        if sys.platform.startswith("linux"):
            while child.state() != "T":
                assert time.monotonic() < deadline, "the child did not stop"
                time.sleep(0.001)
        if not write_locked(sqlite_url.removeprefix("sqlite:")):
            break
        assert time.monotonic() < deadline, "the child kept the write lock"
        os.kill(child.proc.pid, signal.SIGCONT)
        time.sleep(0.001)

    with fencing.open(sqlite_url) as store:
        # Returns only once the stopped child's lease has expired.
        lease = store.acquire_wait("report", holder="parent", ttl=60, timeout=BOUND)
        assert lease.token > child_token
        receipt = store.put("report", "body", b"parent", token=lease.token)
        assert (receipt.version, receipt.token) == (2, lease.token)

        os.kill(child.proc.pid, signal.SIGCONT)
        assert child.proc.stdin is not None
        child.proc.stdin.write("go\n")
        child.proc.stdin.flush()
        result = child.read()
        assert child.proc.wait(timeout=BOUND) == 0, child.proc.stderr

        assert result["write"] == {
            "code": "STALE_TOKEN",
            "presented": child_token,
            "current": lease.token,
        }
        if mode == "keepalive":
            # The child's keep-alive could not renew: leaving its block said so.
            # Its deadline passed while it was stopped, so it judged the loss
            # itself; the end of the block then names who holds the lease now
            # (docs/semantics.md, "Ending a held lease").
            assert result["exit"] == {"code": "LEASE_LOST", "token": lease.token, "holder": "parent"}

        entry = store.get("report", "body")
        assert entry is not None
        assert (entry.value, entry.version, entry.token) == (b"parent", 2, lease.token)
        assert store.fence_of("report") == lease.token
        # The child's exit did not touch the parent's lease.
        assert store.renew(lease).token == lease.token
        current = store.status("report").lease
        assert current is not None and (current.holder, current.token) == ("parent", lease.token)
        m = store.metrics()
        assert m["writes_accepted"] == 1 and m["leases_acquired"] == 1
