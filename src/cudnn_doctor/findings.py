"""The output vocabulary: a finding with a stable id, a severity, evidence and fix steps."""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple


class Severity(str, enum.Enum):
    """How bad a finding is; `error` means the GPU stack will not work as intended."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


class Finding(NamedTuple):
    """One problem, with the facts that prove it and the steps that fix it."""

    id: str
    severity: Severity
    title: str
    detail: str
    fix: tuple[str, ...] = ()
    evidence: Mapping[str, Any] = MappingProxyType({})

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity.value,
            "title": self.title,
            "detail": self.detail,
            "fix": list(self.fix),
            "evidence": dict(self.evidence),
        }


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then infos; stable by id within a severity."""
    return sorted(findings, key=lambda f: (f.severity.rank, f.id))


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when no error was found, 1 otherwise (2 is reserved for usage and input errors)."""
    return 1 if any(f.severity is Severity.ERROR for f in findings) else 0
