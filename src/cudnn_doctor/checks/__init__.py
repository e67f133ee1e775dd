"""Checks: pure functions from facts (and knowledge) to findings with stable ids.

`run_checks` runs every registered rule. A rule that raises, or a probe that failed, is
reported as `doctor-internal-error` naming it, never swallowed; findings that share a root
cause are linked so the report says the cause once, with the rest as its symptoms.
"""

from __future__ import annotations

from typing import Collection, Iterable

# each module attaches its rules' checks when imported
from cudnn_doctor.checks import (  # noqa: F401
    cudnn,
    cudnn_files,
    driver,
    environment,
    frameworks,
    gpu_arch,
    libraries,
    toolkit,
)
from cudnn_doctor.checks.causes import link_causes
from cudnn_doctor.checks.registry import RULES
from cudnn_doctor.checks.rules import DOCTOR_INTERNAL_ERROR
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, sort_findings

INTERNAL_ERROR = DOCTOR_INTERNAL_ERROR.id


def run_checks(facts: Facts, ignore: Collection[str] = ()) -> list[Finding]:
    findings: list[Finding] = []
    for rule in RULES.values():
        if rule.check is None:
            continue
        try:
            findings.extend(rule.check(facts))
        except Exception as error:  # a broken rule must show, not vanish
            findings.append(
                DOCTOR_INTERNAL_ERROR.finding(
                    f"{type(error).__name__}: {error}. Please report this with `cudnn-doctor snapshot --redact`.",
                    evidence={"rule": rule.id},
                    title=f"The {rule.id} check failed",
                )
            )
    for failure in facts.failures:
        findings.append(
            DOCTOR_INTERNAL_ERROR.finding(
                f"{failure.error}. Findings that depend on it may be missing.",
                evidence={"probe": failure.probe},
                title=f"The {failure.probe} probe failed",
            )
        )
    kept = sort_findings(_once(f for f in findings if f.id not in ignore))
    return link_causes(kept, RULES)


def _once(findings: Iterable[Finding]) -> list[Finding]:
    """The same finding said twice (two routes to one fact) is said once."""
    seen: set[tuple[str, str]] = set()
    unique: list[Finding] = []
    for found in findings:
        if (found.id, found.detail) not in seen:
            seen.add((found.id, found.detail))
            unique.append(found)
    return unique


__all__ = ["INTERNAL_ERROR", "RULES", "run_checks"]
