"""Shared fixtures. The tests run against the installed wheel: the source tree's
``python/fencing`` must not be what gets imported."""

from __future__ import annotations

import os
import pathlib
from typing import Iterator

import pytest

import fencing

HERE = pathlib.Path(__file__).resolve().parent


def repo_root() -> pathlib.Path:
    """The repository root: $FENCING_REPO_ROOT, else three levels above tests/."""
    env = os.environ.get("FENCING_REPO_ROOT")
    return pathlib.Path(env).resolve() if env else HERE.parents[2]


def pytest_report_header() -> str:
    return f"fencing {fencing.__version__} from {pathlib.Path(fencing.__file__).parent}"


def pytest_sessionstart(session: pytest.Session) -> None:
    source = (repo_root() / "bindings" / "python" / "python").resolve()
    imported = pathlib.Path(fencing.__file__).resolve()
    if source in imported.parents:
        raise pytest.UsageError(
            f"fencing was imported from the source tree ({imported}); "
            "install the wheel into a venv and run the tests from there"
        )
    expected = os.environ.get("FENCING_EXPECT_PREFIX")
    if expected and pathlib.Path(expected).resolve() not in imported.parents:
        raise pytest.UsageError(f"fencing imported from {imported}, not from {expected}")


@pytest.fixture
def mem() -> Iterator[fencing.Store]:
    """A fresh in-memory store on a manual clock."""
    with fencing.open("memory:?clock=manual") as store:
        yield store


@pytest.fixture
def sqlite_url(tmp_path: pathlib.Path) -> str:
    """The URL of a fresh SQLite file."""
    return f"sqlite:{tmp_path / 'fence.db'}"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[fencing.Store]:
    """A fresh store on each backend (manual clock)."""
    if request.param == "memory":
        url = "memory:?clock=manual"
    else:
        url = f"sqlite:{tmp_path / 'fence.db'}?clock=manual"
    with fencing.open(url) as s:
        yield s
