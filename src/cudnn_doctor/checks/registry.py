"""The rule registry: every finding id, its default severity and title, and the function that checks it.

A rule's docstring is its documentation ("why this matters"). `explained_by` lists the ids
whose presence explains a symptom-level finding (torch-cuda-unavailable), so the runner can
point from the symptom to its causes.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence

from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, Severity

Check = Callable[[Facts], Iterable[Finding]]


class Rule(NamedTuple):
    id: str
    severity: Severity
    title: str
    check: Check
    explained_by: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return (self.check.__doc__ or "").strip()


RULES: dict[str, Rule] = {}


def rule(id: str, severity: Severity, title: str, explained_by: Sequence[str] = ()) -> Callable[[Check], Check]:
    """Register a check under a stable finding id."""

    def register(check: Check) -> Check:
        if id in RULES:
            raise ValueError(f"finding id {id!r} registered twice")
        RULES[id] = Rule(id, severity, title, check, tuple(explained_by))
        return check

    return register


def finding(
    id: str,
    detail: str,
    fix: Iterable[str] = (),
    evidence: Optional[dict[str, Any]] = None,
    severity: Optional[Severity] = None,
    title: Optional[str] = None,
) -> Finding:
    """A finding of a registered rule, with the rule's defaults for what is not given."""
    registered = RULES[id]
    return Finding(id, severity or registered.severity, title or registered.title, detail, tuple(fix), evidence or {})
