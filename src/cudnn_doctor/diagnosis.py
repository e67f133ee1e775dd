"""The result of a diagnosis: the facts and the findings drawn from them.

A value type of its own so that the reports can read a diagnosis without importing
`diagnose`, which loads every probe.
"""

from __future__ import annotations

from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, exit_code
from cudnn_doctor.record import Record


class Diagnosis(Record):
    facts: Facts
    findings: list[Finding]

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)
