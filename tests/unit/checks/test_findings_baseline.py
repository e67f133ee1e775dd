"""Behaviour unchanged by a refactoring (issue 32): every machine of the gallery and of the shared yardstick gives the
findings it gave when this baseline was recorded (id, severity and detail, in order). A change of diagnosis is a
decision: record it again with `python -c "from tests.unit.checks.test_findings_baseline import write; write()"` (PYTHONPATH=src)
and say why in the commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import GALLERY, SHARED_FIXTURES, fixture_paths

BASELINE = Path(__file__).resolve().parents[2] / "data" / "findings_baseline.json"
ROOTS = {"gallery": GALLERY, "shared": SHARED_FIXTURES}


def findings(path: Path) -> list[list[str]]:
    return sorted(
        [f.id, f.severity.value, f.detail]
        for f in diagnose(FixtureSystem.from_file(path), with_frameworks=True).findings
    )


def write() -> None:
    recorded: dict[str, Any] = {}
    for label, root in ROOTS.items():
        for path in fixture_paths(root):
            recorded[f"{label}/{path.relative_to(root).as_posix()}"] = findings(path)
    BASELINE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")


RECORDED: dict[str, Any] = json.loads(BASELINE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("key", sorted(RECORDED), ids=lambda key: key.rsplit("/", 1)[-1][:40])
def test_each_machine_gives_the_recorded_findings(key: str):
    label, _, name = key.partition("/")
    path = ROOTS[label] / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared yardstick sits beside the repository)")
    assert findings(path) == RECORDED[key]


def test_every_gallery_machine_is_in_the_baseline():
    assert {f"gallery/{p.relative_to(GALLERY).as_posix()}" for p in fixture_paths(GALLERY)} <= set(RECORDED)
