"""The rule type: a finding's one home — its id, severity, title, report area, relations, check and fix kind.

Every rule is declared once, as a value, in `checks/rules.py`; check modules attach their function
with `@RULE.checks` and make findings with `RULE.finding(...)`; the fixes layer keys its planners by
the rule value. A rule's page (`checks/pages/<id>.md`, printed by `explain`) is its documentation.
`explained_by` names the rules whose presence explains this one: when both are found, this finding
is reported as a symptom under the one that explains it. `explains` says the same from the other
side, so a relation is written on whichever rule is declared later.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Area, Evidence, Finding, Severity

Check = Callable[[Facts], Iterable[Finding]]
FIX_KINDS = ("safe", "unsafe")


class Rule:
    """One kind of finding; `check` is attached by its check module (None for one the runner itself makes)."""

    __slots__ = (
        "area",
        "check",
        "evidence",
        "explained_by",
        "explains",
        "fix_kind",
        "id",
        "severity",
        "severity_when",
        "title",
        "why",
    )

    def __init__(
        self,
        id: str,
        severity: Severity,
        title: str,
        area: Area,
        *,
        explained_by: Sequence[Rule] = (),
        explains: Sequence[Rule] = (),
        why: str = "",
        fix_kind: Optional[str] = None,
        severity_when: str = "",
        evidence: Optional[type] = None,
        check: Optional[Check] = None,
    ) -> None:
        if fix_kind is not None and fix_kind not in FIX_KINDS:
            raise ValueError(f"rule {id!r}: fix_kind must be one of {FIX_KINDS} or None, not {fix_kind!r}")
        self.id = id
        self.severity = severity
        self.title = title
        self.area = area
        self.check = check
        self.explained_by = tuple(explained_by)
        self.explains = tuple(explains)
        self.why = why  # for a rule without a check function, whose docstring would say it
        # Whether `cudnn-doctor fix` repairs this finding (its planner lives in the fixes layer): "safe" (local,
        # reversible, no package changes), "unsafe" (changes packages, may need the network; `--unsafe-fixes`), or None.
        self.fix_kind = fix_kind
        # When a finding of this rule takes another severity than `severity`, by its own case ("error when the copy
        # found first is unusable"); "" when only a cause's worst symptom raises it (every cause does: checks/causes.py)
        self.severity_when = severity_when
        self.evidence = evidence  # the typed record its findings carry, for the rules whose fix planner reads it

    def __repr__(self) -> str:
        return f"Rule({self.id!r})"

    def checks(self, check: Check) -> Check:
        """Decorator: `check` is this rule's check function."""
        if self.check is not None:
            raise ValueError(f"rule {self.id!r} has a check already: {self.check.__qualname__}")
        self.check = check
        return check

    @property
    def doc(self) -> str:
        """What the check's docstring (or `why`) says, as one paragraph."""
        return " ".join(((self.check.__doc__ if self.check else None) or self.why).split())

    def finding(
        self,
        detail: str,
        fix: Iterable[str] = (),
        evidence: Union[Evidence, Mapping[str, Any], None] = None,
        *,
        severity: Optional[Severity] = None,
        title: Optional[str] = None,
        area: Optional[Area] = None,
        causes: Iterable[Optional[str]] = (),
    ) -> Finding:
        """A finding of this rule, with the rule's severity, title and area where not given."""
        if self.evidence is not None and not isinstance(evidence, self.evidence):
            raise TypeError(f"a finding of {self.id} carries a {self.evidence.__name__}, not {type(evidence).__name__}")
        return Finding(
            self.id,
            severity or self.severity,
            title or self.title,
            detail,
            tuple(fix),
            evidence or {},
            area or self.area,
            tuple(c for c in causes if c),
        )


RULES: dict[str, Rule] = {}


def declare(id: str, severity: Severity, title: str, area: Area, **details: Any) -> Rule:
    """A new rule, registered under its id (checks/rules.py declares them all)."""
    if id in RULES:
        raise ValueError(f"finding id {id!r} registered twice")
    RULES[id] = Rule(id, severity, title, area, **details)
    return RULES[id]


def explanations(rules: Mapping[str, Rule]) -> dict[str, set[str]]:
    """id → the ids that explain it, from both sides (`explained_by` and `explains`)."""
    explained: dict[str, set[str]] = {i: {cause.id for cause in r.explained_by} for i, r in rules.items()}
    for rule_id, rule in rules.items():
        for symptom in rule.explains:
            explained.setdefault(symptom.id, set()).add(rule_id)
    return explained


def has_fix_kind(found: Finding) -> bool:
    """Whether `fix` may have changes for this finding at all: only then do reports import `cudnn_doctor.fixes`
    (its dataclasses and planners are a large import for `check`'s start)."""
    rule = RULES.get(found.id)
    return rule is not None and rule.fix_kind is not None


def fix_line(rule_id: str) -> Optional[str]:
    """The one line reports and `explain` print for a rule with an automatic fix; None for manual steps only."""
    registered = RULES.get(rule_id)
    if registered is None or registered.fix_kind is None:
        return None
    flag = " --unsafe-fixes" if registered.fix_kind == "unsafe" else ""
    return f"fix: {registered.fix_kind} — `cudnn-doctor fix {rule_id}{flag}`"
