"""Every code and detail the core lists reaches Python: a class of the
core's name, exported, declaring each attribute, and an error built by the
native module carrying each one with its value."""

from __future__ import annotations

import inspect
import json
import math
import pathlib
from typing import Any, Dict

import fencing
from fencing import _native

SCHEMA = _native.error_schema()
SQLSTATES = {
    "STALE_TOKEN": "FN001",
    "SEQUENCE_OUT_OF_ORDER": "FN002",
    "VERSION_MISMATCH": "FN003",
    "NOT_FOUND": "FN004",
    "LEASE_HELD": "FN005",
    "LEASE_LOST": "FN006",
}


def test_the_schema_lists_every_code() -> None:
    codes = [code for code, _, _ in SCHEMA]
    assert len(codes) == len(set(codes)) == 11
    assert set(SQLSTATES) <= set(codes)


def test_every_code_has_its_class_by_the_cores_name() -> None:
    for code, name, _ in SCHEMA:
        cls = getattr(fencing, name)
        assert name in fencing.__all__
        assert issubclass(cls, fencing.FencingError)
        assert cls.code == code
        assert cls.__name__ == name


def test_the_old_name_is_the_same_class() -> None:
    assert fencing.SequenceError is fencing.SequenceOutOfOrderError


def test_every_class_declares_every_field() -> None:
    for code, name, fields in SCHEMA:
        params = inspect.signature(getattr(fencing, name).__init__).parameters
        for field, _ in fields:
            assert field in params, f"{name}.__init__ lacks {field}"
            assert params[field].kind is inspect.Parameter.KEYWORD_ONLY


def _json_name(field: str, kind: str) -> str:
    return field + "_ms" if kind == "duration" else field


def test_every_field_arrives_with_its_value() -> None:
    for code, name, fields in SCHEMA:
        if code not in SQLSTATES:
            # No SQLSTATE to build one with: BACKEND's kind is checked below.
            assert fields == ([("kind", "text")] if code == "BACKEND" else []), code
            continue
        detail: Dict[str, Any] = {}
        expected: Dict[str, Any] = {}
        for i, (field, kind) in enumerate(fields):
            if kind in ("text", "optional_text"):
                detail[field] = expected[field] = f"{field}-{i}"
            elif kind in ("number", "optional_number"):
                detail[field] = str(2**53 + 1 + i)
                expected[field] = 2**53 + 1 + i
            else:
                assert kind == "duration", kind
                detail[_json_name(field, kind)] = 1500 + i
                expected[field] = (1500 + i) / 1000
        e = fencing.error_from_sqlstate(SQLSTATES[code], json.dumps(detail))
        assert type(e).__name__ == name
        for field, value in expected.items():
            got = getattr(e, field)
            if isinstance(value, float):  # seconds from milliseconds
                assert math.isclose(got, value), (code, field, got)
            else:
                assert got == value, (code, field)


def test_the_stub_declares_every_class_and_field() -> None:
    stub = (pathlib.Path(fencing.__file__).parent / "_errors.py").read_text()
    for _, name, fields in SCHEMA:
        assert f"class {name}(" in stub
        for field, _ in fields:
            assert f"self.{field} = {field}" in stub, (name, field)


def test_a_backend_failure_carries_its_kind(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "not-a-db"
    path.write_bytes(b"x" * 8192)  # not an SQLite database: corrupt
    try:
        fencing.open(f"sqlite:{path}")
    except fencing.BackendError as e:
        assert e.code == "BACKEND"
        assert e.kind == "corrupt"
    else:
        raise AssertionError("opened a file that is not a database")
