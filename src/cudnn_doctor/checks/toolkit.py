"""CUDA toolkit: installed, reachable, consistent with the variables that point at it."""

from __future__ import annotations

from typing import Iterator, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.checks._libraries import build_key, cuda_key, is_cuda_library, lookup, reach_folder_fix, system_builds
from cudnn_doctor.checks._variables import kind_problem, set_command, value_problems
from cudnn_doctor.checks._wheels import extras_missing, held_by, install_fixes, not_searched, reach_fixes, wheels_key
from cudnn_doctor.checks.rules import (
    CUDA_LIBS_NOT_FOUND,
    CUDA_PATH_MISMATCH,
    CUDA_TOOLKIT_MISSING,
    MULTIPLE_CUDA_ON_PATH,
    NVCC_NOT_ON_PATH,
)
from cudnn_doctor.facts import Facts, FrameworkBuild, Toolkit
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.paths import PathRules
from cudnn_doctor.versions import major_minor


def _toolkit_for(facts: Facts, folder: str, os_name: str) -> Optional[Toolkit]:
    rules = PathRules(os_name)
    for toolkit in facts.toolkits.toolkits:
        if any(rules.same(folder, p) for p in (toolkit.root, *toolkit.aliases)):
            return toolkit
    return None


@CUDA_TOOLKIT_MISSING.checks
def cuda_toolkit_missing(facts: Facts) -> Iterator[Finding]:
    """PyTorch and JAX wheels bring their own CUDA runtime; TensorFlow on Windows, PaddlePaddle and ONNX Runtime load
    the system's."""
    if facts.toolkits.toolkits:
        return
    stranded = [
        (b, libraries.cudart)
        for b, libraries in system_builds(facts)
        if libraries.cudart and _not_found(facts, b, libraries.cudart)
    ]
    if stranded:
        build, cudart = stranded[0]
        version = _release_wanted(build)
        yield CUDA_TOOLKIT_MISSING.finding(
            f"{build.name} {build.version} loads the CUDA {version} runtime ({cudart}) from the system, and no "
            f"CUDA toolkit is installed.",
            [
                f"Install a CUDA {version} toolkit from https://developer.nvidia.com/cuda-toolkit-archive and "
                f"make sure its bin (Windows) or lib64 (Linux) folder is on the library search path."
            ],
            {"needs": cudart},
            severity=Severity.ERROR,
            causes=[cuda_key(b.cuda_major) for b, _ in stranded] + [build_key(b) for b, _ in stranded],
        )
    else:
        yield CUDA_TOOLKIT_MISSING.finding(
            "No CUDA toolkit was found (no nvcc on PATH, no CUDA_PATH / CUDA_HOME, nothing in the standard folders). "
            "The installed frameworks do not need one; you only need it to compile CUDA code.",
            ["Install a CUDA toolkit only if you build CUDA extensions: https://developer.nvidia.com/cuda-downloads"],
        )


def _not_found(facts: Facts, build: FrameworkBuild, name: str) -> bool:
    step = lookup(facts, build, name)
    return step is None or step.winner is None


@CUDA_LIBS_NOT_FOUND.checks
def cuda_libs_not_found(facts: Facts) -> Iterator[Finding]:
    """TensorFlow (on Windows up to 2.10, on Linux without [and-cuda]), PaddlePaddle and ONNX Runtime load cudart,
    cuBLAS and friends by name; if the loader cannot find them the GPU is silently unused."""
    for build, libraries in system_builds(facts):
        cudart = libraries.cudart
        said = [f.library for f in build.load_failures if is_cuda_library(f.library)]
        found = lookup(facts, build, cudart)
        missing = found is not None and found.winner is None
        if not said and not missing:
            continue
        names = (
            (said or [cudart]) if cudart else said
        )  # without `said`, `missing`: the loader looked for cudart, so it is named
        detail = f"{build.name} {build.version} in {build.executable} cannot load {', '.join(names)}."
        if said:
            detail += " It says so itself in its log."
        fix, causes = [], [cuda_key(build.cuda_major), build_key(build)]
        holder = held_by(facts, build, cudart) if cudart else None
        if found is not None and found.winner is None:
            detail += (
                f" The loader searched {len(found.searched)} places "
                f"({'; '.join(found.searched[:6])}{'; …' if len(found.searched) > 6 else ''}) and found no {cudart}."
            )
            if holder is not None:
                detail += not_searched(facts, build, [holder])
                fix.extend(reach_fixes(facts, build, [holder]))
                causes.append(wheels_key(build))
            elif found.elsewhere:
                folder = found.elsewhere[0].rsplit("\\" if facts.os == "windows" else "/", 1)[0]
                detail += f" It exists at {found.elsewhere[0]}, which is not on the search path."
                step, stale = reach_folder_fix(facts, folder)
                fix.append(step)
                causes.append(stale)
        if not fix:
            version = _release_wanted(build) if build.cuda_version else "matching"
            toolkit = (
                f"Install a CUDA {version} toolkit (https://developer.nvidia.com/cuda-toolkit-archive) and put its "
                f"{'bin folder on PATH' if facts.os == 'windows' else 'lib64 folder on LD_LIBRARY_PATH'}."
            )
            pip = install_fixes(
                facts, build, [n for n in dict.fromkeys([*names, *(x for x in (cudart, libraries.cublas) if x)])]
            )
            if extras_missing(facts, build):
                causes.append(wheels_key(build))
            reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
            if reach is not None and reach.extras and pip:
                fix.extend([*pip, f"Or: {toolkit}"])
            else:
                fix.extend([toolkit, *(f"Or: {step}" if i == 0 else step for i, step in enumerate(pip))])
        yield CUDA_LIBS_NOT_FOUND.finding(detail, fix, {"framework": build.name, "missing": names}, causes=causes)


@NVCC_NOT_ON_PATH.checks
def nvcc_not_on_path(facts: Facts) -> Iterator[Finding]:
    """Build scripts (setup.py, CMake, make) call `nvcc` by name: they fail with "nvcc: not found", or compile with an
    older or a distribution's nvcc."""
    with_nvcc = [t for t in facts.toolkits.toolkits if t.has_nvcc]
    if not with_nvcc:
        return
    if facts.toolkits.nvcc_on_path:
        yield from _older_nvcc_first(facts)
        return
    best = max(with_nvcc, key=lambda t: t.parsed_version or 0)
    detail = f"CUDA {best.version} is installed at {best.root}, but no nvcc is on PATH."
    causes: list[Optional[str]] = []
    if facts.os == "windows":
        step, stale = reach_folder_fix(facts, best.bin_dir)
        fix, causes = [step], [stale or _nvcc_key(best.bin_dir)]
    else:
        fix, causes = [f"export PATH={best.bin_dir}:$PATH  (add it to ~/.bashrc to keep it)"], [_nvcc_key(best.bin_dir)]
        if facts.environment.variables.get("SUDO_USER"):
            detail += " This shell runs under sudo, whose secure_path and env_reset drop the PATH of your own shell."
            fix = [
                f"Run the command without sudo, or keep your PATH: start it with `sudo env "
                f"PATH={best.bin_dir}:$PATH` followed by the command you ran with sudo.",
                f"Or add {best.bin_dir} to secure_path in /etc/sudoers (via `sudo visudo`).",
            ]
    yield NVCC_NOT_ON_PATH.finding(detail, fix, {"toolkit": best.root}, causes=causes)


def _older_nvcc_first(facts: Facts) -> Iterator[Finding]:
    """The nvcc on PATH is an older toolkit's or a distribution's, while the toolkit the machine is set up for has its
    bin off PATH."""
    tk = facts.toolkits
    first = tk.by_root(tk.path_toolkit)
    distro = _distribution_nvcc(facts)
    pointed = [
        p
        for p in _pointed_at(facts)
        if p[0].has_nvcc and not p[0].on_path and (first is None or p[0].root != first.root)
    ]
    newer = [p for p in pointed if _newer(p[0], first) or (distro and (first is None or first.parsed_version is None))]
    if not newer:
        return
    target = max(newer, key=lambda p: p[0].parsed_version or Version("0"))[0]
    reasons = list(dict.fromkeys(why for t, why, _ in newer if t is target))
    bin_dir = PathRules(facts.os).join(next(spelled for t, _, spelled in newer if t is target), "bin")
    version = f"CUDA {first.version}" if first and first.version else "an unknown CUDA version"
    where = (
        f"from the distribution package {distro} ({version})"
        if distro
        else f"from {version} at {first.root if first else tk.nvcc_real}"
    )
    detail = (
        f"The nvcc first on PATH is {tk.nvcc_on_path}, {where}, but CUDA {target.version} at {target.root} is the "
        f"toolkit "
        f"{' and '.join(reasons)}, and its bin folder {bin_dir} is not on PATH. Builds compile with the older "
        f"nvcc against the newer toolkit's headers and libraries, or fail."
    )
    causes = [_nvcc_key(bin_dir)]
    if facts.os == "windows":
        step, stale = reach_folder_fix(facts, bin_dir)
        fix = [
            step
            if stale
            else f"Put {bin_dir} first on PATH (System Properties → Environment Variables → Path → New, Move Up), "
            f"then open a new terminal."
        ]
        causes = [stale] if stale else causes
    else:
        fix = [f"export PATH={bin_dir}:$PATH  (add it to ~/.bashrc to keep it)"]
        if distro:
            fix.append(f"Or remove the distribution's older compiler: `sudo apt remove {distro}`.")
    evidence = {"toolkit": target.root, "nvcc": tk.nvcc_on_path, "package": distro, "pointed_by": reasons}
    yield NVCC_NOT_ON_PATH.finding(detail, fix, evidence, causes=causes)


def _nvcc_key(bin_dir: str) -> str:
    """The cause "this toolkit's bin folder is off PATH": no stale session explains it (that is Windows' cause, keyed
    apart)."""
    return f"nvcc:{bin_dir}"


def _distribution_nvcc(facts: Facts) -> Optional[str]:
    """The Linux distribution's own nvcc (Debian/Ubuntu nvidia-cuda-toolkit), not one of NVIDIA's cuda-nvcc-X-Y
    packages."""
    package = facts.toolkits.nvcc_package
    if package and not package.startswith("cuda-"):
        return package
    return None


def _pointed_at(facts: Facts) -> Iterator[tuple[Toolkit, str, str]]:
    """Toolkits the machine is set up for, why, and the spelling that points there: the `cuda` link, CUDA_HOME /
    CUDA_PATH, a framework's CUDA."""
    rules = PathRules(facts.os)
    for toolkit in facts.toolkits.toolkits:
        for alias in toolkit.aliases:
            if rules.basename(alias).lower() == "cuda":
                yield toolkit, f"{alias} links to", alias
    for name, value in facts.toolkits.variables:
        if name.upper() in ("CUDA_PATH", "CUDA_HOME") and not value_problems(name, value, facts.os)[0]:
            named = _toolkit_for(facts, value, facts.os)
            if named is not None:
                yield named, f"{name} names", value
    for build in facts.builds:
        if build.cuda_version is None:
            continue
        for toolkit in facts.toolkits.toolkits:
            if toolkit.parsed_version and toolkit.parsed_version.release[:2] == build.cuda_version.release[:2]:
                yield toolkit, f"{build.name} {build.version} was built for", toolkit.root


def _newer(toolkit: Toolkit, than: Optional[Toolkit]) -> bool:
    if than is None or than.parsed_version is None or toolkit.parsed_version is None:
        return False
    return toolkit.parsed_version.release[:2] > than.parsed_version.release[:2]


@CUDA_PATH_MISMATCH.checks
def cuda_path_mismatch(facts: Facts) -> Iterator[Finding]:
    """Build systems take headers and libraries from CUDA_HOME / CUDA_PATH but compile with the nvcc on PATH; two
    versions mixed, or a value naming no toolkit, fail in odd ways."""
    tk = facts.toolkits
    path_toolkit = tk.by_root(tk.path_toolkit)
    kinds = {(t.name, t.value): t.kind for t in tk.targets}
    for name, value in tk.variables:
        if name.upper() not in ("CUDA_PATH", "CUDA_HOME"):
            continue
        problems, meant = value_problems(name, value, facts.os)
        named = None if problems else _toolkit_for(facts, value, facts.os)
        if named is not None:
            if path_toolkit is not None and named.root != path_toolkit.root:
                yield CUDA_PATH_MISMATCH.finding(
                    f"{name}={value} is CUDA {named.version}, but the nvcc first on PATH ({tk.nvcc_on_path}) is "
                    f"CUDA {path_toolkit.version} at {path_toolkit.root}.",
                    [
                        set_command(facts, name, _corrected(facts, None)[1]),
                        f"Or put {named.bin_dir} first on PATH, so both name the same toolkit.",
                    ],
                    {"variable": name, "value": value, "nvcc": tk.nvcc_on_path},
                )
            continue
        if not problems:
            kind = kinds.get((name, value), "missing")
            if kind == "toolkit":  # the probe saw a toolkit there that no check knows: never fault what may be right
                continue
            problems = [kind_problem(kind, facts.os == "windows")]
        yield _malformed(facts, name, value, problems, meant)


def _malformed(facts: Facts, name: str, value: str, problems: list[str], meant: Optional[str]) -> Finding:
    """The value names no toolkit: say why, and give the one value to set instead."""
    tk = facts.toolkits
    path_toolkit = tk.by_root(tk.path_toolkit)
    meant_toolkit = _toolkit_for(facts, meant, facts.os) if meant else None
    detail = f"{name} is '{value}', which {'; it '.join(problems)}."
    if meant_toolkit is not None:
        detail += f" Written correctly it would name CUDA {meant_toolkit.version} at {meant_toolkit.root}."
    target, spelled = _corrected(facts, meant_toolkit, meant)
    if path_toolkit is not None:
        detail += (
            f" The nvcc first on PATH ({tk.nvcc_on_path}) is CUDA {path_toolkit.version} at "
            f"{path_toolkit.root}; builds mix its compiler with whatever {name} leads them to."
        )
    elif target is not None:
        detail += (
            f" No nvcc is on PATH; {'that' if target is meant_toolkit else 'the newest installed'} toolkit "
            f"is CUDA {target.version} at {target.root}."
        )
    else:
        detail += " No CUDA toolkit is installed."
    return CUDA_PATH_MISMATCH.finding(
        detail,
        [set_command(facts, name, spelled)],
        {"variable": name, "value": value, "problems": problems, "corrected": spelled, "nvcc": tk.nvcc_on_path},
    )


def _corrected(
    facts: Facts, meant: Optional[Toolkit], meant_spelling: Optional[str] = None
) -> tuple[Optional[Toolkit], Optional[str]]:
    """The toolkit of the nvcc on PATH, else the one the value meant, else the newest: spelled as the user did, else as
    PATH does."""
    tk = facts.toolkits
    toolkit = tk.by_root(tk.path_toolkit) or meant
    if toolkit is None and tk.toolkits:
        toolkit = max(tk.toolkits, key=lambda t: (t.has_nvcc, t.parsed_version or Version("0")))
    if toolkit is None:
        return None, None
    rules = PathRules(facts.os)
    if meant is toolkit and meant_spelling:
        return toolkit, rules.norm(meant_spelling)  # /usr/local/cuda stays the link the user chose
    if tk.nvcc_on_path and tk.by_root(tk.path_toolkit) is toolkit:
        spelled = rules.dirname(
            rules.dirname(tk.nvcc_on_path)
        )  # /usr/local/cuda when PATH reaches 13.0 through the link
        if any(rules.same(spelled, a) for a in toolkit.aliases):
            return toolkit, spelled
    return toolkit, toolkit.root


@MULTIPLE_CUDA_ON_PATH.checks
def multiple_cuda_on_path(facts: Facts) -> Iterator[Finding]:
    """The first toolkit on PATH wins for nvcc and for every DLL loaded by name; the order decides silently."""
    order: list[tuple[int, Toolkit, str]] = []
    for entry in facts.environment.path:
        for toolkit in facts.toolkits.toolkits:
            bins = [toolkit.bin_dir] + [
                a.rstrip("\\/") + ("\\bin" if facts.os == "windows" else "/bin") for a in toolkit.aliases
            ]
            if any(_same(facts, entry.value, b) for b in bins) and toolkit not in [t for _, t, _ in order]:
                order.append((entry.index, toolkit, entry.value))
    versions = {t.version for _, t, _ in order}
    if len(order) < 2 or len(versions) < 2:
        return
    listing = "; ".join(f"#{i + 1} in PATH: {value} (CUDA {t.version})" for i, t, value in order)
    winner = order[0][1]
    yield MULTIPLE_CUDA_ON_PATH.finding(
        f"{listing}. CUDA {winner.version} wins for nvcc and for libraries loaded by name.",
        [
            f"Keep only the toolkit you use on PATH (remove {', '.join(v for _, t, v in order[1:])}), or move its "
            f"bin folder first."
        ],
        {"order": [v for _, _, v in order]},
    )


def _same(facts: Facts, a: str, b: str) -> bool:
    return PathRules(facts.os).same(a, b)


def _release_wanted(build: FrameworkBuild) -> str:
    """The toolkit release a build needs, as precisely as it is known: "11.2" for a build of 11.2, "12.x" for one that
    names
    only its major (cupy-cuda12x runs on any CUDA 12 release)."""
    cuda = build.cuda_version
    if cuda is None:
        return "?"
    stated = build.cuda.value if build.cuda else ""
    return f"{cuda.major}.x" if stated.isdigit() else major_minor(cuda)
