"""The output vocabulary: a finding with a stable id, a severity, evidence and fix steps."""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping, Optional, Protocol, Union

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


class Evidence(Protocol):
    """A rule's typed evidence: a Record of its own (checks/evidence.py), for the rules whose fix planner reads it.

    In JSON it is an object of its fields; a field whose default is None is left out while it is None.
    """

    @property
    def _fields(self) -> tuple[str, ...]: ...

    @property
    def _field_defaults(self) -> dict[str, Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


def _evidence_json(evidence: Evidence) -> dict[str, Any]:
    optional = {name for name, default in evidence._field_defaults.items() if default is None}
    return {name: value for name, value in zip(evidence._fields, evidence) if value is not None or name not in optional}


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
    evidence: Union[Evidence, Mapping[str, Any]] = MappingProxyType({})
    area: Area = Area.ENVIRONMENT
    causes: tuple[str, ...] = ()
    symptom_of: Optional[int] = None
    explained_by: Optional[tuple[str, ...]] = None  # a symptom without cause keys: the present findings that explain it

    def evidence_json(self) -> dict[str, Any]:
        """The evidence as JSON's object (with `explained_by` where checks/causes.py looked for an explanation)."""
        document = dict(self.evidence) if isinstance(self.evidence, Mapping) else _evidence_json(self.evidence)
        if self.explained_by is not None:
            document["explained_by"] = list(self.explained_by)
        return document

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "id": self.id,
            "severity": self.severity.value,
            "area": self.area.value,
            "title": self.title,
            "detail": self.detail,
            "fix": list(self.fix),
            "evidence": self.evidence_json(),
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
