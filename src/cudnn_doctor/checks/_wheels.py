"""pip nvidia-* wheels seen from a check: which installed wheel holds a library the loader did not
find, how the framework would have to be told about it, and the pip line when none holds it.

A framework that loads CUDA from the system (ONNX Runtime, TensorFlow, PaddlePaddle) does not
look in site-packages: the wheels being installed is not enough. Telling such a user to
"install cuDNN" sends them to install what they already have, so these helpers say where it is
and what makes the process find it.
"""

from __future__ import annotations

from typing import Iterable, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.checks._libraries import basename, build_key
from cudnn_doctor.facts import Facts, FrameworkBuild, InstalledWheel
from cudnn_doctor.lazyre import regex
from cudnn_doctor.paths import PathRules, prepend_ld_library_path, site_packages_of
from cudnn_doctor.versions import canonical_name

_MAJOR = regex(r"(?i)(?:\.so\.|64_)(\d+)(?:\.dll)?$")


def cudnn_major_of(name: str) -> Optional[int]:
    """cuDNN's major from a file name: libcudnn_ops.so.9, cudnn_cnn_infer64_8.dll."""
    found = _MAJOR.search(basename(name))
    return int(found.group(1)) if found else None


def wheels_key(build: FrameworkBuild) -> str:
    """The cause key "this build's nvidia-* wheels are installed but not searched": one problem, said once."""
    return f"{build_key(build)}:wheels"


def held_by(facts: Facts, build: FrameworkBuild, name: str) -> Optional[InstalledWheel]:
    """The wheel installed beside the build that ships a library of this file name."""
    rules = PathRules(facts.os)
    key = rules.name_key(basename(name))
    return next(
        (
            w
            for w in facts.wheels
            if w.executable == build.executable and any(rules.name_key(n) == key for n in w.libraries)
        ),
        None,
    )


def _folders(facts: Facts, build: FrameworkBuild, first: Iterable[InstalledWheel] = ()) -> list[str]:
    """Every library folder of the nvidia-* wheels in the build's environment, the named ones first."""
    rules = PathRules(facts.os)
    folders: list[str] = []
    for wheel in [*first, *(w for w in facts.wheels if w.executable == build.executable)]:
        if not any(rules.same(wheel.folder, f) for f in folders):
            folders.append(wheel.folder)
    return folders


def not_searched(facts: Facts, build: FrameworkBuild, wheels: list[InstalledWheel]) -> str:
    """The sentence that says the files are there and why the process still does not find them."""
    held = "; ".join(f"{w.distribution} {w.version} in {w.folder}" for w in dict.fromkeys(wheels))
    reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
    why = (
        " (it loads them only when onnxruntime.preload_dlls() is called)"
        if reach and reach.how == "preload_dlls"
        else f" ({'PATH' if facts.os == 'windows' else 'its RUNPATH, LD_LIBRARY_PATH and the system folders'} do "
        f"not include that folder)"
    )
    return (
        f" It is installed in this environment as {held}, but {build.name} {build.version} does not search there{why}."
    )


def reach_fixes(
    facts: Facts, build: FrameworkBuild, wheels: list[InstalledWheel], folders: Optional[list[str]] = None
) -> list[str]:
    """What makes the process find the wheels' libraries: the framework's own preloading, or the exact variable line."""
    folders = _folders(facts, build, wheels) if folders is None else folders
    fixes = []
    reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
    if reach and reach.how == "preload_dlls":
        fixes.append(
            "Call `import onnxruntime; onnxruntime.preload_dlls()` before creating the InferenceSession: it loads "
            "the CUDA and cuDNN "
            "libraries of the nvidia-* wheels installed in that environment."
        )
    prefix = "Or" if fixes else "Put the wheels' folders on the search path"
    if not folders:
        return fixes
    if facts.os == "windows":
        fixes.append(
            f'{prefix}, before starting Python: set "PATH={";".join(folders)};%PATH%" (cmd) or $env:PATH = '
            f'"{";".join(folders)};$env:PATH" (PowerShell)'
        )
    else:
        fixes.append(f"{prefix}, before starting Python: {prepend_ld_library_path(folders)}")
    return fixes


def extras_missing(facts: Facts, build: FrameworkBuild) -> bool:
    """The framework release installs its CUDA libraries through pip extras, and none of those wheels is installed
    beside it."""
    reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
    return bool(reach and reach.extras and build.version) and not any(
        w.executable == build.executable for w in facts.wheels
    )


def install_fixes(facts: Facts, build: FrameworkBuild, names: list[str]) -> list[str]:
    """The pip line that installs what provides `names` into the build's environment, and what then makes the process
    find it.
    A framework release with pip extras for its CUDA libraries gets those; otherwise the wheel of each library for the
    build's CUDA major."""
    pip = f'"{build.executable}" -m pip install'
    reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
    python = facts.python(build.executable)
    if (
        reach and reach.extras and python is not None and extras_missing(facts, build)
    ):  # with the extras installed, that line changes nothing
        dist = next(
            (
                canonical_name(d)
                for d in knowledge.framework(build.name).distributions
                if canonical_name(d) in python.packages
            ),
            None,
        )
        if dist is not None:
            return [
                f'{pip} "{dist}[{reach.extras}]=={build.version}"',
                *reach_fixes(
                    facts,
                    build,
                    [],
                    future_folders(facts, build.executable, names, _pinned_major(facts, names) or build.cuda_major),
                )[:1],
            ]
    major = _pinned_major(facts, names) or build.cuda_major
    rows = [(name, knowledge.wheel_providing(basename(name), facts.os, major)) for name in names]
    specs = list(
        dict.fromkeys(_requirement(name, row.distribution, row.library) for name, row in rows if row is not None)
    )
    if not specs:
        return []
    return [
        f"{pip} {' '.join(specs)}",
        *reach_fixes(
            facts,
            build,
            [],
            future_folders(facts, build.executable, names, _pinned_major(facts, names) or build.cuda_major),
        ),
    ]


def _pinned_major(facts: Facts, names: list[str]) -> Optional[int]:
    """The one CUDA major whose wheels ship every name (libcublasLt.so.13 says 13); None when the names fit several
    (libcurand.so.10)."""
    common: Optional[frozenset[int]] = None
    for name in names:
        majors = frozenset(row.cuda for row in knowledge.wheels_shipping(basename(name), facts.os))
        common = majors if common is None else common & majors
    return next(iter(common)) if common and len(common) == 1 else None


def _requirement(name: str, distribution: str, library: str) -> str:
    """`nvidia-cudnn-cu12==9.*` for cuDNN (the file name carries cuDNN's major); other wheels by name."""
    major = cudnn_major_of(name)
    return f'"{distribution}=={major}.*"' if library == "cudnn" and major is not None else distribution


def future_folders(facts: Facts, executable: str, names: list[str], major: Optional[int] = None) -> list[str]:
    """Where the nvidia-* wheels that provide `names` (of CUDA `major`, else the newest that ships each) will put their
    libraries in that interpreter's environment."""
    rules = PathRules(facts.os)
    python = facts.python(executable)
    sites = site_packages_of(rules, executable, python.version if python else "")
    if not sites:
        return []
    rows = (knowledge.wheel_providing(basename(name), facts.os, major) for name in names)
    return list(
        dict.fromkeys(rules.join(sites[0], *knowledge.wheel_folder(row, facts.os)) for row in rows if row is not None)
    )
