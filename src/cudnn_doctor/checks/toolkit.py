"""CUDA toolkit: installed, reachable, consistent with the variables that point at it."""

from __future__ import annotations

from typing import Iterator, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.checks._libraries import build_key, cuda_key, is_cuda_library, lookup, reach_folder_fix, system_builds
from cudnn_doctor.checks._wheels import extras_missing, held_by, install_fixes, not_searched, reach_fixes, wheels_key
from cudnn_doctor.checks.registry import finding, rule
from cudnn_doctor.facts import Facts, Toolkit
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.paths import PathRules
from cudnn_doctor.versions import major_minor


def _toolkit_for(facts: Facts, folder: str, os_name: str) -> Optional[Toolkit]:
    rules = PathRules(os_name)
    for toolkit in facts.toolkits.toolkits:
        if any(rules.same(folder, p) for p in (toolkit.root, *toolkit.aliases)):
            return toolkit
    return None


@rule("cuda-toolkit-missing", Severity.INFO, "No CUDA toolkit is installed", Area.TOOLKIT)
def cuda_toolkit_missing(facts: Facts) -> Iterator[Finding]:
    """PyTorch and JAX wheels bring their own CUDA runtime; TensorFlow on Windows, PaddlePaddle and ONNX Runtime load the system's."""
    if facts.toolkits.toolkits:
        return
    stranded = [b for b in system_builds(facts) if b.system_libraries.cudart and _not_found(facts, b, b.system_libraries.cudart)]
    if stranded:
        build = stranded[0]
        version = major_minor(build.cuda_version) if build.cuda_version else "?"
        yield finding(
            "cuda-toolkit-missing",
            f"{build.name} {build.version} loads the CUDA {version} runtime ({build.system_libraries.cudart}) from the system, and no CUDA toolkit is installed.",
            [
                f"Install the CUDA {version} toolkit from https://developer.nvidia.com/cuda-toolkit-archive and make sure its bin (Windows) or lib64 (Linux) folder is on the library search path."
            ],
            {"needs": build.system_libraries.cudart},
            severity=Severity.ERROR,
            causes=[cuda_key(b.cuda_major) for b in stranded] + [build_key(b) for b in stranded],
        )
    else:
        yield finding(
            "cuda-toolkit-missing",
            "No CUDA toolkit was found (no nvcc on PATH, no CUDA_PATH / CUDA_HOME, nothing in the standard folders). "
            "The installed frameworks do not need one; you only need it to compile CUDA code.",
            ["Install a CUDA toolkit only if you build CUDA extensions: https://developer.nvidia.com/cuda-downloads"],
        )


def _not_found(facts: Facts, build, name: str) -> bool:
    step = lookup(facts, build, name)
    return step is None or step.winner is None


@rule(
    "cuda-libs-not-found",
    Severity.ERROR,
    "A framework cannot find the CUDA runtime libraries",
    Area.TOOLKIT,
    explained_by=("framework-cuda-mismatch", "cuda-toolkit-missing", "env-stale-session"),
)
def cuda_libs_not_found(facts: Facts) -> Iterator[Finding]:
    """TensorFlow (on Windows up to 2.10, on Linux without [and-cuda]), PaddlePaddle and ONNX Runtime load cudart, cuBLAS and friends by name; if the loader cannot find them the GPU is silently unused."""
    for build in system_builds(facts):
        cudart = build.system_libraries.cudart
        said = [f.library for f in build.load_failures if is_cuda_library(f.library)]
        found = lookup(facts, build, cudart)
        missing = found is not None and found.winner is None
        if not said and not missing:
            continue
        names = said or [cudart]
        detail = f"{build.name} {build.version} in {build.executable} cannot load {', '.join(names)}."
        if said:
            detail += " It says so itself in its log."
        fix, causes = [], [cuda_key(build.cuda_major), build_key(build)]
        holder = held_by(facts, build, cudart) if cudart else None
        if found is not None and found.winner is None:
            detail += f" The loader searched {len(found.searched)} places ({'; '.join(found.searched[:6])}{'; …' if len(found.searched) > 6 else ''}) and found no {cudart}."
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
            version = major_minor(build.cuda_version) if build.cuda_version else "matching"
            toolkit = (
                f"Install the CUDA {version} toolkit (https://developer.nvidia.com/cuda-toolkit-archive) and put its "
                f"{'bin folder on PATH' if facts.os == 'windows' else 'lib64 folder on LD_LIBRARY_PATH'}."
            )
            pip = install_fixes(facts, build, [n for n in dict.fromkeys([*names, *(x for x in (cudart, build.system_libraries.cublas) if x)])])
            if extras_missing(facts, build):
                causes.append(wheels_key(build))
            reach = knowledge.wheel_reach(build.name, facts.os, build.parsed_version)
            if reach is not None and reach.extras and pip:
                fix.extend([*pip, f"Or: {toolkit}"])
            else:
                fix.extend([toolkit, *(f"Or: {step}" if i == 0 else step for i, step in enumerate(pip))])
        yield finding("cuda-libs-not-found", detail, fix, {"framework": build.name, "missing": names}, causes=causes)


@rule("nvcc-not-on-path", Severity.WARNING, "A CUDA toolkit is installed but nvcc is not on PATH", Area.TOOLKIT, explained_by=("env-stale-session",))
def nvcc_not_on_path(facts: Facts) -> Iterator[Finding]:
    """Build scripts (setup.py, CMake, make) call `nvcc` by name and fail with "nvcc: not found"."""
    with_nvcc = [t for t in facts.toolkits.toolkits if t.has_nvcc]
    if not with_nvcc or facts.toolkits.nvcc_on_path:
        return
    best = max(with_nvcc, key=lambda t: t.parsed_version or 0)
    detail = f"CUDA {best.version} is installed at {best.root}, but no nvcc is on PATH."
    causes: list = []
    if facts.os == "windows":
        step, stale = reach_folder_fix(facts, best.bin_dir)
        fix, causes = [step], [stale]
    else:
        fix = [f"export PATH={best.bin_dir}:$PATH  (add it to ~/.bashrc to keep it)"]
        if facts.environment.variables.get("SUDO_USER"):
            detail += " This shell runs under sudo, whose secure_path and env_reset drop the PATH of your own shell."
            fix = [
                f"Run the command without sudo, or keep your PATH: `sudo env PATH={best.bin_dir}:$PATH <command>`",
                f"Or add {best.bin_dir} to secure_path in /etc/sudoers (via `sudo visudo`).",
            ]
    yield finding("nvcc-not-on-path", detail, fix, {"toolkit": best.root}, causes=causes)


@rule("cuda-path-mismatch", Severity.WARNING, "CUDA_PATH / CUDA_HOME and nvcc on PATH name different toolkits", Area.TOOLKIT)
def cuda_path_mismatch(facts: Facts) -> Iterator[Finding]:
    """Build systems take headers and libraries from CUDA_HOME / CUDA_PATH but compile with the nvcc on PATH; two versions mixed fail in odd ways."""
    tk = facts.toolkits
    path_toolkit = tk.by_root(tk.path_toolkit)
    if path_toolkit is None:
        return
    for name, value in tk.variables:
        if name.upper() not in ("CUDA_PATH", "CUDA_HOME"):
            continue
        named = _toolkit_for(facts, value, facts.os)
        if named is None or named.root == path_toolkit.root:
            continue
        yield finding(
            "cuda-path-mismatch",
            f"{name}={value} is CUDA {named.version}, but the nvcc first on PATH ({tk.nvcc_on_path}) is CUDA {path_toolkit.version} at {path_toolkit.root}.",
            [f"Point {name} at {path_toolkit.root}, or put {named.bin_dir} first on PATH, so both name the same toolkit."],
            {"variable": name, "value": value, "nvcc": tk.nvcc_on_path},
        )


@rule("multiple-cuda-on-path", Severity.WARNING, "Several CUDA toolkits are on PATH", Area.TOOLKIT)
def multiple_cuda_on_path(facts: Facts) -> Iterator[Finding]:
    """The first toolkit on PATH wins for nvcc and for every DLL loaded by name; the order decides silently."""
    order: list[tuple[int, Toolkit, str]] = []
    for entry in facts.environment.path:
        for toolkit in facts.toolkits.toolkits:
            bins = [toolkit.bin_dir] + [a.rstrip("\\/") + ("\\bin" if facts.os == "windows" else "/bin") for a in toolkit.aliases]
            if any(_same(facts, entry.value, b) for b in bins) and toolkit not in [t for _, t, _ in order]:
                order.append((entry.index, toolkit, entry.value))
    versions = {t.version for _, t, _ in order}
    if len(order) < 2 or len(versions) < 2:
        return
    listing = "; ".join(f"#{i + 1} in PATH: {value} (CUDA {t.version})" for i, t, value in order)
    winner = order[0][1]
    yield finding(
        "multiple-cuda-on-path",
        f"{listing}. CUDA {winner.version} wins for nvcc and for libraries loaded by name.",
        [f"Keep only the toolkit you use on PATH (remove {', '.join(v for _, t, v in order[1:])}), or move its bin folder first."],
        {"order": [v for _, _, v in order]},
    )


def _same(facts: Facts, a: str, b: str) -> bool:
    return PathRules(facts.os).same(a, b)
