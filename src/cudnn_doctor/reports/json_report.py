"""`--format json`: one versioned JSON object with the findings and the facts behind them."""

from __future__ import annotations

from typing import Any, TextIO

from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding
from cudnn_doctor.privacy import kept_environment, kept_persistent
from cudnn_doctor.reports import write_json

REPORT_SCHEMA = "cudnn-doctor-report/1"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):  # a facts Record
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _private_parts_removed(facts: Facts) -> Facts:
    """Only the variables the diagnosis reads leave the machine, secret-looking values replaced."""
    environment = facts.environment
    return facts._replace(
        environment=environment._replace(
            variables=kept_environment(environment.variables), persistent=kept_persistent(environment.persistent)
        )
    )


def _with_autofix(found: Finding, facts: Facts) -> dict[str, Any]:
    """`autofix`: "safe" / "unsafe" when `cudnn-doctor fix` has changes for this finding, null when its steps stay
    manual."""
    from cudnn_doctor.checks.registry import has_fix_kind

    if not has_fix_kind(found):
        return {**found.to_json(), "autofix": None}  # no rule fix: `fixes` stays unloaded
    from cudnn_doctor.fixes import automatic_fix

    return {**found.to_json(), "autofix": automatic_fix(found, facts)}


def render(diagnosis: Diagnosis, out: TextIO) -> None:
    from cudnn_doctor import __version__

    document = {
        "schema": REPORT_SCHEMA,
        "tool": {"name": "cudnn-doctor", "version": __version__},
        "exit_code": diagnosis.exit_code,
        "findings": [_with_autofix(f, diagnosis.facts) for f in diagnosis.findings],
        "facts": _plain(_private_parts_removed(diagnosis.facts)),
    }
    write_json(out, document, indent=2, default=str)
