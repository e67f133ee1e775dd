"""Checks: pure functions from facts (and knowledge) to findings with stable ids.

`run_checks` runs every registered rule. A rule that raises is reported as an internal
failure that names it, never swallowed; a symptom-level finding (torch-cuda-unavailable)
is linked to the findings that explain it.
"""

from __future__ import annotations

from typing import Collection

from cudnn_doctor.checks import cudnn, driver, environment, frameworks, libraries, toolkit  # noqa: F401 - registers rules
from cudnn_doctor.checks.registry import RULES, Rule
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, Severity, sort_findings

INTERNAL_ERROR = "doctor-internal-error"


def run_checks(facts: Facts, ignore: Collection[str] = ()) -> list[Finding]:
    findings: list[Finding] = []
    for rule in RULES.values():
        try:
            findings.extend(rule.check(facts))
        except Exception as error:  # a broken rule must show, not vanish
            findings.append(Finding(INTERNAL_ERROR, Severity.WARNING, f"The {rule.id} check failed",
                                    f"{type(error).__name__}: {error}. Please report this with `cudnn-doctor snapshot`.",
                                    evidence={"rule": rule.id}))
    for failure in facts.failures:
        findings.append(Finding(INTERNAL_ERROR, Severity.WARNING, f"The {failure.probe} probe failed",
                                f"{failure.error}. Findings that depend on it may be missing.", evidence={"probe": failure.probe}))
    findings = _link_explanations(findings)
    return sort_findings(f for f in findings if f.id not in ignore)


def _link_explanations(findings: list[Finding]) -> list[Finding]:
    present = {f.id for f in findings if f.severity is not Severity.INFO}
    linked = []
    for found in findings:
        rule: Rule | None = RULES.get(found.id)
        if rule is not None and rule.explained_by:
            causes = [i for i in rule.explained_by if i in present]
            note = f" Explained by: {', '.join(causes)}." if causes else " No other finding explains it; run the framework's own check for its message."
            found = found._replace(detail=found.detail + note, evidence={**found.evidence, "explained_by": causes})
        linked.append(found)
    return linked


__all__ = ["RULES", "run_checks"]
