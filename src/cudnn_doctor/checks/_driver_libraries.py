"""The driver's own libraries (libcuda.so.1, nvcuda.dll) as dependencies: provided, or missing for real.

Without any visible driver their absence is the driver's (no-nvidia-gpu, wsl-linux-driver-installed).
With the driver's files seen, a name the search cannot find is a real gap with a driver-specific
fix: a soname link that `ldconfig` did not make, a driver folder the loader cache does not list,
WSL2's /usr/lib/wsl/lib, or a partial driver install.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from cudnn_doctor import knowledge
from cudnn_doctor.checks._libraries import basename
from cudnn_doctor.facts import DriverLibrary, Facts, FrameworkBuild
from cudnn_doctor.lazyre import regex
from cudnn_doctor.loads import LoadStep, Resolution
from cudnn_doctor.paths import PathRules, prepend_ld_library_path

WSL_DRIVER_DIR = "/usr/lib/wsl/lib"
KERNEL_MODULE = "/proc/driver/nvidia/version"
# The names a process that reached a GPU has loaded: the driver's soname (libcuda.so.1) and its versioned files.
# The bare development name `libcuda.so` is another file that a loader search must find on its own (WSL's
# /usr/lib/wsl/lib has it, yet ldconfig caches only libcuda.so.1): a GPU reached proves nothing of it.
_DRIVER_API = regex(r"(?i)^(libcuda\.so(\.\d+)+|nvcuda\.dll)$")


def is_driver_library(name: str) -> bool:
    return bool(re.match(knowledge.table("libraries").driver_provided.pattern, basename(name)))


def driver_visible(facts: Facts) -> bool:
    """The driver's own files were seen (not only a name nobody found)."""
    return bool(facts.driver_files)


DRIVER_STATE = "driver-state"  # the cause key of what a driver that cannot be reached at all explains


def user_space_files(facts: Facts) -> list[str]:
    """The driver's library files seen (the kernel module's /proc file is the host's, even in a container)."""
    return [f for f in facts.driver_files if f != KERNEL_MODULE]


def gpu_withheld(facts: Facts) -> bool:
    """A container started without the GPU: neither the driver's libraries nor a GPU device file is in it."""
    state = facts.driver_state
    if facts.os != "linux" or state.container is None or state.devices or user_space_files(facts):
        return False
    return not facts.driver.present and not any(b.sees_gpu or b.cuda_available for b in facts.builds)


def mismatched_libraries(facts: Facts) -> list[DriverLibrary]:
    """The driver libraries in use whose release is not the loaded kernel module's."""
    state = facts.driver_state
    if facts.os != "linux" or facts.wsl or state.kernel_module is None:
        return []
    return [lib for lib in state.libraries if lib.version != state.kernel_module]


def driver_mismatch(facts: Facts) -> bool:
    """The kernel module and the driver's libraries are different releases, by their versions or by NVML's own words."""
    return (
        facts.os == "linux"
        and not facts.wsl
        and (bool(mismatched_libraries(facts)) or facts.driver_state.nvml_mismatch is not None)
    )


def proven_by_the_gpu(build: Optional[FrameworkBuild], name: str) -> bool:
    """The driver's CUDA library itself (libcuda.so.1, nvcuda.dll) when the framework's own report reached a GPU:
    nothing reaches one without it, so its process loaded it from somewhere the emulation does not see."""
    return (
        build is not None
        and bool(_DRIVER_API.match(basename(name)))
        and (build.sees_gpu or build.cuda_available is True)
    )


def other_spelling_loaded(resolution: Resolution, step: LoadStep, rules: PathRules) -> bool:
    """An optional unversioned driver name (`libcuda.so`, a fallback spelling) when the process loaded the real one
    (`libcuda.so.1`)."""
    if not step.optional or not is_driver_library(step.name):
        return False
    stem = rules.name_key(basename(step.name)).split(".so")[0] + ".so."
    return any(s.winner and rules.name_key(basename(s.name)).startswith(stem) for s in resolution.steps)


def _siblings(facts: Facts, name: str, rules: PathRules) -> list[str]:
    """The driver's files of the same library under another name: libcuda.so.580.65.06 for a missing libcuda.so.1."""
    stem = rules.name_key(name).split(".so")[0] + ".so."
    return [
        f
        for f in facts.driver_files
        if rules.name_key(rules.basename(f)).startswith(stem)
        and rules.name_key(rules.basename(f)) != rules.name_key(name)
    ]


def driver_gap(facts: Facts, name: str, elsewhere: Sequence[str]) -> tuple[str, list[str]]:
    """(detail, fix) for a driver library that the loader cannot find although the driver is installed."""
    rules = PathRules(facts.os)
    if gpu_withheld(facts):
        return (
            f" This container ({facts.driver_state.container}) was started without the GPU: the driver's "
            f"libraries, {name} among them, "
            "are mounted only into a container given the GPU.",
            [
                "Start the container with the GPU: add `--gpus all` to the `docker run` command that starts it; "
                "see gpu-not-passed-to-container."
            ],
        )
    seen = [f for f in facts.driver_files if f != KERNEL_MODULE][:3] or list(facts.driver_files[:1])
    detail = (
        f" The NVIDIA driver is installed (its files: {', '.join(seen)}), but nothing the loader searches "
        f"provides {name}."
    )
    if facts.os == "windows":
        return detail, [
            f"Reinstall the NVIDIA driver (a clean install from https://www.nvidia.com/Download/index.aspx): "
            f"{name} comes with it into System32."
        ]
    folders = list(dict.fromkeys(rules.dirname(c) for c in elsewhere))
    if folders and not re.search(r"\.so\.\d+$", name):
        # ldconfig caches a library under its soname (libcuda.so.1) only: a development name is found through a folder
        # searched by name.
        detail += (
            f" A copy is in {', '.join(folders)}; the loader cache lists libraries by soname only, never "
            f"the bare name {name}."
        )
        path = ":".join(folders)
        return detail, [
            f"Put {path} on LD_LIBRARY_PATH for the programs that need it: `echo "
            f"'{prepend_ld_library_path([path])}' >> ~/.bashrc`, then open a new terminal."
        ]
    if folders:
        detail += f" A copy is in {', '.join(folders)}, which the loader cache does not list."
        fix = []
        for folder in folders:
            conf = "ld.so.wsl.conf" if rules.same(folder, WSL_DRIVER_DIR) else "nvidia.conf"
            fix.append(
                f"Add {folder} to the loader cache: `echo {folder} | sudo tee -a /etc/ld.so.conf.d/{conf} && sudo "
                f"ldconfig` (or put it on LD_LIBRARY_PATH)."
            )
        return detail, fix
    siblings = _siblings(facts, name, rules)
    if siblings:
        real = siblings[0]
        folder = rules.dirname(real)
        detail += f" Only {real} is there: the link {name} to it is missing."
        link = f"`sudo ln -s {rules.basename(real)} {rules.join(folder, name)}`"
        if re.search(r"\.so\.\d+$", name):
            return detail, [
                f"Run `sudo ldconfig`: it makes the soname link {name} in {folder}. Or make it yourself: {link}."
            ]
        return detail, [f"Make the link: {link}."]
    if facts.wsl:
        return detail, [
            f"Under WSL2 the driver's libraries come from the Windows driver into {WSL_DRIVER_DIR}: update the "
            f"NVIDIA driver on Windows, "
            "then run `wsl --shutdown` in Windows and reopen the terminal."
        ]
    branch = (facts.driver.version or "").split(".")[0]
    package = f"libnvidia-compute-{branch}" if branch.isdigit() else "libnvidia-compute-<driver branch>"
    return detail, [
        f"Reinstall the driver's user-space "
        f"libraries{f' for driver {facts.driver.version}' if facts.driver.version else ''}: "
        f"`sudo apt-get install --reinstall {package}` (Ubuntu), your distribution's driver package, or NVIDIA's "
        f".run installer; then `sudo ldconfig`.",
        "In a container, the NVIDIA Container Toolkit mounts the driver's libraries: start it with `--gpus all` "
        "(and NVIDIA_DRIVER_CAPABILITIES including compute).",
    ]
