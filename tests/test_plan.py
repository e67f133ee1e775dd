"""`plan` against the knowledge, query by query. Each expectation was worked out by hand from the rows cited
beside it (the YAML under src/cudnn_doctor/knowledge/data/), so a wrong row or a wrong search fails here."""

from __future__ import annotations

from typing import Any, Optional

from cudnn_doctor.planner import solve
from cudnn_doctor.planner.inputs import build_request
from cudnn_doctor.planner.machine import MachineDefaults
from cudnn_doctor.reports.plan_report import plan_json


def plan(
    *frameworks: str, os: str, python: Optional[str] = None, gpu: Optional[str] = None, driver: Optional[str] = None, cuda: Optional[str] = None
) -> dict[str, Any]:
    """The JSON report of one query, with nothing read from this machine."""
    nothing = MachineDefaults(os, None, None, None, None, ())
    request = build_request(list(frameworks), os, python, gpu, driver, cuda, machine=nothing)
    return plan_json(solve(request))


def series(version: str) -> str:
    return ".".join(version.split(".")[:2])


def builds(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["framework"], series(f["version"]), f["build"]) for f in report["stack"]["frameworks"]]
