"""The result of a diagnosis: the facts and the findings drawn from them.

A value type of its own so that the reports can read a diagnosis without importing
`diagnose`, which loads every probe.
"""

from __future__ import annotations

from typing import NamedTuple

from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, exit_code


class Diagnosis(NamedTuple):
    facts: Facts
    findings: list[Finding]

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)
