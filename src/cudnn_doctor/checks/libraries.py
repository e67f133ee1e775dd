"""Libraries in general: files that exist but cannot be used, and names nothing provides."""

from __future__ import annotations

from typing import Collection, Iterator

from cudnn_doctor import knowledge
from cudnn_doctor.checks._cudnn import every_resolution, library_release
from cudnn_doctor.checks._driver_libraries import (
    driver_visible,
    gpu_withheld,
    is_driver_library,
    other_spelling_loaded,
    proven_by_the_gpu,
)
from cudnn_doctor.checks._libraries import (
    area_of_library,
    cudnn_key,
    is_cudnn,
)
from cudnn_doctor.checks._missing import logged_missing, missing_finding
from cudnn_doctor.checks._plan import install_archive
from cudnn_doctor.checks.rules import (
    DEPENDENCY_MISSING,
    LIBRARY_UNREADABLE,
    LIBRARY_WRONG_ARCHITECTURE,
    LIBRARY_ZERO_BYTES,
    LOADER_EMULATION_DIFFERS,
)
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Area, Finding
from cudnn_doctor.kinds import LoadHow
from cudnn_doctor.lazyre import regex
from cudnn_doctor.loads import EMPTY, PROCESS, UNREADABLE, WRONG_ARCHITECTURE, Candidate, LoadStep, Resolution
from cudnn_doctor.paths import PathRules

GPU_LIBRARY = regex(r"(?i)(cudnn|cublas|cudart|cufft|curand|cusolver|cusparse|nvrtc|nvjitlink|zlibwapi|nvcuda|libcuda)")


def _bad_files(facts: Facts, problem: str) -> dict[str, str]:
    """path → who would load it, for every GPU-stack library with that problem."""
    found: dict[str, str] = {}
    for install in facts.cudnn:
        for library in install.libraries:
            if (problem == EMPTY and library.size == 0) or (problem == UNREADABLE and not library.readable):
                found.setdefault(library.path, f"cuDNN in {install.folder}")
    for resolution in facts.resolutions:
        for step in resolution.steps:
            for candidate in step.candidates:
                if candidate.problem and candidate.problem.kind == problem and GPU_LIBRARY.search(candidate.path):
                    found.setdefault(candidate.path, f"{resolution.framework} (asked for {step.name})")
    return found


def _files_area(files: Collection[str]) -> Area:
    """cuDNN when any of the files is cuDNN's, else where the first one belongs."""
    areas = [area_of_library(f) for f in files]
    return Area.CUDNN if Area.CUDNN in areas else areas[0]


def _reinstall_commands(facts: Facts, files: Collection[str]) -> list[str]:
    """The install command of each cuDNN installation a broken file belongs to (other files come from their
    installer)."""
    rules = PathRules(facts.os)
    owners = {i.folder: i for i in facts.cudnn for f in files if is_cudnn(f) and rules.same(rules.dirname(f), i.folder)}
    return list(
        dict.fromkeys(
            install_archive(facts, i.version or str(i.major), str(i.cuda_major) if i.cuda_major else None)
            for i in owners.values()
        )
    )


def _file_causes(facts: Facts, files: Collection[str]) -> list[str]:
    """A broken file of a cuDNN installation is that installation's problem: one key per folder."""
    rules = PathRules(facts.os)
    return [cudnn_key(facts, rules.dirname(f)) for f in files if is_cudnn(f)]


@LIBRARY_ZERO_BYTES.checks
def library_zero_bytes(facts: Facts) -> Iterator[Finding]:
    """An antivirus or a failed copy leaves empty files behind; the loader finds them and fails (error 193 on
    Windows)."""
    files = _bad_files(facts, EMPTY)
    if files:
        yield LIBRARY_ZERO_BYTES.finding(
            "Empty library files: " + "; ".join(f"{p} (used by {who})" for p, who in files.items()) + ".",
            [
                "Copy these files again from the archive or installer, then check their sizes; if they empty "
                "again, add an exclusion for the folder in the antivirus.",
                *(
                    f"Or run {command}, which verifies every file it writes."
                    for command in _reinstall_commands(facts, files)
                ),
            ],
            {"files": list(files)},
            area=_files_area(files),
            causes=_file_causes(facts, files),
        )


@LIBRARY_UNREADABLE.checks
def library_unreadable(facts: Facts) -> Iterator[Finding]:
    """Files copied by an administrator can keep permissions that the user's process cannot read."""
    files = _bad_files(facts, UNREADABLE)
    if files:
        fix = (
            [
                "Grant read access from an elevated prompt (or reinstall): "
                + "; ".join(f'`icacls "{path}" /grant Users:RX`' for path in files)
                + "."
            ]
            if facts.os == "windows"
            else [f"sudo chmod a+r {' '.join(files)}"]
        )
        yield LIBRARY_UNREADABLE.finding(
            "Access denied opening: " + "; ".join(files) + ".",
            fix,
            {"files": list(files)},
            area=_files_area(files),
            causes=_file_causes(facts, files),
        )


@LIBRARY_WRONG_ARCHITECTURE.checks
def library_wrong_architecture(facts: Facts) -> Iterator[Finding]:
    """A 32-bit DLL in a 64-bit process, or an aarch64 .so on x86_64, cannot be loaded at all."""
    bad: dict[str, Candidate] = {}
    for resolution in facts.resolutions:
        for step in resolution.steps:
            for candidate in step.candidates:
                if candidate.problem and candidate.problem.kind == WRONG_ARCHITECTURE:
                    bad.setdefault(candidate.path, candidate)
    if bad:
        yield LIBRARY_WRONG_ARCHITECTURE.finding(
            "; ".join(f"{p}: {c.problem}" for p, c in bad.items()) + ".",
            ["Replace each with the build for this machine (x64 / x86_64 archives of cuDNN and CUDA)."],
            {"files": list(bad)},
            area=_files_area(bad),
            causes=_file_causes(facts, bad),
        )


def _skip_missing(facts: Facts, requester: str, name: str) -> bool:
    """Names whose absence is explained elsewhere or does not matter."""
    if is_driver_library(name):
        # no driver at all: no-nvidia-gpu / wsl-linux-driver-installed say it; a container without the GPU lists them as
        # its symptoms
        return not driver_visible(facts) and not gpu_withheld(facts)
    if name.lower() == "zlibwapi.dll":
        version = library_release(facts, requester)
        return version is not None and not knowledge.zlibwapi_required(version)
    return False


@DEPENDENCY_MISSING.checks
def dependency_missing(facts: Facts) -> Iterator[Finding]:
    """A dependency missing anywhere in the tree fails the load of everything above it, often with a message that names
    the wrong file."""
    rules = PathRules(facts.os)
    emulated: set[tuple[str, str, str]] = set()  # (executable, framework, name) the emulation already reports
    for resolution, build in every_resolution(facts):
        if build is None and resolution.framework != PROCESS:
            continue
        vouched, vouched_names = (
            _vouched(resolution, rules) if build is not None and build.cudnn_works else (set(), set())
        )
        missing: dict[str, list[str]] = {}
        steps: dict[str, LoadStep] = {}
        optional: set[str] = set()
        elsewhere: dict[str, list[str]] = {}
        for step in resolution.steps:
            names = step.one_of or (step.name,)
            if (
                step.how is LoadHow.ROOT
                or not step.failed
                or any(_skip_missing(facts, step.requester, n) for n in names)
            ):
                continue
            if other_spelling_loaded(resolution, step, rules) or proven_by_the_gpu(build, step.name):
                # the fallback spelling of a driver library the process did load; the driver itself, when the framework
                # reached a GPU
                continue
            if (step.how is LoadHow.IMPORT and step.requester in vouched) or any(
                rules.name_key(n) in vouched_names for n in names
            ):
                continue  # the live process did load it, from somewhere the emulation does not see
            missing.setdefault(step.wanted, []).append(step.requester)
            steps.setdefault(step.wanted, step)
            elsewhere.setdefault(step.wanted, []).extend(step.elsewhere)
            if step.optional:
                optional.add(step.wanted)
        for wanted, requesters in missing.items():
            emulated.update(
                (resolution.executable, resolution.framework, rules.name_key(n))
                for n in steps[wanted].one_of or (steps[wanted].name,)
            )
            yield missing_finding(
                facts,
                build,
                steps[wanted],
                requesters,
                wanted in optional,
                rules,
                resolution,
                elsewhere.get(wanted, ()),
            )
    yield from logged_missing(facts, emulated)


def _vouched(resolution: Resolution, rules: PathRules) -> tuple[set[str], set[str]]:
    """What a framework's live report of a working cuDNN proves: the libraries it asked for and
    their static imports, transitively (paths), and the imported names the emulation could not
    find (the process has a module of that name, so later requests reuse it). Libraries loaded at
    run time (cuDNN 9's graph and engine libraries) load lazily, after the report: not vouched for."""
    paths = {s.winner for s in resolution.steps if s.how is LoadHow.ROOT and s.winner}
    names: set[str] = set()
    for step in resolution.steps:  # breadth first: a requester comes before what it imports
        if step.how is not LoadHow.IMPORT or step.requester not in paths:
            continue
        if step.winner:
            paths.add(step.winner)
        elif step.failed:
            names.add(rules.name_key(step.name))
    return paths, names


@LOADER_EMULATION_DIFFERS.checks
def loader_emulation_differs(facts: Facts) -> Iterator[Finding]:
    """The emulation models the documented search order; when a live load disagrees, both answers are shown so nobody
    trusts the wrong one."""
    for confirmation in facts.confirmations:
        if confirmation.agrees:
            continue
        real = confirmation.real or f"nothing ({confirmation.error or 'load failed'})"
        yield LOADER_EMULATION_DIFFERS.finding(
            f"For {confirmation.name} in {confirmation.executable} the emulated search finds "
            f"{confirmation.emulated or 'nothing'}, "
            f"but loading it for real gives {real}. Findings about this library rest on the emulation.",
            [
                "Trust the real load; please report this with `cudnn-doctor snapshot --redact` so the emulation "
                "can be fixed."
            ],
            {
                "name": confirmation.name,
                "emulated": confirmation.emulated,
                "real": confirmation.real,
                "error": confirmation.error,
            },
        )
