"""The exact steps for a planned stack: what to download, the `cudnn-doctor install` line, the pip lines
with their index options, the conda line where the vendor gives one, and the check that proves it."""

from __future__ import annotations

from typing import Optional

from cudnn_doctor import knowledge
from cudnn_doctor.planner.candidates import V
from cudnn_doctor.planner.solver import Stack
from cudnn_doctor.record import Record

TOOLKIT_ARCHIVE = "https://developer.nvidia.com/cuda-toolkit-archive"
CUDNN_ARCHIVE = "https://developer.nvidia.com/rdp/cudnn-archive"
DRIVERS = "https://www.nvidia.com/Download/index.aspx"


class Download(Record):
    what: str
    file: Optional[str]  # the exact file name, where NVIDIA's is known
    page: str


class Steps(Record):
    downloads: tuple[Download, ...]
    commands: tuple[str, ...]  # shell lines, in order
    conda: tuple[str, ...]  # the vendor's conda lines, an alternative to the pip lines
    notes: tuple[str, ...]


def steps(stack: Stack, os_name: str, driver: Optional[str], environment: str = "gpu") -> Steps:
    downloads: list[Download] = []
    commands: list[str] = []
    notes: list[str] = []
    driver_os = "windows" if os_name in ("windows", "wsl") else "linux"
    needed = stack.drivers("min_driver")[driver_os]
    if needed and (driver is None or V(driver) < V(needed)):
        downloads.append(
            Download(
                f"NVIDIA driver {needed} or newer"
                + (" (the Windows driver: WSL2 uses it)" if os_name == "wsl" else ""),
                None,
                DRIVERS,
            )
        )
    if stack.python_outside and stack.python:
        python = _newest_python(stack.python)
        notes.append(
            f"this machine's Python {stack.python_outside} is outside {stack.python}: use a new environment with "
            f"Python {python}"
        )
        commands += [f"conda create -n {environment} python={python}", f"conda activate {environment}"]
    system = next((v for v in stack.chosen if v.needs.toolkit), None)
    if system is not None:
        downloads.append(Download(f"CUDA Toolkit {system.needs.toolkit}", None, TOOLKIT_ARCHIVE))
    with_cudnn = next(
        (v for v in stack.chosen if v.needs.toolkit and v.candidate.cudnn_rule != "none"), None
    )  # CuPy needs none
    if with_cudnn is not None:
        needs = with_cudnn.needs
        which = f"cuDNN {needs.cudnn}" if needs.cudnn else "cuDNN (a release NVIDIA's support matrix lists)"
        downloads.append(Download(f"{which} for CUDA {with_cudnn.candidate.cuda}", needs.cudnn_archive, CUDNN_ARCHIVE))
        if needs.cudnn_archive:
            commands.append(f"cudnn-doctor install {needs.cudnn_archive}")
        if os_name == "windows" and needs.cudnn and knowledge.zlibwapi_required(V(needs.cudnn)):
            notes.append(
                f"cuDNN {needs.cudnn} on Windows also loads zlibwapi.dll: put it in the toolkit's bin folder "
                f"(`cudnn-doctor check` says where)"
            )
    for verdict in stack.chosen:
        candidate = verdict.candidate
        if candidate.requirement:
            commands += pip_lines(candidate.requirement, candidate.pip_options)
        if candidate.note:
            notes.append(candidate.note)
    conda = tuple(v.candidate.conda for v in stack.chosen if v.candidate.conda)
    commands.append("cudnn-doctor check")
    return Steps(tuple(downloads), tuple(commands), conda, tuple(notes))


def pip_lines(requirement: str, options: tuple[str, ...]) -> list[str]:
    """The pip lines that install exactly the build planned (`pip_option_sets`)."""
    return [pip_line(requirement, step) for step in pip_option_sets(requirement, options)]


def pip_option_sets(requirement: str, options: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The index options of each pip line that installs exactly the build planned. A build from a side feed
    (`--extra-index-url FEED`) whose version PyPI also serves (ONNX Runtime's CUDA 12 builds of 1.17-1.18, PyPI's being
    CUDA 11.8) would let pip take either: it is installed from the feed alone without its dependencies, then the same
    pin, already met, brings those."""
    feed = options[options.index("--extra-index-url") + 1] if "--extra-index-url" in options[:-1] else None
    if feed is None or not _on_pypi(requirement):
        return [options]
    return [("--index-url", feed, "--no-deps"), ()]


def _on_pypi(requirement: str) -> bool:
    """Whether the recorded package index lists the exact release `name==version` pins."""
    name, _, version = requirement.partition("==")
    return bool(version) and any(row.version == version for row in knowledge.published(name.split("[", 1)[0]))


def pip_line(requirement: str, options: tuple[str, ...]) -> str:
    """`python -m pip install "torch==2.1.2" --index-url URL`: quoted, so `[extras]` and `<` survive every shell."""
    return " ".join(["python -m pip install", f'"{requirement}"', *options])


def _newest_python(python: str) -> str:
    """The newest X.Y a range admits, for `conda create ... python=X.Y`."""
    from cudnn_doctor.knowledge.records import VersionRange

    return VersionRange(python).newest_minor() or "3"
