"""The library entry point: system → probes → facts → checks → findings. Prints nothing."""

from __future__ import annotations

from typing import Collection

from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.probes import run_probes
from cudnn_doctor.system.interface import System

__all__ = ["Diagnosis", "diagnose"]


def diagnose(
    system: System, with_frameworks: bool = True, framework_timeout: float = 60.0, ignore: Collection[str] = ()
) -> Diagnosis:
    facts = run_probes(system, with_frameworks, framework_timeout, while_waiting=_load_checks)
    from cudnn_doctor.checks import run_checks

    return Diagnosis(facts, run_checks(facts, ignore))


def _load_checks() -> None:
    """Import the rules while the framework imports run in child processes, not after them."""
    import cudnn_doctor.checks  # noqa: F401
