"""From the command line's strings (and the machine planned for) to a checked `Request`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.errors import UsageError
from cudnn_doctor.lazyre import regex
from cudnn_doctor.planner.request import ARCHES, Given, Request, Wanted, parse_framework, parse_version_option

if TYPE_CHECKING:
    from cudnn_doctor.planner.machine import MachineDefaults

_CAPABILITY = regex(r"^\d{1,2}\.\d$")


def build_request(
    frameworks: Sequence[str] = (),
    os_name: Optional[str] = None,
    python: Optional[str] = None,
    gpu: Optional[str] = None,
    driver: Optional[str] = None,
    cuda: Optional[str] = None,
    fixture: Optional[Path] = None,
    machine: Optional[MachineDefaults] = None,
    arch: Optional[str] = None,
) -> Request:
    """Options first; what they leave open comes from the machine, unless the plan is for another OS.
    `machine`: MachineDefaults already read (tests); otherwise the machine is read only when needed."""
    wanted = _frameworks(frameworks)
    python = parse_version_option("--python", python, parts=2) if python else None
    driver = parse_version_option("--driver", driver, parts=2) if driver else None
    cuda = parse_version_option("--cuda", cuda, parts=1) if cuda else None
    if cuda and not knowledge.toolkit_releases(Version(cuda)):
        raise UsageError(f"--cuda {cuda!r}: no CUDA toolkit release of that version in the knowledge")
    gpu_name, capability = _gpu(gpu) if gpu else (None, None)
    defaults = machine if machine is not None else _read(fixture, os_name, python, gpu, driver, wanted or cuda)
    same_machine = defaults is not None and (os_name is None or os_name == defaults.os)
    os_name = os_name or (defaults.os if defaults is not None else None)
    if os_name is None:
        raise UsageError("--os is needed: the machine's OS could not be read")
    request = Request(
        frameworks=wanted
        if (wanted or not same_machine or defaults is None)
        else tuple(parse_framework(name) for name in defaults.frameworks),
        os=os_name,
        python=Given(python, "option") if python else _from(same_machine, defaults, "python"),
        gpu=Given(gpu_name, "option") if gpu_name else _from(same_machine, defaults, "gpu"),
        compute_capability=capability
        if gpu
        else (defaults.compute_capability if same_machine and defaults is not None else None),
        driver=Given(driver, "option") if driver else _from(same_machine, defaults, "driver"),
        cuda=Given(cuda, "option") if cuda else None,
    )
    arch = arch or (defaults.arch if same_machine and defaults is not None else None) or "x86_64"
    if arch not in ARCHES:
        raise UsageError(f"--arch {arch!r}: expected one of {', '.join(ARCHES)}")
    if arch != "x86_64" and request.package_os != "linux":
        raise UsageError(
            f"--arch {arch}: only Linux is planned on {arch} (SBSA servers and Jetson boards); NVIDIA's Windows "
            f"stacks are x86_64"
        )
    request = request._replace(arch=arch)
    if cuda and not wanted and request.frameworks:
        request = request._replace(
            frameworks=()
        )  # `--cuda` alone: what that toolkit needs, not the installed frameworks
    return request


def _frameworks(values: Sequence[str]) -> tuple[Wanted, ...]:
    wanted = tuple(parse_framework(value) for value in values)
    names = [w.name for w in wanted]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UsageError(
            f"--framework {repeated[0]} given twice: combine the specifiers in one, e.g. '{repeated[0]}>=2.1,<2.4'"
        )
    return wanted


def _gpu(text: str) -> tuple[str, str]:
    """A GPU name the knowledge knows ("RTX 3060", "NVIDIA GeForce RTX 3060"), or a compute capability ("8.6")."""
    value = text.strip()
    if _CAPABILITY.match(value):
        return f"compute capability {value}", value
    for name in (value, f"NVIDIA {value}", f"NVIDIA GeForce {value}", f"GeForce {value}", f"NVIDIA Tesla {value}"):
        capability = knowledge.gpu_compute_capability(name)
        if capability:
            return value, capability
    raise UsageError(
        f"--gpu {text!r}: not a GPU name the knowledge knows; give its compute capability instead (e.g. --gpu 8.6)"
    )


def _read(fixture: Optional[Path], os_name: Optional[str], *given: object) -> Optional[MachineDefaults]:
    """The machine's defaults, read only when the plan is for its OS and some input is left open."""
    if fixture is None and os_name is not None and all(given):
        return None  # nothing left open: the machine is not read at all
    from cudnn_doctor.planner.machine import machine_os, read_machine
    from cudnn_doctor.system import open_system

    system = open_system(fixture, limit=30.0)
    if os_name is not None and (os_name != machine_os(system) or all(given)):
        return None
    return read_machine(system)


def _from(same_machine: bool, defaults: object, field: str) -> Optional[Given]:
    value = getattr(defaults, field, None) if same_machine else None
    return Given(value, "machine") if value else None
