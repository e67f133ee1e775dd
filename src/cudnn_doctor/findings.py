"""The output vocabulary: a finding with a stable id, a severity, evidence and fix steps."""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional

from cudnn_doctor.record import Record


class Severity(str, enum.Enum):
    """How bad a finding is; `error` means the GPU stack will not work as intended."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


class Area(str, enum.Enum):
    """The report's lines, in the order of the chain; every rule belongs to one."""

    DRIVER = "driver"
    TOOLKIT = "toolkit"
    CUDNN = "cudnn"
    FRAMEWORKS = "frameworks"
    ENVIRONMENT = "environment"

    @property
    def title(self) -> str:  # type: ignore[override]  # the area's heading, in place of str.title on purpose
        return AREA_TITLES[self]


AREA_TITLES = {
    Area.DRIVER: "NVIDIA driver and GPU",
    Area.TOOLKIT: "CUDA toolkit",
    Area.CUDNN: "cuDNN",
    Area.FRAMEWORKS: "Python and frameworks",
    Area.ENVIRONMENT: "Environment",
}


class Finding(Record):
    """One problem, with the facts that prove it and the steps that fix it.

    `causes` are keys naming the root cause ("cuda:11", "cudnn:<folder>"); findings that share
    one are one problem, said once: `symptom_of` is the index of the finding that says it.
    """

    id: str
    severity: Severity
    title: str
    detail: str
    fix: tuple[str, ...] = ()
    evidence: Mapping[str, Any] = MappingProxyType({})
    area: Area = Area.ENVIRONMENT
    causes: tuple[str, ...] = ()
    symptom_of: Optional[int] = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "id": self.id,
            "severity": self.severity.value,
            "area": self.area.value,
            "title": self.title,
            "detail": self.detail,
            "fix": list(self.fix),
            "evidence": dict(self.evidence),
        }
        if self.symptom_of is not None:
            document["symptom_of"] = self.symptom_of
        return document


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then infos; stable by id within a severity."""
    return sorted(findings, key=lambda f: (f.severity.rank, f.id))


def root_causes(findings: list[Finding]) -> list[Finding]:
    """The findings that say a problem, not a symptom of another one."""
    return [f for f in findings if f.symptom_of is None]


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when no error was found, 1 otherwise (2 is reserved for usage and input errors)."""
    return 1 if any(f.severity is Severity.ERROR for f in findings) else 0
