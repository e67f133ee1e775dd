"""Libraries in general: files that exist but cannot be used, and names nothing provides."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.checks._cudnn import library_release, owner, resolutions_with_builds
from cudnn_doctor.checks._libraries import area_of_library, basename, build_key, cuda_key_of_library, cudnn_key, is_cudnn
from cudnn_doctor.checks._wheels import held_by, install_fixes, not_searched, reach_fixes, wheels_key
from cudnn_doctor.checks.registry import finding, rule
from cudnn_doctor.facts import EMPTY, UNREADABLE, WRONG_ARCHITECTURE, Candidate, Facts, FrameworkBuild, Resolution
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.paths import PathRules

GPU_LIBRARY = re.compile(r"(?i)(cudnn|cublas|cudart|cufft|curand|cusolver|cusparse|nvrtc|nvjitlink|zlibwapi|nvcuda|libcuda)")


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


def _files_area(files) -> Area:
    """cuDNN when any of the files is cuDNN's, else where the first one belongs."""
    areas = [area_of_library(f) for f in files]
    return Area.CUDNN if Area.CUDNN in areas else areas[0]


def _file_causes(facts: Facts, files) -> list[str]:
    """A broken file of a cuDNN installation is that installation's problem: one key per folder."""
    rules = PathRules(facts.os)
    return [cudnn_key(facts, rules.dirname(f)) for f in files if is_cudnn(f)]


@rule("library-zero-bytes", Severity.ERROR, "A CUDA/cuDNN library file is 0 bytes", Area.CUDNN)
def library_zero_bytes(facts: Facts) -> Iterator[Finding]:
    """An antivirus or a failed copy leaves empty files behind; the loader finds them and fails (error 193 on Windows)."""
    files = _bad_files(facts, EMPTY)
    if files:
        yield finding(
            "library-zero-bytes",
            "Empty library files: " + "; ".join(f"{p} (used by {who})" for p, who in files.items()) + ".",
            [
                "Copy these files again from the archive or installer, then check their sizes; if they empty again, add an exclusion for the folder in the antivirus.",
                "Or run `cudnn-doctor install ARCHIVE`, which verifies every file it writes.",
            ],
            {"files": list(files)},
            area=_files_area(files),
            causes=_file_causes(facts, files),
        )


@rule("library-unreadable", Severity.ERROR, "A CUDA/cuDNN library file cannot be read", Area.CUDNN)
def library_unreadable(facts: Facts) -> Iterator[Finding]:
    """Files copied by an administrator can keep permissions that the user's process cannot read."""
    files = _bad_files(facts, UNREADABLE)
    if files:
        fix = (
            ['Grant read access: `icacls "<file>" /grant Users:RX` from an elevated prompt (or reinstall).']
            if facts.os == "windows"
            else [f"sudo chmod a+r {' '.join(files)}"]
        )
        yield finding(
            "library-unreadable",
            "Access denied opening: " + "; ".join(files) + ".",
            fix,
            {"files": list(files)},
            area=_files_area(files),
            causes=_file_causes(facts, files),
        )


@rule("library-wrong-architecture", Severity.ERROR, "A library is built for another machine type", Area.CUDNN)
def library_wrong_architecture(facts: Facts) -> Iterator[Finding]:
    """A 32-bit DLL in a 64-bit process, or an aarch64 .so on x86_64, cannot be loaded at all."""
    bad: dict[str, Candidate] = {}
    for resolution in facts.resolutions:
        for step in resolution.steps:
            for candidate in step.candidates:
                if candidate.problem and candidate.problem.kind == WRONG_ARCHITECTURE:
                    bad.setdefault(candidate.path, candidate)
    if bad:
        yield finding(
            "library-wrong-architecture",
            "; ".join(f"{p}: {c.problem}" for p, c in bad.items()) + ".",
            ["Replace each with the build for this machine (x64 / x86_64 archives of cuDNN and CUDA)."],
            {"files": list(bad)},
            area=_files_area(bad),
            causes=_file_causes(facts, bad),
        )


def _skip_missing(facts: Facts, requester: str, name: str) -> bool:
    """Names whose absence is explained elsewhere or does not matter."""
    if re.match(knowledge.table("libraries").driver_provided.pattern, name):
        return True  # the driver's: no-nvidia-gpu / wsl-linux-driver-installed
    if name.lower() == "zlibwapi.dll":
        version = library_release(facts, requester)
        return version is not None and not knowledge.zlibwapi_required(version)
    return False


@rule(
    "dependency-missing",
    Severity.ERROR,
    "A library imports or loads a DLL / shared object that cannot be found",
    Area.ENVIRONMENT,
    explained_by=(
        "framework-cuda-mismatch",
        "cudnn-cuda-mismatch",
        "cudnn-partial-install",
        "cuda-libs-not-found",
        "cuda-toolkit-missing",
        "cudnn-missing",
        "library-zero-bytes",
        "library-unreadable",
        "library-wrong-architecture",
    ),
)
def dependency_missing(facts: Facts) -> Iterator[Finding]:
    """A dependency missing anywhere in the tree fails the load of everything above it, often with a message that names the wrong file."""
    rules = PathRules(facts.os)
    emulated: set[tuple[str, str, str]] = set()  # (executable, framework, name) the emulation already reports
    for resolution, build in resolutions_with_builds(facts):
        vouched, vouched_names = _vouched(resolution, rules) if build.cudnn_works else (set(), set())
        missing: dict[str, list[str]] = {}
        optional: set[str] = set()
        for step in resolution.steps:
            if step.how == "root" or not step.failed or _skip_missing(facts, step.requester, step.name):
                continue
            if (step.how == "import" and step.requester in vouched) or rules.name_key(step.name) in vouched_names:
                continue  # the live process did load it, from somewhere the emulation does not see
            missing.setdefault(step.name, []).append(step.requester)
            if step.optional:
                optional.add(step.name)
        for name, requesters in missing.items():
            emulated.add((build.executable, build.name, rules.name_key(name)))
            yield _missing(facts, build, name, requesters, name in optional, rules)
    yield from _logged_missing(facts, emulated)


def _vouched(resolution: Resolution, rules: PathRules) -> tuple[set[str], set[str]]:
    """What a framework's live report of a working cuDNN proves: the libraries it asked for and
    their static imports, transitively (paths), and the imported names the emulation could not
    find (the process has a module of that name, so later requests reuse it). Libraries loaded at
    run time (cuDNN 9's graph and engine libraries) load lazily, after the report: not vouched for."""
    paths = {s.winner for s in resolution.steps if s.how == "root" and s.winner}
    names: set[str] = set()
    for step in resolution.steps:  # breadth first: a requester comes before what it imports
        if step.how != "import" or step.requester not in paths:
            continue
        if step.winner:
            paths.add(step.winner)
        elif step.failed:
            names.add(rules.name_key(step.name))
    return paths, names


def _missing(facts: Facts, build: FrameworkBuild, name: str, requesters: list[str], optional: bool, rules: PathRules) -> Finding:
    who = ", ".join(sorted({rules.basename(r) for r in requesters}))
    provider = knowledge.library_provider(name)
    folder = rules.dirname(requesters[0]) or "the folder of the library that needs it"
    detail = f"{who} (loaded by {build.name} in {build.executable}) needs {name}, which the loader finds nowhere."
    if optional:
        detail += " The library treats this load as optional: only some algorithms fail."
    fix = []
    holder = held_by(facts, build, name)
    causes = _dependency_causes(facts, build, name, requesters)
    if holder is not None:
        detail += not_searched(facts, build, [holder])
        fix.extend(reach_fixes(facts, build, [holder]))
        causes.append(wheels_key(build))
    elif provider:
        detail += f" It is provided by {provider.provider}."
        pip = install_fixes(facts, build, [name]) if knowledge.wheel_providing(name, facts.os) else []
        own = provider.fix.replace("{folder}", folder)
        reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
        if pip and reach is not None and reach.extras:  # the framework's own pip extras are the usual way
            fix.extend([*pip, f"Or: {own}"])
        else:
            fix.extend([own, *(f"Or: {step}" if i == 0 else step for i, step in enumerate(pip))])
    elif knowledge.wheel_providing(name, facts.os):
        row = knowledge.wheel_providing(name, facts.os, build.cuda_major)
        detail += f" It is provided by the pip wheel {row.distribution} (or a CUDA toolkit)." if row else ""
        fix.extend(install_fixes(facts, build, [name]))
    else:
        fix.append(f"Install what provides {name} and put its folder on {'PATH' if facts.os == 'windows' else 'LD_LIBRARY_PATH'}.")
    return finding(
        "dependency-missing",
        detail,
        fix,
        {"name": name, "needed_by": requesters, "provider": provider.provider if provider else None},
        severity=Severity.WARNING if optional else Severity.ERROR,
        area=area_of_library(name, requesters[0]),
        causes=causes,
    )


def _dependency_causes(facts: Facts, build: FrameworkBuild, name: str, requesters: list[str]) -> list[Optional[str]]:
    """What a missing dependency is a symptom of: the CUDA runtime it belongs to, the incomplete cuDNN
    installation that asks for its own part, or the build whose own library asks for it."""
    causes = [cuda_key_of_library(name)]
    for requester in requesters:
        install, _ = owner(facts, requester)
        if install is not None and is_cudnn(name):
            causes.append(cudnn_key(facts, install.folder))
        elif install is None and not is_cudnn(requester) and requester != build.name:
            causes.append(build_key(build))  # the framework's own library (ONNX Runtime's CUDA provider)
    return causes


def _logged_missing(facts: Facts, emulated: set[tuple[str, str, str]]) -> Iterator[Finding]:
    """What frameworks' own messages name as missing dependencies (not their own root loads), unless the emulation said it."""
    rules = PathRules(facts.os)
    for build in facts.builds:
        for failure in build.load_failures:
            if failure.direct:
                continue  # a library the framework itself asks for: cuda-libs-not-found / cudnn-missing say it
            if (build.executable, build.name, rules.name_key(basename(failure.library))) in emulated:
                continue  # the emulation found the same gap, with the folder that asks for it
            yield _missing(facts, build, basename(failure.library), [failure.needed_by or build.name], False, rules)


@rule("loader-emulation-differs", Severity.WARNING, "The real loader picked another file than the emulation", Area.ENVIRONMENT)
def loader_emulation_differs(facts: Facts) -> Iterator[Finding]:
    """The emulation models the documented search order; when a live load disagrees, both answers are shown so nobody trusts the wrong one."""
    for confirmation in facts.confirmations:
        if confirmation.agrees:
            continue
        real = confirmation.real or f"nothing ({confirmation.error or 'load failed'})"
        yield finding(
            "loader-emulation-differs",
            f"For {confirmation.name} in {confirmation.executable} the emulated search finds {confirmation.emulated or 'nothing'}, "
            f"but loading it for real gives {real}. Findings about this library rest on the emulation.",
            ["Trust the real load; please report this with `cudnn-doctor snapshot --redact` so the emulation can be fixed."],
            {"name": confirmation.name, "emulated": confirmation.emulated, "real": confirmation.real, "error": confirmation.error},
        )
