"""Whether each build has code for this GPU's architecture: its own arch list, else the knowledge of its release."""

from __future__ import annotations

import re
from typing import Iterator, Sequence

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.checks._plan import (
    describe,
    option_text,
    pip_install,
    plan_options,
)
from cudnn_doctor.checks.rules import (
    GPU_ARCH_UNSUPPORTED,
)
from cudnn_doctor.facts import Facts, FrameworkBuild, Gpu
from cudnn_doctor.findings import Finding


def supported_by_arch_list(cc: Version, arch_list: Sequence[str]) -> bool:
    """SASS for sm_XY runs on X.Z with Z >= Y; PTX for compute_XY is JIT-compiled for anything >= X.Y."""
    major, minor = cc.release[0], (cc.release + (0,))[1]
    for arch in arch_list:
        kind, _, number = arch.partition("_")
        if not re.fullmatch(r"[0-9]{2,}", number):  # "sm_86"; not "sm_", "sm_1" or "sm_8a"
            continue
        a_major, a_minor = int(number[:-1]), int(number[-1])
        if kind == "sm" and a_major == major and a_minor <= minor:
            return True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


@GPU_ARCH_UNSUPPORTED.checks
def gpu_arch_unsupported(facts: Facts) -> Iterator[Finding]:
    """A framework or toolkit built without kernels for the GPU's compute capability fails with "no kernel image is
    available"."""
    gpus = [
        (g, g.compute_capability) for g in facts.driver.gpus if g.compute_capability
    ]  # with the capability each has
    for build in facts.builds:
        bad: list[tuple[Gpu, str]] = [
            (g, cc) for g, cc in gpus if build.arch_list and not supported_by_arch_list(Version(cc), build.arch_list)
        ]
        said = build.no_kernel_complaint
        if not bad and not said:
            continue
        names = ", ".join(f"{g.name} (sm_{cc.replace('.', '')})" for g, cc in bad) or "this GPU"
        if build.arch_list:
            detail = (
                f"{build.name} {build.version} in {build.executable} has kernels for "
                f"{' '.join(build.arch_list)}, none of which runs on {names}."
            )
        else:
            detail = f"{build.name} {build.version} in {build.executable} has no code for {names}."
        if said:
            detail += f' {build.name} reports: "{said}"'
        yield GPU_ARCH_UNSUPPORTED.finding(
            detail,
            ARCH_FIXES.get(build.name, _generic_arch_fix)(facts, build),
            {"framework": build.name, "arch_list": list(build.arch_list), "gpus": [g.name for g, _ in bad]},
        )
    for toolkit in facts.toolkits.toolkits:
        version = toolkit.parsed_version
        floor = knowledge.cuda_min_compute_capability(version.release[0]) if version else None
        if version is None or floor is None:
            continue
        old = [g for g, cc in gpus if Version(cc) < floor[0]]
        if old:
            yield GPU_ARCH_UNSUPPORTED.finding(
                f"CUDA {toolkit.version} at {toolkit.root} cannot build for "
                f"{', '.join(f'{g.name} (compute capability {g.compute_capability})' for g in old)}: "
                f"CUDA {version.release[0]}.x supports compute capability {floor[0]} and newer.",
                [
                    "Install a CUDA toolkit of the previous major release alongside it and build with that one "
                    "(keep its bin first on PATH)."
                ],
                {"toolkit": toolkit.root, "min_cc": str(floor[0]), "source": floor[1]},
            )


def _torch_arch_fix(facts: Facts, build: FrameworkBuild) -> list[str]:
    """A torch build whose CUDA builds for this GPU and that the driver runs, from the planner: of the installed release
    where one exists (torch 1.9.1 cu102 on an RTX 3060 -> 1.9.1 cu111), else the newest; the driver first when
    needed."""
    keep, now = plan_options(facts, build.executable, "torch", build.version)
    option = keep if keep is not None and keep.driver is None else now or keep
    if option is None:
        return [
            "Install a PyTorch build whose CUDA version supports this GPU (see "
            "https://pytorch.org/get-started/locally/)."
        ]
    exe = build.executable
    lines = [f'"{exe}" -m pip uninstall -y torch']
    if option.driver:
        lines.append(f"Update the NVIDIA driver to >= {option.driver} first ({describe(option)} needs it).")
    if option.stack.python_outside:
        return [f"Install {describe(option)}, which has code for this GPU, {option_text(exe, option)}."]
    lines.append(pip_install(exe, [option.requirement], option.options))
    return lines


def _generic_arch_fix(facts: Facts, build: FrameworkBuild) -> list[str]:
    capabilities = ", ".join(g.compute_capability for g in facts.driver.gpus if g.compute_capability) or "of this GPU"
    return [f"Install a {build.name} build for a CUDA version that supports compute capability {capabilities}."]


ARCH_FIXES = {"torch": _torch_arch_fix}  # frameworks whose table names the exact build to install
