"""The rule registry: the one home of every finding — its id, severity, title, report area and check.

A rule's page (`checks/pages/<id>.md`, printed by `explain`) is its documentation.
`explained_by` lists the ids whose presence explains this one: when both are found, this
finding is reported as a symptom under the one that explains it. `explains` says the same
from the other side, so a new rule can name what it causes without editing those rules.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.record import Record

Check = Callable[[Facts], Iterable[Finding]]


class Rule(Record):
    id: str
    severity: Severity
    title: str
    area: Area
    check: Optional[Check]  # None for a finding the runner itself makes (doctor-internal-error)
    explained_by: tuple[str, ...] = ()
    why: str = ""  # for a rule without a check function, whose docstring would say it
    explains: tuple[str, ...] = ()
    # Whether `cudnn-doctor fix` repairs this finding (its planner lives in the fixes layer): "safe" (local, reversible,
    # no package changes), "unsafe" (changes packages, may need the network; `--unsafe-fixes`), or None (manual steps only).
    fix_kind: Optional[str] = None
    # When a finding of this rule takes another severity than `severity`, by its own case ("error when the copy found
    # first is unusable"); "" when only a cause's worst symptom raises it (every cause does: checks/causes.py)
    severity_when: str = ""

    @property
    def doc(self) -> str:
        return ((self.check.__doc__ if self.check else None) or self.why).strip()


RULES: dict[str, Rule] = {}


def explanations(rules: dict[str, Rule]) -> dict[str, set[str]]:
    """id → the ids that explain it, from both sides (`explained_by` and `explains`)."""
    explained: dict[str, set[str]] = {i: set(r.explained_by) for i, r in rules.items()}
    for rule_id, rule in rules.items():
        for symptom in rule.explains:
            explained.setdefault(symptom, set()).add(rule_id)
    return explained


def has_fix_kind(found: Finding) -> bool:
    """Whether `fix` may have changes for this finding at all: only then do reports import `cudnn_doctor.fixes`
    (its dataclasses and planners are a large import for `check`'s start)."""
    rule = RULES.get(found.id)
    return rule is not None and rule.fix_kind is not None


def register(rule: Rule) -> Rule:
    if rule.id in RULES:
        raise ValueError(f"finding id {rule.id!r} registered twice")
    RULES[rule.id] = rule
    return rule


FIX_KINDS = ("safe", "unsafe")


def rule(
    id: str,
    severity: Severity,
    title: str,
    area: Area,
    explained_by: Sequence[str] = (),
    explains: Sequence[str] = (),
    fix_kind: Optional[str] = None,
    severity_when: str = "",
) -> Callable[[Check], Check]:
    """Register a check under a stable finding id."""
    if fix_kind is not None and fix_kind not in FIX_KINDS:
        raise ValueError(f"rule {id!r}: fix_kind must be one of {FIX_KINDS} or None, not {fix_kind!r}")

    def add(check: Check) -> Check:
        register(Rule(id, severity, title, area, check, tuple(explained_by), explains=tuple(explains), fix_kind=fix_kind, severity_when=severity_when))
        return check

    return add


def fix_line(rule_id: str) -> Optional[str]:
    """The one line reports and `explain` print for a rule with an automatic fix; None for manual steps only."""
    registered = RULES.get(rule_id)
    if registered is None or registered.fix_kind is None:
        return None
    flag = " --unsafe-fixes" if registered.fix_kind == "unsafe" else ""
    return f"fix: {registered.fix_kind} — `cudnn-doctor fix {rule_id}{flag}`"


def finding(
    id: str,
    detail: str,
    fix: Iterable[str] = (),
    evidence: Optional[dict[str, Any]] = None,
    severity: Optional[Severity] = None,
    title: Optional[str] = None,
    area: Optional[Area] = None,
    causes: Iterable[Optional[str]] = (),
) -> Finding:
    """A finding of a registered rule, with the rule's defaults for what is not given."""
    registered = RULES[id]
    return Finding(
        id,
        severity or registered.severity,
        title or registered.title,
        detail,
        tuple(fix),
        evidence or {},
        area or registered.area,
        tuple(c for c in causes if c),
    )
