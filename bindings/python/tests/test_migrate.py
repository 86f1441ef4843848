"""fencing.migrate: the schema without a store (deploy time)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import sqlite3
from typing import Any

import pytest

import fencing
import fencing.aio


def need_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - CI installs it
        if os.environ.get("FENCING_REQUIRE_PG") == "1":
            pytest.fail("FENCING_REQUIRE_PG=1 but psycopg is not installed", pytrace=False)
        pytest.skip('psycopg is not installed (pip install "psycopg[binary]")')
    return psycopg


def test_migrate_makes_a_sqlite_file_fencing_check_can_use(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "deploy.db"
    fencing.migrate(f"sqlite:{path}")
    fencing.migrate(f"sqlite:{path}")  # idempotent
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("INSERT INTO fencing_check (scope, token) VALUES ('s', 2)")
    with pytest.raises(sqlite3.IntegrityError) as stale:
        conn.execute("INSERT INTO fencing_check (scope, token) VALUES ('s', 1)")
    assert isinstance(fencing.from_sqlite_error(stale.value), fencing.StaleTokenError)
    conn.close()
    with fencing.open(f"sqlite:{path}") as store:
        assert store.fence_of("s") == 2
    fencing.migrate("memory:")


def test_aio_migrate_runs_off_the_loop(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "deploy.db"

    async def main() -> None:
        await fencing.aio.migrate(f"sqlite:{path}")
        with pytest.raises(fencing.InvalidArgumentError):
            await fencing.aio.migrate("sqlite://x.db")

    asyncio.run(main())
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("INSERT INTO fencing_check (scope, token) VALUES ('s', 2)")
    conn.close()
    with fencing.open(f"sqlite:{path}") as store:
        assert store.fence_of("s") == 2


def test_migrate_refuses_what_open_refuses(tmp_path: pathlib.Path) -> None:
    with pytest.raises(fencing.InvalidArgumentError, match="sqlite:x.db"):
        fencing.migrate("sqlite://x.db")
    with pytest.raises(fencing.InvalidArgumentError):
        fencing.migrate(None)  # type: ignore[arg-type]
    foreign = tmp_path / "foreign.db"
    foreign.write_bytes(b"not a database, not even close to one")
    with pytest.raises(fencing.BackendError):
        fencing.migrate(f"sqlite:{foreign}")
    assert foreign.read_bytes() == b"not a database, not even close to one"


def test_migrate_makes_a_postgres_schema_check_can_use(pg_base: str, pg_schema: str) -> None:
    psycopg = need_psycopg()
    fencing.migrate(f"{pg_base}?schema={pg_schema}")
    fencing.migrate(f"{pg_base}?schema={pg_schema}")
    with psycopg.connect(pg_base, autocommit=True) as conn:
        conn.execute(f'SELECT "{pg_schema}".check(%s, %s)', ("s", 2))
        with pytest.raises(psycopg.Error) as stale:
            conn.execute(f'SELECT "{pg_schema}".check(%s, %s)', ("s", 1))
        assert isinstance(fencing.from_postgres_error(stale.value), fencing.StaleTokenError)
