"""cuDNN: is there one where the framework looks for it.

This module holds what the framework's own output and the loader's name search can tell;
the binary-level checks (versions, CUDA majors, partial installs) build on it.
"""

from __future__ import annotations

from typing import Iterator, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.checks._cudnn import (
    Wanted,
    cudnn_steps,
    library_release,
    release,
    resolutions_with_builds,
    wanted_cudnn,
)
from cudnn_doctor.checks._libraries import build_key, cuda_key, cudnn_key, lookup, reach_folder_fix, system_builds
from cudnn_doctor.checks._plan import cudnn_archive_for, first_option, install_archive, installed_toolkit, pins
from cudnn_doctor.checks._wheels import extras_missing, held_by, install_fixes, not_searched, reach_fixes, wheels_key
from cudnn_doctor.checks.evidence import (
    ShadowedCopies,
)
from cudnn_doctor.checks.rules import (
    CUDNN_CUDA_MISMATCH,
    CUDNN_MISSING,
    CUDNN_SHADOWED,
    CUDNN_VERSION_MISMATCH,
)
from cudnn_doctor.facts import SYSTEM, CudnnInstall, Facts, FrameworkBuild
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.loads import LoadStep, is_cudnn_front
from cudnn_doctor.paths import PathRules, prepend_ld_library_path
from cudnn_doctor.versions import parse_version


@CUDNN_MISSING.checks
def cudnn_missing(facts: Facts) -> Iterator[Finding]:
    """TensorFlow, PaddlePaddle and ONNX Runtime load cuDNN by name from the system; without it every convolution runs
    on the CPU or fails."""
    for build, libraries in system_builds(facts):
        said = [f.library for f in build.load_failures if is_cudnn_front(f.library)]
        told = next(
            (u.message for u in build.unloadable if u.part == "cudnn"), None
        )  # "Cannot load cudnn shared library": no file named
        found = lookup(facts, build, libraries.cudnn)
        missing = found is not None and found.winner is None and not build.sees_gpu
        if not said and not missing and told is None:
            continue
        name = said[0] if said else libraries.cudnn
        if name is None:
            continue  # no file named and no major known: nothing to look for or install by name
        detail = f"{build.name} {build.version} in {build.executable} cannot load {name}"
        detail += " (its own log says so)." if said else f' (its own log says: "{told}").' if told else "."
        if told and found is not None and found.winner is not None:
            detail += f" The emulated search finds {found.winner}, but the framework's own load of it failed."
        fix: list[str] = []
        causes: list[Optional[str]] = []
        holder = held_by(facts, build, name)
        if found is not None and found.winner is None:
            detail += f" Searched: {'; '.join(found.searched[:8])}{'; …' if len(found.searched) > 8 else ''}."
            if holder is not None:
                detail += not_searched(facts, build, [holder])
                fix.extend(reach_fixes(facts, build, [holder]))
                causes.append(wheels_key(build))
            elif found.elsewhere:
                detail += f" A copy exists at {found.elsewhere[0]}, outside the search path."
                step, stale = reach_folder_fix(facts, PathRules(facts.os).dirname(found.elsewhere[0]))
                fix.append(step)
                causes.append(stale)
        if not fix:
            fix.extend(_install_cudnn(facts, build, name))
            if extras_missing(facts, build):
                causes.append(wheels_key(build))  # one pip line installs all of them: one cause
        causes.append(_wanted_key(build))
        yield CUDNN_MISSING.finding(detail, fix, {"framework": build.name, "library": name}, causes=causes)


def _archive_for(facts: Facts, build: FrameworkBuild, want: Optional[Wanted] = None) -> str:
    """The install command for the cuDNN the build needs (at least `want`'s release, else its major) for its CUDA."""
    cudnn = str(want.minimum or want.major) if want is not None else build.cudnn.value if build.cudnn else None
    return install_archive(facts, cudnn, _release(build.cuda_version))


def cuda_of_install(facts: Facts, install: CudnnInstall) -> Optional[str]:
    """The CUDA an installation was built for: its own major, else the version of the toolkit it lies in."""
    if install.cuda_major is not None:
        return str(install.cuda_major)
    toolkit = next(
        (t for t in facts.toolkits.toolkits if install.toolkit and PathRules(facts.os).same(t.root, install.toolkit)),
        None,
    )
    return _release(parse_version(toolkit.version)) if toolkit is not None and toolkit.version else None


def _release(version: Optional[Version]) -> Optional[str]:
    """A CUDA version as its major.minor ("11.2" for 11.2.152), or its major where no minor is known."""
    if version is None:
        return None
    return ".".join(str(n) for n in version.release[:2])


def _install_cudnn(facts: Facts, build: FrameworkBuild, name: str) -> list[str]:
    """pip first where the framework release installs its CUDA libraries through extras (and can preload them); else
    the archive, then the wheel."""
    archive = (
        "Download the cuDNN release that matches the framework's CUDA version from "
        "https://developer.nvidia.com/rdp/cudnn-archive "
        f"and copy its bin, include and lib folders into the CUDA toolkit folder (or run {_archive_for(facts, build)})."
    )
    pip = install_fixes(facts, build, [name])
    reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
    if reach is not None and reach.extras:
        return [*pip, f"Or: {archive}"]
    return [archive, *(f"Or: {step}" if i == 0 else step for i, step in enumerate(pip))]


def _where(facts: Facts, path: Optional[str]) -> str:
    install, _ = facts.cudnn_owner(path)
    version = library_release(facts, path)
    extra = []
    if version:
        extra.append(f"cuDNN {version}")
    if install and install.cuda_major:
        extra.append(f"for CUDA {install.cuda_major}")
    return f"{path} ({', '.join(extra)})" if extra else f"{path}"


@CUDNN_VERSION_MISMATCH.checks
def cudnn_version_mismatch(facts: Facts) -> Iterator[Finding]:
    """A framework needs cuDNN of the major it was built with, at least as new as the one it was built with; anything
    else fails at the first convolution."""
    resolved = {(r.executable, r.framework): r for r, _ in resolutions_with_builds(facts)}
    for build in facts.builds:
        resolution = resolved.get((build.executable, build.name))
        want = wanted_cudnn(build)
        step = resolution.cudnn_front() if resolution is not None and build.cuda_from == SYSTEM else None
        loaded = library_release(facts, step.winner) if step and step.winner else None
        logged = build.cudnn_mismatch
        bad = (
            loaded is not None
            and want is not None
            and (loaded.release[0] != want.major or (want.minimum is not None and loaded < want.minimum))
        )
        root = lookup(facts, build, build.system_libraries.cudnn) if build.system_libraries else None
        others = (
            _only_other_majors(facts, build, want)
            if (root is None or root.winner is None) and not (root and root.elsewhere)
            else []
        )
        if others and want is not None:  # others are looked for only when a major is wanted
            yield _other_majors_finding(facts, build, want, others)
            continue
        if not bad and not logged:
            continue
        need = f"cuDNN {want.minimum or want.major}" if want else "another cuDNN"
        detail = f"{build.name} {build.version} needs {need} (same major, this version or newer)"
        if step and step.winner:
            detail += f"; the loader picks {_where(facts, step.winner)}."
        if logged:
            detail += f" Its log says: loaded {logged.loaded}, compiled with {logged.compiled}"
            detail += f", needs at least {logged.minimum}." if logged.minimum else "."
        good = [
            i for i in facts.cudnn if want and i.major == want.major and _at_least(release(i.version), want.minimum)
        ]
        fix = (
            [
                f"Put {good[0].folder} (cuDNN {good[0].version}) first on the search path, or remove the older "
                f"copy {step.winner if step else ''}."
            ]
            if good
            else []
        )
        fix.append(
            _planned_cudnn_line(facts, build, want)
            or f"Install cuDNN {want.minimum if want and want.minimum else want.major if want else ''} or newer "
            f"of the same major for CUDA {build.cuda_major or ''} "
            f"(https://developer.nvidia.com/rdp/cudnn-archive), e.g. with {_archive_for(facts, build, want)}."
        )
        yield CUDNN_VERSION_MISMATCH.finding(
            detail,
            fix,
            {
                "framework": build.name,
                "loaded": str(loaded) if loaded else None,
                "wanted": str(want.minimum or want.major) if want else None,
                "source": want.source if want else None,
            },
        )


def _at_least(version: Optional[Version], minimum: Optional[Version]) -> bool:
    """A release is known and not below `minimum` (any known one when there is none)."""
    return version is not None and (minimum is None or version >= minimum)


def _planned_cudnn_line(facts: Facts, build: FrameworkBuild, want: Optional[Wanted], beside: str = "") -> Optional[str]:
    """The exact cuDNN release and archive the planner gives the installed release (for the installed toolkit of its
    CUDA
    major where the build allows it), when it is of the major and at least the version the build needs."""
    if want is None or build.cuda_from != SYSTEM:
        return None
    release = (build.version or "").split("+")[0] or None
    toolkit = installed_toolkit(facts, build.cuda_major)
    option = None
    for cuda in ([toolkit] if toolkit else []) + [None]:
        option = first_option(facts, build.executable, pins(build.name, release), release, cuda=cuda)
        if option is not None:
            break
    planned = parse_version(option.verdict.needs.cudnn) if option is not None and option.verdict.needs.cudnn else None
    if (
        option is None
        or planned is None
        or planned.release[0] != want.major
        or (want.minimum is not None and planned < want.minimum)
    ):
        return None
    needs, candidate = option.verdict.needs, option.verdict.candidate
    how = f"`cudnn-doctor install {needs.cudnn_archive}`" if needs.cudnn_archive else "its archive"
    return (
        f"Install cuDNN {needs.cudnn} for CUDA {candidate.cuda}{beside} "
        f"(https://developer.nvidia.com/rdp/cudnn-archive): {how}."
    )


def _only_other_majors(facts: Facts, build: FrameworkBuild, want: Optional[Wanted]) -> list[CudnnInstall]:
    """The installations of other majors, when a system-loading build finds none of the major it needs anywhere."""
    if want is None or build.cuda_from != SYSTEM or build.sees_gpu:
        return []
    if any(i.major == want.major for i in facts.cudnn):
        return []
    return [i for i in facts.cudnn if i.major != want.major]


def _other_majors_finding(facts: Facts, build: FrameworkBuild, want: Wanted, others: list[CudnnInstall]) -> Finding:
    """cuDNN keeps one soname per major, so cuDNN 9 can never stand in for the cudnn64_8.dll a build asks for (nor the
    reverse)."""
    installed = "; ".join(f"cuDNN {i.version or i.major} in {i.folder}" for i in others[:4])
    need = f"cuDNN {want.minimum or want.major}"
    cuda = f" for CUDA {build.cuda_major}" if build.cuda_major else ""
    return CUDNN_VERSION_MISMATCH.finding(
        f"{build.name} {build.version} needs {need} (major {want.major}, this version or newer), but only other "
        f"majors are installed: {installed}.",
        [
            _planned_cudnn_line(
                facts,
                build,
                want,
                beside=f" beside the cuDNN {others[0].major} you have (each major has its own file names)",
            )
            or f"Install cuDNN {want.minimum or want.major} or a newer {want.major}.x{cuda} beside the one you have "
            f"(https://developer.nvidia.com/rdp/cudnn-archive), e.g. with {_archive_for(facts, build, want)}; "
            f"or install the {build.name} release built for cuDNN {others[0].major}.",
        ],
        {
            "framework": build.name,
            "loaded": None,
            "wanted": str(want.minimum or want.major),
            "installed": [i.version or str(i.major) for i in others],
            "source": want.source,
        },
        causes=(_wanted_key(build),),
    )


def _wanted_key(build: FrameworkBuild) -> str:
    """The cause key a missing cuDNN and a wrong-major-only machine share: one problem, said once."""
    return f"{build_key(build)}:cudnn"


@CUDNN_CUDA_MISMATCH.checks
def cudnn_cuda_mismatch(facts: Facts) -> Iterator[Finding]:
    """cuDNN builds exist per CUDA major (cuda11 / cuda12 archives); the wrong one looks for cuBLAS DLLs that are not
    there.

    Every cuDNN library of the load is judged, for every framework (torch's bundled or wheel
    cuDNN included): a sub-library or engine found in another installation is as wrong as a front one."""
    judged: set[str] = set()
    for resolution, build in resolutions_with_builds(facts):
        major = build.cuda_major
        if major is None:
            continue
        wrong: dict[str, tuple[CudnnInstall, list[str]]] = {}
        for step in cudnn_steps(resolution):
            install, _ = facts.cudnn_owner(step.winner)
            if (
                install is not None
                and step.winner is not None
                and install.cuda_major is not None
                and install.cuda_major != major
            ):
                wrong.setdefault(install.folder, (install, []))[1].append(step.winner)
        if not wrong:
            continue
        install, files = next(iter(wrong.values()))
        names = ", ".join(PathRules(facts.os).basename(f) for f in files)
        others = [i for i, _ in list(wrong.values())[1:]]
        judged.update(wrong)
        yield CUDNN_CUDA_MISMATCH.finding(
            f"{build.name} {build.version} uses CUDA {major}, but the cuDNN it loads from {install.folder} "
            f"({names}; cuDNN {install.version or install.major}) "
            f"was built for CUDA {install.cuda_major} ({install.cuda_source})."
            + "".join(f" So was {i.folder} (CUDA {i.cuda_major}), which the same load reaches." for i in others),
            (
                [
                    f"{build.name} brings its own cuDNN: take {install.folder} off PATH / LD_LIBRARY_PATH so its "
                    f"load stays within that one."
                ]
                if build.cuda_from != SYSTEM
                else []
            )
            + [_replace_fix(facts, install.major, major)],
            {
                "cudnn": install.folder,
                "cudnn_cuda": install.cuda_major,
                "framework_cuda": major,
                "libraries": {f: i.cuda_major for i, fs in wrong.values() for f in fs},
            },
            causes=(cuda_key(install.cuda_major), build_key(build)),
        )
    yield from _toolkit_mismatches(facts, judged)


def _toolkit_mismatches(facts: Facts, judged: set[str]) -> Iterator[Finding]:
    """A cuDNN copied into a toolkit of another CUDA major fails for every program that uses that
    toolkit: it asks for the cuBLAS of its own major, which the toolkit does not have."""
    for install in facts.cudnn:
        toolkit = facts.toolkits.by_root(install.toolkit)
        version = toolkit.parsed_version if toolkit else None
        if (
            install.folder in judged
            or install.cuda_major is None
            or toolkit is None
            or version is None
            or version.release[0] == install.cuda_major
        ):
            continue
        major = version.release[0]
        yield CUDNN_CUDA_MISMATCH.finding(
            f"The cuDNN {install.version or install.major} in {install.folder} was built for CUDA "
            f"{install.cuda_major} ({install.cuda_source}), "
            f"but it sits in the CUDA {toolkit.version} toolkit at {toolkit.root}: it loads the cuBLAS of CUDA "
            f"{install.cuda_major}, which that toolkit lacks.",
            [_replace_fix(facts, install.major, major)],
            {
                "cudnn": install.folder,
                "cudnn_cuda": install.cuda_major,
                "toolkit": toolkit.root,
                "toolkit_cuda": toolkit.version,
            },
            causes=(cuda_key(install.cuda_major), cudnn_key(facts, install.folder)),
        )


def _replace_fix(facts: Facts, cudnn_major: int, cuda_major: int) -> str:
    """The cuDNN build of the same major for the CUDA the program uses: the newest release the knowledge lists for that
    CUDA major on this OS that still runs on the GPU, by NVIDIA's archive name."""
    suffix = "zip" if facts.os == "windows" else "tar.xz"
    rule = (
        f"Replace it with the cuDNN {cudnn_major}.x build for CUDA {cuda_major} (archive name ends in "
        f"_cuda{cuda_major}-archive.{suffix})"
    )
    picked = cudnn_archive_for(facts, cudnn_major, str(cuda_major))
    if picked is None:
        return rule + " from https://developer.nvidia.com/rdp/cudnn-archive."
    full, archive = picked
    return f"{rule}: cuDNN {full}, `cudnn-doctor install {archive}` (https://developer.nvidia.com/rdp/cudnn-archive)."


@CUDNN_SHADOWED.checks
def cudnn_shadowed(facts: Facts) -> Iterator[Finding]:
    """With several copies of a cuDNN library on the search path the first one wins, whatever its version; users
    install a new cuDNN and keep loading the old one."""
    rules = PathRules(facts.os)
    for resolution, build in resolutions_with_builds(facts):
        want = wanted_cudnn(build)
        for step in cudnn_steps(resolution):
            if step.winner is None:
                continue
            copies = [c.path for c in step.candidates]
            sibling = next((f for f in _siblings(facts, step) if not any(rules.same(f, c) for c in copies)), None)
            if sibling:
                copies.append(sibling)
            if len(copies) < 2:
                continue
            versions = {c: library_release(facts, c) for c in copies}
            winner_version = versions.get(step.winner) or library_release(facts, step.winner)
            others = {v for c, v in versions.items() if v and not rules.same(c, step.winner)}
            unusable = (
                (
                    want is not None
                    and winner_version is not None
                    and (winner_version.release[0] != want.major or (want.minimum and winner_version < want.minimum))
                )
                or (winner_version is not None and others and winner_version not in others and sibling is not None)
                or (
                    winner_version is not None
                    and others
                    and all(o > winner_version for o in others)
                    and want is not None
                )
            )
            if not unusable and not others and winner_version is None:
                pass
            listing = "; ".join(
                f"{i + 1}. {_where(facts, c)}{' ← used' if rules.same(c, step.winner) else ''}"
                for i, c in enumerate(copies)
            )
            note = f" The copy beside {step.requester} is not on the search path of that library." if sibling else ""
            yield CUDNN_SHADOWED.finding(
                f"{build.name} in {build.executable} loads {step.name} from {step.winner}; copies in search "
                f"order: {listing}.{note}",
                [
                    f"Remove or rename the copy you do not want "
                    f"({', '.join(c for c in copies if not rules.same(c, step.winner))} or {step.winner}), "
                    "or reorder PATH / LD_LIBRARY_PATH so the right folder comes first."
                ]
                + ([prepend_ld_library_path([rules.dirname(sibling)])] if sibling and not rules.windows else []),
                ShadowedCopies(name=step.name, copies=tuple(copies), used=step.winner, off_path=sibling or None),
                severity=Severity.ERROR if unusable else Severity.WARNING,
            )
            break  # one finding per framework: the first shadowed library tells the story


def _siblings(facts: Facts, step: LoadStep) -> list[str]:
    """A file of the wanted name in the folder of the library that asked for it (what the user meant to load)."""
    rules = PathRules(facts.os)
    folder = rules.dirname(step.requester)
    wanted = rules.name_key(rules.basename(step.name))
    return [
        lib.path
        for install in facts.cudnn
        for lib in install.libraries
        if rules.same(rules.dirname(lib.path), folder) and rules.name_key(rules.basename(lib.path)) == wanted
    ]
