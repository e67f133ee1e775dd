"""Every machine fixture gets its diagnosis: the project's gallery and the shared yardstick.

`examples/machines` (the gallery) is in every clone. `../shared/fixtures` (the yardstick,
`CUDNN_DOCTOR_SHARED_FIXTURES` to point elsewhere) is external: its tests skip where it is
missing, except under CI, where a missing yardstick fails the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cudnn_doctor.checks import RULES
from cudnn_doctor.findings import Severity
from cudnn_doctor.system.fixture_format import load_fixture
from tests.conftest import REPO, SHARED_FIXTURES, gallery_paths, run, shared_fixture_paths

GALLERY = gallery_paths()
SHARED = shared_fixture_paths()

# Gallery machines whose diagnosis the tool gets wrong today: file stem -> why (kept as they are, never bent).
KNOWN_WRONG: dict[str, str] = {}

# The gallery lists every error and warning a correct diagnosis reports; the shared README allows extra warnings.
UNEXPECTED = {"gallery": {Severity.ERROR, Severity.WARNING}, "shared": {Severity.ERROR}}


def _expect(path: Path) -> dict:
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("expect") or {}


def _needs_unimplemented(path: Path) -> list[str]:
    return sorted(i for i in (_expect(path).get("findings") or []) if i not in RULES)


def _corpora(*, unimplemented_xfail: bool = False, diagnosis: bool = True) -> list:
    """Each machine as a parameter; `diagnosis` False for tests that do not judge the diagnosis (KNOWN_WRONG does not apply)."""
    params = []
    for corpus, paths in (("gallery", GALLERY), ("shared", SHARED)):
        for path in paths:
            marks = []
            if diagnosis and corpus == "gallery" and path.stem in KNOWN_WRONG:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[path.stem]))
            elif unimplemented_xfail and _needs_unimplemented(path):
                marks.append(
                    pytest.mark.xfail(
                        strict=True, reason=f"needs the findings {_needs_unimplemented(path)}, not implemented"
                    )
                )
            params.append(pytest.param(corpus, path, marks=marks, id=f"{corpus}/{path.stem}"))
    return params


@pytest.mark.parametrize(("corpus", "path"), _corpora())
def test_no_false_alarm_and_every_implemented_finding(corpus, path):
    """No forbidden id, no unexpected error (gallery: nor warning), and every expected id this version implements."""
    expect = _expect(path)
    findings = run(load_fixture(path)).findings
    found = {f.id: f.severity for f in findings}
    want, absent, allow = (
        set(expect.get("findings") or []),
        set(expect.get("absent") or []),
        set(expect.get("allow") or []),
    )
    assert not absent & set(found), f"must not report {absent & set(found)}"

    def explained(finding_id: str) -> bool:
        """Wanted or allowed, or (as ../shared/tools/fixture-score scores it) every one of its kind a symptom of such a finding."""
        causes = [f.symptom_of for f in findings if f.id == finding_id and f.severity in UNEXPECTED[corpus]]
        return finding_id in want | allow or (
            bool(causes) and all(c is not None and findings[c].id in want | allow for c in causes)
        )

    extra = {i: s.value for i, s in found.items() if s in UNEXPECTED[corpus] and not explained(i)}
    assert not extra, f"unexpected {extra}"
    implemented = {i for i in want if i in RULES}
    assert implemented <= set(found), f"missing {implemented - set(found)}"


@pytest.mark.parametrize(("corpus", "path"), _corpora(unimplemented_xfail=True))
def test_full_expected_diagnosis(corpus, path):
    expect = _expect(path)
    found = {f.id for f in run(load_fixture(path)).findings}
    assert set(expect.get("findings") or []) <= found


@pytest.mark.parametrize(("corpus", "path"), _corpora(diagnosis=False))
def test_json_report_follows_its_schema(corpus, path):
    """Every report a machine produces validates against the versioned schema scripts rely on."""
    import io
    import json

    jsonschema = pytest.importorskip("jsonschema")
    from cudnn_doctor.reports import json_report

    out = io.StringIO()
    json_report.render(run(load_fixture(path)), out)
    schema = json.loads((Path(json_report.__file__).with_name("report.schema.json")).read_text())
    jsonschema.validate(json.loads(out.getvalue()), schema)


def test_gallery_is_the_projects_own():
    """Each gallery machine says what it is and what it must get, and none is a copy of a shared one."""
    assert len(GALLERY) >= 12
    for path in GALLERY:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert document["name"] == path.stem, path.name
        assert len(document.get("description") or "") > 80, f"{path.name}: say what situation this machine is in"
        assert "expect" in document, f"{path.name}: no expected diagnosis"
    shared_names = {yaml.safe_load(p.read_text(encoding="utf-8")).get("name") for p in SHARED}
    assert not shared_names & {p.stem for p in GALLERY}
    healthy = [p for p in GALLERY if not _expect(p).get("findings")]
    assert len(healthy) >= 3, "keep at least three healthy machines: they catch false alarms"


def test_shared_yardstick_present_when_ci_runs():
    """CI runs the external yardstick too: there, a missing one fails instead of skipping silently."""
    if not SHARED:
        where = f"no shared machine fixtures at {SHARED_FIXTURES} (CUDNN_DOCTOR_SHARED_FIXTURES names their folder)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the external yardstick, but there are {where}", pytrace=False)
        pytest.skip(where)
    assert all(_expect(path) for path in SHARED), "a shared fixture without an expected diagnosis"


@pytest.mark.live
@pytest.mark.parametrize("ci", [True, False], ids=["CI", "developer"])
def test_missing_yardstick_fails_only_under_ci(tmp_path, ci):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["CUDNN_DOCTOR_SHARED_FIXTURES"] = str(tmp_path / "nowhere")
    if ci:
        env["CI"] = "1"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"{Path(__file__).relative_to(REPO)}::test_shared_yardstick_present_when_ci_runs",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if ci:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "CI must run the external yardstick" in done.stdout and "nowhere" in done.stdout
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 skipped" in done.stdout
