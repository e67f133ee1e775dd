"""The request's defaults, read from the machine planned for (this one, or a fixture) through the probes:
its OS, driver, first GPU and current Python, and the frameworks installed in that Python."""

from __future__ import annotations

from typing import Optional

from cudnn_doctor import knowledge
from cudnn_doctor.planner.request import FRAMEWORKS
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import System
from cudnn_doctor.versions import canonical_name as canonicalize_name


class MachineDefaults(Record):
    os: str  # windows | linux | wsl
    driver: Optional[str]
    gpu: Optional[str]
    compute_capability: Optional[str]
    python: Optional[str]
    frameworks: tuple[str, ...]  # the planner's names of the GPU frameworks installed in the current Python
    arch: Optional[str] = None  # x86_64 | aarch64


def machine_os(system: System) -> str:
    return "wsl" if system.wsl else system.os


def read_machine(system: System) -> MachineDefaults:
    from cudnn_doctor.probes.gpu import probe_driver

    driver = probe_driver(system)
    gpu = driver.gpus[0] if driver.gpus else None
    python, frameworks = _current_python(system)
    return MachineDefaults(
        machine_os(system),
        driver.version,
        gpu.name if gpu else None,
        gpu.compute_capability if gpu else None,
        python,
        frameworks,
        system.arch,
    )


def _current_python(system: System) -> tuple[Optional[str], tuple[str, ...]]:
    executable = system.current_python()
    info = system.python_info(executable) if executable else None
    if info is None:
        return None, ()
    version = ".".join(info.version.split(".")[:2])
    installed = {canonicalize_name(name) for name in info.packages}
    names = tuple(
        f.name
        for f in knowledge.frameworks()
        if f.name in FRAMEWORKS and installed & {canonicalize_name(d) for d in f.distributions}
    )
    return version, names
