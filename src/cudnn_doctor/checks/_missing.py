"""What a dependency-missing finding says: the library that asked, the name it asked for and where the search looked,
the fix for where the file is (a wheel, a toolkit, a folder off the search path), and what a framework's own log
says could not be loaded."""

from __future__ import annotations

from typing import Iterator, Optional, Sequence

from cudnn_doctor import knowledge
from cudnn_doctor.checks._driver_libraries import (
    DRIVER_STATE,
    driver_gap,
    driver_visible,
    gpu_withheld,
    is_driver_library,
)
from cudnn_doctor.checks._libraries import (
    area_of_library,
    basename,
    build_key,
    cuda_key_of_library,
    cudnn_key,
    is_cudnn,
)
from cudnn_doctor.checks._plan import install_archive
from cudnn_doctor.checks._wheels import (
    cudnn_major_of,
    extras_missing,
    future_folders,
    held_by,
    install_fixes,
    not_searched,
    reach_fixes,
    wheels_key,
)
from cudnn_doctor.checks.rules import (
    DEPENDENCY_MISSING,
)
from cudnn_doctor.facts import Facts, FrameworkBuild
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.kinds import LoadHow
from cudnn_doctor.lazyre import regex
from cudnn_doctor.loads import LoadStep, Resolution
from cudnn_doctor.paths import PathRules, prepend_ld_library_path


def _cudnn_archive_tail(facts: Facts, build: Optional[FrameworkBuild], name: str, requester: str) -> str:
    """For a missing cuDNN library: the install command of the release its requester belongs to (its installation's,
    else
    the major of the name for the build's CUDA)."""
    if not is_cudnn(name):
        return ""
    rules = PathRules(facts.os)
    install = next((i for i in facts.cudnn if rules.same(rules.dirname(requester), i.folder)), None)
    release: Optional[str]
    if install is not None:
        release, cuda = install.version or str(install.major), str(install.cuda_major) if install.cuda_major else None
    else:
        major = cudnn_major_of(name)
        release, cuda = (
            (str(major) if major is not None else None),
            (f"{build.cuda_version.major}" if build and build.cuda_version else None),
        )
    return f", or run {install_archive(facts, release, cuda)}"


def missing_finding(
    facts: Facts,
    build: Optional[FrameworkBuild],
    step: LoadStep,
    requesters: list[str],
    optional: bool,
    rules: PathRules,
    resolution: Optional[Resolution] = None,
    elsewhere: Sequence[str] = (),
) -> Finding:
    """`step`: the first failed request for it; a try-list is reported once, naming every member.
    Without a build the load is a program's that loads an installation no framework uses.
    `elsewhere`: copies of the name in folders the search does not reach."""
    who = ", ".join(sorted({rules.basename(r) for r in requesters}))
    name, members = step.name, step.one_of or (step.name,)
    provider = knowledge.library_provider(name)
    folder = rules.dirname(requesters[0]) or "the folder of the library that needs it"
    nowhere = "none of which the loader finds" if len(members) > 1 else "which the loader finds nowhere"
    package = resolution.package if resolution is not None and build is None else None
    if build is not None:
        loader = f"loaded by {build.name} in {build.executable}"
    elif package is not None and resolution is not None:  # a package's own native code (issue 29)
        entries = [s.winner or s.name for s in resolution.steps if s.how is LoadHow.ROOT]
        files = ", ".join(sorted(set(requesters)))
        through = [e for e in entries if e not in requesters][:1]
        loader = (
            f"native code of the package {package}: "
            f"{files}{f', imported through {through[0]}' if through else ''}, loaded by {resolution.executable}"
        )
    else:  # no framework loads this installation: any program that does would fail the same way
        roots = [s.winner or s.name for s in resolution.steps if s.how is LoadHow.ROOT] if resolution else []
        loader = f"when any program loads {roots[0] if roots else 'this cuDNN'}"
    detail = f"{who} ({loader}) needs {step.wanted}, {nowhere}."
    said = (
        next((u.message for u in build.unloadable), None)
        if build is not None and step.how is not LoadHow.ROOT and not build.sees_gpu
        else None
    )
    if said:
        detail += f' {build.name}\'s own log agrees: "{_sentence(said)}".'  # type: ignore[union-attr]
    if optional:
        detail += " The library treats this load as optional: only the algorithms or operators that need it fail."
    fix: list[str] = []
    holder = (
        next((h for h in (held_by(facts, build, m) for m in members) if h is not None), None)
        if build is not None
        else None
    )
    causes = list(_dependency_causes(facts, build, members, requesters))
    wheel = build is not None and any(knowledge.wheel_providing(m, facts.os) for m in members)
    if wheel and build is not None and holder is None and extras_missing(facts, build):
        causes.append(wheels_key(build))  # the framework's one pip line installs it with the rest: one cause
    if is_driver_library(name):
        gap, fix = driver_gap(facts, name, elsewhere)
        detail += gap
    elif holder is not None and build is not None:
        detail += not_searched(facts, build, [holder])
        fix.extend(reach_fixes(facts, build, [holder]))
        causes.append(wheels_key(build))
    elif (
        package is not None and elsewhere
    ):  # installed already (a pip nvidia-* wheel beside the package): reach it, install nothing
        folders = list(dict.fromkeys(rules.dirname(c) for c in elsewhere))
        detail += f" It is installed in {', '.join(folders)}, which this load does not search."
        fix.extend(_reach_installed(facts.os, package, folders, step.how))
    elif provider:
        detail += f" It is provided by {provider.provider}."
        pip = install_fixes(facts, build, list(members)) if wheel and build is not None else []
        own = provider.fix.replace("{folder}", folder) + _cudnn_archive_tail(facts, build, name, requesters[0])
        reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version) if build is not None else None
        if (
            package is not None
            and resolution is not None
            and not (facts.os == "windows" and step.how is LoadHow.IMPORT)
        ):
            pip = _package_wheel_fixes(
                facts, resolution.executable, package, list(members), step.how
            )  # the wheel that ships it
        if pip and (
            (reach is not None and reach.extras) or package is not None
        ):  # the framework's own pip extras are the usual way
            fix.extend([*pip, f"Or: {own}"])
        elif (
            package is not None and facts.os == "windows" and step.how is LoadHow.IMPORT
        ):  # an extension's imports never search PATH (Python 3.8+)
            fix.extend(
                [
                    f"Python 3.8+ searches an extension module's DLLs in its own folder and the "
                    f"os.add_dll_directory folders, not PATH: "
                    f"copy {step.wanted} (and the DLLs it needs) into {folder}, or call os.add_dll_directory with "
                    f"the folder that holds it "
                    f"before importing {package}.",
                    f"Or: {own}",
                ]
            )
        else:
            fix.extend([own, *(f"Or: {line}" if i == 0 else line for i, line in enumerate(pip))])
    elif wheel and build is not None:
        row = knowledge.wheel_providing(name, facts.os, build.cuda_major)
        detail += f" It is provided by the pip wheel {row.distribution} (or a CUDA toolkit)." if row else ""
        fix.extend(install_fixes(facts, build, list(members)))
    else:
        fix.append(
            f"Install what provides {_asked_for(step)} and put its folder on "
            f"{'PATH' if facts.os == 'windows' else 'LD_LIBRARY_PATH'}."
        )
    return DEPENDENCY_MISSING.finding(
        detail,
        fix,
        {
            "name": name,
            "one_of": list(members),
            "needed_by": requesters,
            "provider": "the NVIDIA driver" if is_driver_library(name) else provider.provider if provider else None,
            **({"package": package} if package is not None else {}),
        },
        severity=Severity.WARNING if optional else Severity.ERROR,
        area=area_of_library(name, requesters[0]),
        causes=causes,
    )


_FORMAT_FIELD = regex(r"%[0-9]*[dui]")  # a number field of a run-time load rule (`libnvrtc.so.%d`)


def _package_wheel_fixes(facts: Facts, executable: str, package: str, names: list[str], how: str) -> list[str]:
    """The pip line that installs the nvidia-* wheel shipping `names` into the package's environment, and what then
    makes
    the package's load reach the folder it will be in."""
    rows = [row for row in (knowledge.wheel_providing(basename(name), facts.os) for name in names) if row is not None]
    folders = future_folders(facts, executable, names)
    if not rows or not folders:
        return []
    pip = f'"{executable}" -m pip install {" ".join(dict.fromkeys(row.distribution for row in rows))}'
    return [pip, *_reach_installed(facts.os, package, folders, how)]


def _reach_installed(os_name: str, package: str, folders: list[str], how: str = "import") -> list[str]:
    """How a package's native code reaches libraries already installed in folders its search does not reach. On Windows
    an
    extension's imports search the os.add_dll_directory folders, never PATH; a LoadLibrary by name at run time searches
    PATH."""
    if os_name == "windows" and how != "import":
        joined = ";".join(folders)
        return [
            f'Put the folder on PATH before starting Python: set "PATH={joined};%PATH%" (cmd) or $env:PATH = '
            f'"{joined};$env:PATH" (PowerShell).'
        ]
    if os_name == "windows":
        calls = "; ".join(f'os.add_dll_directory(r"{f}")' for f in folders)
        return [
            f"Before importing {package}: `import os; {calls}` (Python 3.8+ searches an extension's DLLs there, "
            f"never PATH)."
        ]
    return [
        f"Put the folder on the loader's path before starting Python: `{prepend_ld_library_path(folders)}` (in "
        f"the environment's bin/activate to keep it)."
    ]


def _asked_for(step: LoadStep) -> str:
    """The names a load asks for, a name completed at run time by its rule (`libnvrtc.so.%d`: that name with a version
    number in place of %d), never a placeholder."""
    names = step.one_of or (step.name,)
    said = [
        f"a file named by the rule `{n}` (a version number in place of "
        f"{', '.join(sorted(set(_FORMAT_FIELD.findall(n))))})"
        if "%" in n
        else n
        for n in names
    ]
    return said[0] if len(said) == 1 else "one of " + ", ".join(said)


def _dependency_causes(
    facts: Facts, build: Optional[FrameworkBuild], names: Sequence[str], requesters: list[str]
) -> list[Optional[str]]:
    """What a missing dependency is a symptom of: the CUDA runtime it belongs to (any member of a
    try-list's), the incomplete cuDNN installation that asks for its own part, or the build whose
    own library asks for it. A driver library the search cannot find is one gap of the machine,
    whichever interpreter's load meets it."""
    name = names[0]
    causes = [cuda_key_of_library(n) for n in names]
    if is_driver_library(name):
        causes.append(f"driver:{PathRules(facts.os).name_key(basename(name))}")
        if gpu_withheld(facts):
            causes.append(DRIVER_STATE)  # the container has no driver libraries: gpu-not-passed-to-container says why
    for requester in requesters:
        install, _ = facts.cudnn_owner(requester)
        if install is not None and is_cudnn(name):
            causes.append(cudnn_key(facts, install.folder))
        elif build is not None and install is None and not is_cudnn(requester) and requester != build.name:
            causes.append(build_key(build))  # the framework's own library (ONNX Runtime's CUDA provider)
    return causes


def logged_missing(facts: Facts, emulated: set[tuple[str, str, str]]) -> Iterator[Finding]:
    """What frameworks' own messages name as missing, unless another finding says it: the emulation
    (the same gap, with the folder that asks for it), or cuda-libs-not-found / cudnn-missing for the
    libraries the tables say the build asks for. A library the framework asked for itself that no
    table row covers is said here, once per message (Paddle's try-list "cufft64_120.dll;cufft64_12.dll"
    is one request)."""
    rules = PathRules(facts.os)
    roots = {
        (r.executable, r.framework): {rules.name_key(s.name): s for s in r.steps if s.how is LoadHow.ROOT}
        for r in facts.resolutions
    }
    for build in facts.builds:
        known = {rules.name_key(n) for n in (build.system_libraries or ()) if n}
        requests: dict[str, list[str]] = {}
        for failure in build.load_failures:
            if is_driver_library(failure.library) and not driver_visible(facts) and not gpu_withheld(facts):
                continue  # no driver at all: no-nvidia-gpu says it (a container without the GPU: its symptoms)
            key = rules.name_key(basename(failure.library))
            if (build.executable, build.name, key) in emulated:
                continue
            if not failure.direct:
                step = LoadStep(
                    requester=failure.needed_by or build.name,
                    name=basename(failure.library),
                    how=LoadHow.LOAD,
                    winner=None,
                )
                yield missing_finding(facts, build, step, [step.requester], False, rules)
                continue
            root = roots.get((build.executable, build.name), {}).get(key)
            withheld = is_driver_library(failure.library) and gpu_withheld(
                facts
            )  # "provided by the driver" is what the container lacks
            if key in known or (root is not None and not root.failed and not withheld):
                continue  # a table-known library has its own finding; a found one is judged by what it needs
            requests.setdefault(failure.message, []).append(basename(failure.library))
        for names in requests.values():
            step = LoadStep(
                requester=build.name,
                name=names[0],
                how=LoadHow.ROOT,
                winner=None,
                one_of=tuple(names) if len(names) > 1 else (),
            )
            yield missing_finding(facts, build, step, [build.name], False, rules)
        if (
            not any(e[:2] == (build.executable, build.name) for e in emulated)
            and not build.load_failures
            and not build.sees_gpu
        ):
            yield from _told_unloadable(facts, build, rules)


def _told_unloadable(facts: Facts, build: FrameworkBuild, rules: PathRules) -> Iterator[Finding]:
    """What the framework says it could not load without naming the file (TensorFlow 2.16+'s lone "Cannot dlopen some
    GPU
    libraries", JAX's "Unable to load cuSOLVER"), when neither its log nor the emulation names a missing file: its own
    word
    outranks the emulation, which finds everything it knows the build asks for. The file is named where the build's
    CUDA or
    cuDNN gives it; cuDNN of a build that loads it from the system is cudnn-missing's."""
    for told in build.unloadable:
        if told.part == "cudnn" and build.system_libraries is not None:
            continue
        name = _unloadable_file(facts, build, told.part)
        if name is not None:
            found = any(
                rules.name_key(rules.basename(s.winner or "")) == rules.name_key(name)
                for r in facts.resolutions
                for s in r.steps
                if s.winner
            )
            step = LoadStep(requester=build.name, name=name, how=LoadHow.ROOT, winner=None)
            missing = missing_finding(facts, build, step, [build.name], False, rules)
            if not found:
                yield missing._replace(
                    detail=f'{build.name} {build.version} says: "{_sentence(told.message)}". {missing.detail}'
                )
                continue
        yield DEPENDENCY_MISSING.finding(
            f"{build.name} {build.version} in {build.executable} says it could not load "
            f"{'some GPU libraries' if told.part == 'gpu' else told.part}: "
            f'"{_sentence(told.message)}". The emulation of its loads finds every library it is known to ask for, '
            f"so the one that failed is "
            "one the emulation does not model (another CUDA library, or one that a library it loaded needs).",
            [
                *_verbose_loads(build),
                f"{'Then r' if _verbose_loads(build) else 'R'}un the program under `cudnn-doctor run -- "
                f'"{build.executable}" YOUR_SCRIPT.py` to see each failed load as it happens.',
            ],
            {"name": None, "one_of": [], "needed_by": [build.name], "provider": None, "said": told.message},
            area=Area.FRAMEWORKS,
        )


def _sentence(line: str) -> str:
    """A log line up to the end of its first sentence (TensorFlow's goes on with a guide to its install page)."""
    end = line.find(". ")
    return line[:end] if end > 0 else line


def _unloadable_file(facts: Facts, build: FrameworkBuild, part: str) -> Optional[str]:
    """The file name of a library part the build loads (cudnn, cudart / cuda, cublas), from its CUDA and cuDNN
    majors."""
    if part == "cudnn":
        major = build.cudnn_major
        return knowledge.cudnn_file_name("", major, facts.os) if major is not None else None
    library = {"cuda": "cudart", "cudart": "cudart", "cublas": "cublas"}.get(part)
    version = build.cuda_version
    return knowledge.cudart_name(version, facts.os, library) if library and version is not None else None


def _verbose_loads(build: FrameworkBuild) -> list[str]:
    """How the framework itself names each library it fails to load, where it has a switch for that."""
    framework = knowledge.framework(build.name)
    if framework is None or framework.load_log is None:
        return []
    return [
        f"Run it once with `{framework.load_log}` set: {build.name} then logs every library it tries to open and "
        f"why one failed."
    ]
