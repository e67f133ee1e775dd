"""Libraries in general: files that exist but cannot be used, and names nothing provides."""

from __future__ import annotations

import re
from typing import Iterator

from cudnn_doctor import knowledge
from cudnn_doctor.builds import Build
from cudnn_doctor.checks._cudnn import library_release, reports_cudnn_loaded, resolutions_with_builds
from cudnn_doctor.checks._libraries import failed_loads
from cudnn_doctor.checks.registry import finding, rule
from cudnn_doctor.facts import Candidate, Facts
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.paths import PathRules

GPU_LIBRARY = re.compile(r"(?i)(cudnn|cublas|cudart|cufft|curand|cusolver|cusparse|nvrtc|nvjitlink|zlibwapi|nvcuda|libcuda)")
_DEPENDENCY_OF = re.compile(r"Failed to load library (\S+) with error: ([\w.+-]+): cannot open shared object file")
_TF_ROOT_FAILURE = re.compile(r"Could not load dynamic library '")


def _bad_files(facts: Facts, problem: str) -> dict[str, str]:
    """path → who would load it, for every GPU-stack library with that problem."""
    found: dict[str, str] = {}
    for install in facts.cudnn:
        for library in install.libraries:
            if (problem == "0 bytes" and library.size == 0) or (problem == "unreadable" and not library.readable):
                found.setdefault(library.path, f"cuDNN in {install.folder}")
    for resolution in facts.resolutions:
        for step in resolution.steps:
            for candidate in step.candidates:
                if candidate.problem and candidate.problem.startswith(problem) and GPU_LIBRARY.search(candidate.path):
                    found.setdefault(candidate.path, f"{resolution.framework} (asked for {step.name})")
    return found


@rule("library-zero-bytes", Severity.ERROR, "A CUDA/cuDNN library file is 0 bytes")
def library_zero_bytes(facts: Facts) -> Iterator[Finding]:
    """An antivirus or a failed copy leaves empty files behind; the loader finds them and fails (error 193 on Windows)."""
    files = _bad_files(facts, "0 bytes")
    if files:
        yield finding("library-zero-bytes", "Empty library files: " + "; ".join(f"{p} (used by {who})" for p, who in files.items()) + ".",
                      ["Copy these files again from the archive or installer, then check their sizes; if they empty again, add an exclusion for the folder in the antivirus.",
                       "Or run `cudnn-doctor install ARCHIVE`, which verifies every file it writes."], {"files": list(files)})


@rule("library-unreadable", Severity.ERROR, "A CUDA/cuDNN library file cannot be read")
def library_unreadable(facts: Facts) -> Iterator[Finding]:
    """Files copied by an administrator can keep permissions that the user's process cannot read."""
    files = _bad_files(facts, "unreadable")
    if files:
        fix = (["Grant read access: `icacls \"<file>\" /grant Users:RX` from an elevated prompt (or reinstall)."] if facts.os == "windows"
               else [f"sudo chmod a+r {' '.join(files)}"])
        yield finding("library-unreadable", "Access denied opening: " + "; ".join(files) + ".", fix, {"files": list(files)})


@rule("library-wrong-architecture", Severity.ERROR, "A library is built for another machine type")
def library_wrong_architecture(facts: Facts) -> Iterator[Finding]:
    """A 32-bit DLL in a 64-bit process, or an aarch64 .so on x86_64, cannot be loaded at all."""
    bad: dict[str, Candidate] = {}
    for resolution in facts.resolutions:
        for step in resolution.steps:
            for candidate in step.candidates:
                if candidate.problem and candidate.problem.startswith("wrong architecture"):
                    bad.setdefault(candidate.path, candidate)
    if bad:
        yield finding("library-wrong-architecture", "; ".join(f"{p}: {c.problem}" for p, c in bad.items()) + ".",
                      ["Replace each with the build for this machine (x64 / x86_64 archives of cuDNN and CUDA)."], {"files": list(bad)})


def _skip_missing(facts: Facts, requester: str, name: str) -> bool:
    """Names whose absence is explained elsewhere or does not matter."""
    if re.match(knowledge.table("libraries").driver_provided.pattern, name):
        return True  # the driver's: no-nvidia-gpu / wsl-linux-driver-installed
    if name.lower() == "zlibwapi.dll":
        version = library_release(facts, requester)
        return version is not None and not knowledge.zlibwapi_required(version)
    return False


@rule("dependency-missing", Severity.ERROR, "A library imports or loads a DLL / shared object that cannot be found")
def dependency_missing(facts: Facts) -> Iterator[Finding]:
    """A dependency missing anywhere in the tree fails the load of everything above it, often with a message that names the wrong file."""
    rules = PathRules(facts.os)
    for resolution, build in resolutions_with_builds(facts):
        if reports_cudnn_loaded(build):
            continue  # the framework's own report outranks the emulation
        missing: dict[str, list[str]] = {}
        optional: set[str] = set()
        for step in resolution.steps:
            if step.how == "root" or not step.failed or _skip_missing(facts, step.requester, step.name):
                continue
            missing.setdefault(step.name, []).append(step.requester)
            if step.optional:
                optional.add(step.name)
        for name, requesters in missing.items():
            yield _missing(facts, build, name, requesters, name in optional, rules)
    yield from _logged_missing(facts)


def _missing(facts: Facts, build: Build, name: str, requesters: list[str], optional: bool, rules: PathRules) -> Finding:
    who = ", ".join(sorted({rules.basename(r) for r in requesters}))
    provider = knowledge.library_provider(name)
    folder = rules.dirname(requesters[0])
    detail = f"{who} (loaded by {build.name} in {build.python.executable}) needs {name}, which the loader finds nowhere."
    if optional:
        detail += " The library treats this load as optional: only some algorithms fail."
    fix = []
    if provider:
        detail += f" It is provided by {provider.provider}."
        fix.append(provider.fix.replace("{folder}", folder))
    else:
        fix.append(f"Install what provides {name} and put its folder on {'PATH' if facts.os == 'windows' else 'LD_LIBRARY_PATH'}.")
    return finding("dependency-missing", detail, fix, {"name": name, "needed_by": requesters, "provider": provider.provider if provider else None},
                   severity=Severity.WARNING if optional else Severity.ERROR)


def _logged_missing(facts: Facts) -> Iterator[Finding]:
    """What frameworks' own messages name as missing dependencies (not their own root loads)."""
    from cudnn_doctor.builds import builds

    rules = PathRules(facts.os)
    for build in builds(facts):
        text = build.text
        names = {m.group(2): m.group(1) for m in _DEPENDENCY_OF.finditer(text)}
        for name in failed_loads(build):
            if name in names or (_TF_ROOT_FAILURE.search(text) and f"'{name}'" in text):
                continue  # a library the framework itself asks for: cuda-libs-not-found / cudnn-missing say it
            names[name] = build.name
        for name, requester in names.items():
            yield _missing(facts, build, name, [requester], False, rules)


@rule("loader-emulation-differs", Severity.WARNING, "The real loader picked another file than the emulation")
def loader_emulation_differs(facts: Facts) -> Iterator[Finding]:
    """The emulation models the documented search order; when a live load disagrees, both answers are shown so nobody trusts the wrong one."""
    for confirmation in facts.confirmations:
        if confirmation.agrees:
            continue
        real = confirmation.real or f"nothing ({confirmation.error or 'load failed'})"
        yield finding("loader-emulation-differs",
                      f"For {confirmation.name} in {confirmation.executable} the emulated search finds {confirmation.emulated or 'nothing'}, "
                      f"but loading it for real gives {real}. Findings about this library rest on the emulation.",
                      ["Trust the real load; please report this with `cudnn-doctor snapshot --redact` so the emulation can be fixed."],
                      {"name": confirmation.name, "emulated": confirmation.emulated, "real": confirmation.real, "error": confirmation.error})
