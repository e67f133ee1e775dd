"""`check --format markdown`: the diagnosis as a GitHub issue or forum post wants it (issue 31).

The machine in one table, then each finding with its evidence and its fix steps, symptoms folded under their cause.
Redacted by default: the diagnosed machine's home folder, user names, host name and GPU UUIDs are replaced, as
`snapshot --redact` does (`--no-redact` keeps them), because this text is made to leave the machine.
"""

from __future__ import annotations

import re
from typing import Optional, TextIO

from cudnn_doctor import __version__
from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.privacy import redact_text
from cudnn_doctor.reports.terminal import _summaries

MARKS = {Severity.ERROR: "❌", Severity.WARNING: "⚠️", Severity.INFO: "ℹ️"}


def render(diagnosis: Diagnosis, out: TextIO, redact: bool = True, host: Optional[str] = None) -> None:
    """Write the report; `host`: the diagnosed machine's name, replaced like its user when redacting."""
    text = "\n".join(_lines(diagnosis)) + "\n"
    out.write(redacted(text, diagnosis.facts, host) if redact else text)


def _lines(diagnosis: Diagnosis) -> list[str]:
    facts, findings = diagnosis.facts, diagnosis.findings
    causes = [(i, f) for i, f in enumerate(findings) if f.symptom_of is None]
    errors = sum(f.severity is Severity.ERROR for _, f in causes)
    warnings = sum(f.severity is Severity.WARNING for _, f in causes)
    verdict = "no problems found" if not findings else f"{errors} error(s), {warnings} warning(s)"
    system = f"{facts.os} {facts.arch}" + (" (WSL2)" if facts.wsl else "")
    lines = [f"### cudnn-doctor check: {verdict}", "", "| Area | |", "|---|---|", f"| Machine | {_cell(system)} |"]
    summaries = _summaries(facts)
    lines += [f"| {area.title} | {_cell(summaries[area])} |" for area in Area]
    symptoms: dict[int, list[Finding]] = {}
    for found in findings:
        if found.symptom_of is not None:
            symptoms.setdefault(found.symptom_of, []).append(found)
    for index, found in causes:
        lines += [
            "",
            f"#### {MARKS[found.severity]} {found.severity.value} `{found.id}`: {_text(found.title)}",
            "",
            _text(found.detail),
        ]
        if found.fix:
            lines += [""] + [f"{number}. {_step(step)}" for number, step in enumerate(found.fix, 1)]
        if symptoms.get(index):
            lines += [
                "",
                f"<details><summary>The same cause also shows as {len(symptoms[index])} more finding(s)</summary>",
                "",
            ]
            lines += [f"- `{s.id}` ({s.severity.value}): {_text(s.detail)}" for s in symptoms[index]]
            lines += ["", "</details>"]
    lines += ["", f"<sub>cudnn-doctor {__version__} · `cudnn-doctor explain ID` explains each finding</sub>"]
    return lines


def _text(value: str) -> str:
    """Machine text as Markdown shows it literally: no HTML, no emphasis from a `*` or `_` in a path."""
    return re.sub(r"([\\`*_<>\[\]])", r"\\\1", value)


def _step(value: str) -> str:
    """A fix step: its `commands` stay code spans, the text between them is escaped like machine text."""
    parts = value.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code span to keep
        return _text(value)
    return "`".join(part if index % 2 else _text(part) for index, part in enumerate(parts))


def _cell(value: str) -> str:
    return _text(value).replace("|", "\\|").replace("\n", " ")


def redacted(text: str, facts: Facts, host: Optional[str] = None) -> str:
    """The text with the diagnosed machine's user, home folder, host and GPU UUIDs replaced (privacy.redact_text)."""
    return redact_text(text, facts.environment.variables, host)
