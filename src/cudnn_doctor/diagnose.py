"""The library entry point: system → probes → facts → checks → findings. Prints nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

from cudnn_doctor.checks import run_checks
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, exit_code
from cudnn_doctor.probes import run_probes
from cudnn_doctor.system.interface import System


@dataclass(frozen=True)
class Diagnosis:
    facts: Facts
    findings: list[Finding]

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)


def diagnose(system: System, with_frameworks: bool = True, framework_timeout: float = 60.0, ignore: Collection[str] = ()) -> Diagnosis:
    facts = run_probes(system, with_frameworks, framework_timeout)
    return Diagnosis(facts, run_checks(facts, ignore))
