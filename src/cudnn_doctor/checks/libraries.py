"""Libraries in general: files that exist but cannot be used, and names nothing provides."""

from __future__ import annotations

from typing import Collection, Iterator, Optional, Sequence

from cudnn_doctor import knowledge
from cudnn_doctor.checks._cudnn import every_resolution, library_release
from cudnn_doctor.checks._driver_libraries import (
    DRIVER_STATE,
    driver_gap,
    driver_visible,
    gpu_withheld,
    is_driver_library,
    other_spelling_loaded,
    proven_by_the_gpu,
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
    LIBRARY_UNREADABLE,
    LIBRARY_WRONG_ARCHITECTURE,
    LIBRARY_ZERO_BYTES,
    LOADER_EMULATION_DIFFERS,
)
from cudnn_doctor.facts import (
    EMPTY,
    PROCESS,
    UNREADABLE,
    WRONG_ARCHITECTURE,
    Candidate,
    Facts,
    FrameworkBuild,
    LoadStep,
    Resolution,
)
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.kinds import LoadHow
from cudnn_doctor.lazyre import regex
from cudnn_doctor.paths import PathRules, prepend_ld_library_path

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
            yield _missing(
                facts,
                build,
                steps[wanted],
                requesters,
                wanted in optional,
                rules,
                resolution,
                elsewhere.get(wanted, ()),
            )
    yield from _logged_missing(facts, emulated)


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


def _missing(
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


def _logged_missing(facts: Facts, emulated: set[tuple[str, str, str]]) -> Iterator[Finding]:
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
                yield _missing(facts, build, step, [step.requester], False, rules)
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
            yield _missing(facts, build, step, [build.name], False, rules)
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
            missing = _missing(facts, build, step, [build.name], False, rules)
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
