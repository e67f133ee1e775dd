"""cuDNN's files as they were copied: every part of a release, one release per folder, the toolkit's headers and import
libraries, the archive's layout, no copy in a system folder."""

from __future__ import annotations

from typing import Iterator

from cudnn_doctor import knowledge
from cudnn_doctor.checks._cudnn import (
    cudnn_steps,
    every_resolution,
    library_release_known,
    own_version,
    release,
)
from cudnn_doctor.checks._libraries import cudnn_key
from cudnn_doctor.checks._plan import install_archive
from cudnn_doctor.checks.cudnn import cuda_of_install
from cudnn_doctor.checks.evidence import (
    MissingHeaders,
    MissingImportLibraries,
    NestedCopy,
    SystemFolderCopy,
)
from cudnn_doctor.checks.rules import (
    CUDNN_HEADER_MISSING,
    CUDNN_IMPORT_LIB_MISSING,
    CUDNN_IN_SYSTEM_DIR,
    CUDNN_MIXED_VERSIONS,
    CUDNN_NESTED_LAYOUT,
    CUDNN_PARTIAL_INSTALL,
)
from cudnn_doctor.facts import CudnnInstall, Facts
from cudnn_doctor.findings import Finding
from cudnn_doctor.loads import PROCESS
from cudnn_doctor.paths import PathRules


@CUDNN_PARTIAL_INSTALL.checks
def cudnn_partial_install(facts: Facts) -> Iterator[Finding]:
    """cuDNN 8 and 9 are split into several libraries loaded at run time; copying only cudnn64_8.dll fails later with
    "Could not load library cudnn_cnn_infer64_8.dll"."""
    for install in facts.cudnn:
        if not install.missing_parts:
            continue
        names = [knowledge.cudnn_file_name(p, install.major, facts.os) for p in install.missing_parts]
        yield CUDNN_PARTIAL_INSTALL.finding(
            f"{install.folder} has cuDNN {install.version or install.major} but lacks {', '.join(names)}.",
            [
                f"Copy every file of the cuDNN {install.version or install.major} archive's "
                f"{'bin' if facts.os == 'windows' else 'lib'} folder into {install.folder} "
                f"(or run {_reinstall(facts, install)})."
            ],
            {"folder": install.folder, "missing": names},
            causes=(cudnn_key(facts, install.folder),),
        )


@CUDNN_MIXED_VERSIONS.checks
def cudnn_mixed_versions(facts: Facts) -> Iterator[Finding]:
    """The front library and its sub-libraries must come from one release; mixed, they fail with undefined symbols or
    CUDNN_STATUS_VERSION_MISMATCH."""
    reported: set[str] = set()
    for resolution, build in every_resolution(facts):
        if build is None and resolution.framework != PROCESS:
            continue
        known = {s.winner: library_release_known(facts, s.winner) for s in cudnn_steps(resolution) if s.winner}
        used = {p: v for p, (v, _) in known.items() if v}
        versions = set(used.values())
        if len(versions) > 1:
            listing = "; ".join(f"{p} ({v}, {known[p][1]})" for p, v in used.items())
            reported.update(used)
            who = f"{build.name} in {build.executable}" if build is not None else "a program started here"
            yield CUDNN_MIXED_VERSIONS.finding(
                f"One load of cuDNN by {who} combines releases {', '.join(map(str, sorted(versions)))}: {listing}.",
                [
                    "Make one complete cuDNN release the only one on the search path (see cudnn-shadowed), or "
                    "install the missing release's files beside the front library."
                ],
                {"libraries": {p: str(v) for p, v in used.items()}, "known_from": {p: known[p][1] for p in used}},
            )
    for install in facts.cudnn:
        own = {lib.path: version for lib in install.libraries for version in [own_version(install, lib)] if version}
        versions = {found for found in map(release, own.values()) if found is not None}
        if len(versions) > 1 and not all(lib.path in reported for lib in install.libraries):
            yield CUDNN_MIXED_VERSIONS.finding(
                f"{install.folder} holds cuDNN libraries of releases {', '.join(map(str, sorted(versions)))}: "
                + "; ".join(f"{path} ({version})" for path, version in own.items())
                + ".",
                [f"Replace every cuDNN file in {install.folder} with those of one release."],
                {"folder": install.folder},
            )


@CUDNN_HEADER_MISSING.checks
def cudnn_header_missing(facts: Facts) -> Iterator[Finding]:
    """Building CUDA extensions (darknet, apex, custom ops) needs cudnn.h and, since cuDNN 8, the cudnn_version.h it
    includes."""
    rules = PathRules(facts.os)
    for install in facts.cudnn:
        if not install.toolkit or install.nested_in or install.system_dir:
            continue
        present = {rules.name_key(rules.basename(h)) for h in install.headers_in_toolkit}
        needed = ["cudnn.h"] + (["cudnn_version.h"] if install.major >= 8 else [])
        missing = [h for h in needed if rules.name_key(h) not in present]
        if missing:
            include = rules.join(install.toolkit, "include")
            yield CUDNN_HEADER_MISSING.finding(
                f"cuDNN {install.version or install.major} libraries are in {install.folder}, but {include} lacks "
                f"{', '.join(missing)}.",
                [f"Copy all cudnn*.h files of the same cuDNN archive's include folder into {include}."],
                MissingHeaders(include=include, missing=tuple(missing)),
            )


@CUDNN_IMPORT_LIB_MISSING.checks
def cudnn_import_lib_missing(facts: Facts) -> Iterator[Finding]:
    """Linking against cuDNN on Windows needs cudnn.lib (and the per-library .lib files) in lib\\x64."""
    if facts.os != "windows":
        return
    for install in facts.cudnn:
        if install.toolkit and not install.nested_in and not install.system_dir and not install.import_libraries:
            target = PathRules("windows").join(install.toolkit, "lib", "x64")
            yield CUDNN_IMPORT_LIB_MISSING.finding(
                f"cuDNN DLLs are in {install.folder}, but {target} has no cudnn*.lib.",
                [f"Copy the archive's lib\\x64\\*.lib (or lib\\*.lib) files into {target}."],
                MissingImportLibraries(folder=target),
            )


@CUDNN_NESTED_LAYOUT.checks
def cudnn_nested_layout(facts: Facts) -> Iterator[Finding]:
    """Copying the archive's top folder (cuda\\ or cudnn-...-archive\\) into the toolkit puts every file one level too
    deep, where neither the loader nor the compiler looks."""
    rules = PathRules(facts.os)
    for install in facts.cudnn:
        if not install.nested_in or not install.toolkit:
            continue
        top = install.nested_in
        yield CUDNN_NESTED_LAYOUT.finding(
            f"cuDNN {install.version or install.major} is in {install.folder}, inside {top}: the archive's top "
            f"folder was copied into {install.toolkit}.",
            [
                f"Move the contents of {rules.join(top, 'bin')}, {rules.join(top, 'include')} and "
                f"{rules.join(top, 'lib')} into "
                f"{rules.join(install.toolkit, 'bin')}, {rules.join(install.toolkit, 'include')} and "
                f"{rules.join(install.toolkit, 'lib')}, then delete {top}.",
                f"Or run {_reinstall(facts, install)}, which puts each file where it belongs.",
            ],
            NestedCopy(folder=install.folder, top=top, toolkit=install.toolkit),
        )


@CUDNN_IN_SYSTEM_DIR.checks
def cudnn_in_system_dir(facts: Facts) -> Iterator[Finding]:
    """System32 is searched before PATH, so a cuDNN copied there wins over every other copy, forever, and no
    uninstaller removes it."""
    for install in facts.cudnn:
        if not install.system_dir:
            continue
        others = [i for i in facts.cudnn if i is not install and i.major == install.major]
        if facts.os != "windows" and (install.package or not others):
            continue
        files = ", ".join(lib.path for lib in install.libraries)
        yield CUDNN_IN_SYSTEM_DIR.finding(
            f"cuDNN {install.version or install.major} files in the system folder {install.folder}: {files}."
            + (f" Other copies: {', '.join(i.folder for i in others)}." if others else ""),
            [
                f"Delete {files} (from an elevated prompt on Windows); keep cuDNN in the CUDA toolkit folder or "
                f"the framework's environment."
            ],
            SystemFolderCopy(files=tuple(lib.path for lib in install.libraries)),
        )


def _reinstall(facts: Facts, install: CudnnInstall) -> str:
    """The install command that puts this release's files where they belong."""
    return install_archive(facts, install.version or str(install.major), cuda_of_install(facts, install))
