"""Every shared machine fixture: the diagnosis it must get (../shared/fixtures/README.md)."""

from __future__ import annotations

import pytest
import yaml

from cudnn_doctor.checks import RULES
from cudnn_doctor.findings import Severity
from cudnn_doctor.system.fixture_format import load_fixture

from .conftest import SHARED_FIXTURES, run, shared_fixture_paths

FIXTURES = shared_fixture_paths()
if not FIXTURES:
    pytest.skip(f"no shared fixtures at {SHARED_FIXTURES}", allow_module_level=True)


def _expect(path):
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("expect") or {}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_no_false_alarm_and_every_implemented_finding(path):
    """No forbidden id, no unexpected error, and every expected id this version implements."""
    expect = _expect(path)
    diagnosis = run(load_fixture(path))
    found = {f.id: f.severity for f in diagnosis.findings}
    want, absent, allow = set(expect.get("findings") or []), set(expect.get("absent") or []), set(expect.get("allow") or [])
    assert not absent & set(found), f"must not report {absent & set(found)}"
    extra = {i for i, s in found.items() if s is Severity.ERROR and i not in want | allow}
    assert not extra, f"unexpected errors {extra}"
    implemented = {i for i in want if i in RULES}
    assert implemented <= set(found), f"missing {implemented - set(found)}"


def _needs_unimplemented(path):
    return sorted(i for i in (_expect(path).get("findings") or []) if i not in RULES)


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=f"needs the library-resolution findings {_needs_unimplemented(p)} (issue 3)"))
     if _needs_unimplemented(p) else p for p in FIXTURES],
    ids=lambda p: p.stem,
)
def test_full_expected_diagnosis(path):
    expect = _expect(path)
    found = {f.id for f in run(load_fixture(path)).findings}
    assert set(expect.get("findings") or []) <= found


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_json_report_follows_its_schema(path):
    """Every report a shared fixture produces validates against the versioned schema scripts rely on."""
    import io
    import json
    from pathlib import Path

    jsonschema = pytest.importorskip("jsonschema")
    from cudnn_doctor.reports import json_report

    out = io.StringIO()
    json_report.render(run(load_fixture(path)), out)
    schema = json.loads((Path(json_report.__file__).with_name("report.schema.json")).read_text())
    jsonschema.validate(json.loads(out.getvalue()), schema)
