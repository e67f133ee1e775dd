"""CUDA toolkits: every installed one, its version, and which one `nvcc` on PATH belongs to.

A `/usr/local/cuda` link to `cuda-13.0` is one toolkit with an alias, not two; an `nvcc` on
PATH may be a link or a wrapper script that `exec`s the real compiler elsewhere, so the
toolkit root comes from the real binary, never from `dirname(dirname(which nvcc))`.
"""

from __future__ import annotations

import re
from typing import Optional

from cudnn_doctor.facts import Toolkit, ToolkitFacts, VariableTarget
from cudnn_doctor.kinds import ToolkitVersionFrom
from cudnn_doctor.lazyre import regex
from cudnn_doctor.probes.ownership import PackageOwnership
from cudnn_doctor.system.interface import System

_RELEASE = regex(r"release (\d+\.\d+)(?:, V(\d+\.\d+\.\d+))?")
_VERSION_TXT = regex(r"CUDA Version\s+(\d+\.\d+(?:\.\d+)?)")
_CUDA_H = regex(r"#define\s+CUDA_VERSION\s+(\d+)")
_FOLDER = regex(r"(?:^v|^cuda-?)(\d+\.\d+)$", re.IGNORECASE)
_EXEC = regex(r"""^\s*exec\s+["']?([^\s"']+nvcc(?:\.exe)?)["']?""", re.MULTILINE)
TOOLKIT_VARIABLES = ("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR")


def probe_toolkits(system: System) -> ToolkitFacts:
    rules, env = system.paths, system.env()
    nvcc_name = "nvcc.exe" if rules.windows else "nvcc"
    variables = tuple(
        (name, env[name])
        for name in sorted(env, key=str.upper)
        if name.upper() in TOOLKIT_VARIABLES or name.upper().startswith("CUDA_PATH_V")
    )
    candidates = [value for _, value in variables] + _standard_locations(system)
    nvcc_on_path, nvcc_real = _find_nvcc(system, nvcc_name)
    path_root = rules.dirname(rules.dirname(nvcc_real)) if nvcc_real else None
    if path_root:
        candidates.insert(0, path_root)

    roots: dict[str, list[str]] = {}
    for candidate in candidates:
        if not candidate or not _looks_like_toolkit(system, candidate, nvcc_name):
            continue
        real = rules.norm(system.realpath(candidate))
        roots.setdefault(rules.key(real), [real]).append(rules.norm(candidate))

    nvcc_version = _nvcc_version(system) if nvcc_on_path else None
    path_dirs = {rules.key(p) for p in rules.split_list(env.get("PATH", "")) if p}
    toolkits = []
    for real, *names in roots.values():
        version, source = (
            (nvcc_version, ToolkitVersionFrom.NVCC)
            if path_root and rules.same(real, path_root) and nvcc_version
            else _version_from_files(system, real)
        )
        bin_dir = rules.join(real, "bin")
        on_path = any(rules.key(rules.join(n, "bin")) in path_dirs for n in [real, *names])
        aliases = tuple(sorted({n for n in names if not rules.same(n, real)}))
        toolkits.append(
            Toolkit(
                root=real,
                version=version,
                version_source=source,
                bin_dir=bin_dir,
                has_nvcc=system.is_file(rules.join(bin_dir, nvcc_name)),
                aliases=aliases,
                on_path=on_path,
            )
        )
    targets = tuple(VariableTarget(name, value, _target_kind(system, value, nvcc_name)) for name, value in variables)
    package = _package_of_nvcc(system, nvcc_on_path) if nvcc_on_path else None
    root = rules.norm(path_root) if path_root else None
    return ToolkitFacts(
        toolkits=tuple(toolkits),
        nvcc_on_path=nvcc_on_path,
        nvcc_real=nvcc_real,
        nvcc_version=nvcc_version,
        path_toolkit=root,
        variables=variables,
        targets=targets,
        nvcc_package=package,
    )


def _target_kind(system: System, value: str, nvcc_name: str) -> str:
    """The literal value as one path: quotes, separators and spaces stay part of it, as they do for the tools that read
    it."""
    info = system.stat(value) if value else None
    if info is None:
        return "missing"
    if not info.is_dir:
        return "file"
    return "toolkit" if _looks_like_toolkit(system, value, nvcc_name) else "folder"


def _package_of_nvcc(system: System, nvcc: str) -> Optional[str]:
    """Linux: the package that installed nvcc (through its links), so a distribution's compiler is told
    from NVIDIA's own; an nvcc under /usr/local or /opt is NVIDIA's installer's and needs no lookup."""
    rules = system.paths
    if rules.windows or any(rules.inside(system.realpath(nvcc), top) for top in ("/usr/local", "/opt")):
        return None
    owner = PackageOwnership(system, lambda package: "cuda" in package or "nvcc" in package).owner(nvcc)
    return owner.package.split(":")[0] if owner else None  # multiarch lists are named package:arch


def _standard_locations(system: System) -> list[str]:
    rules = system.paths
    if rules.windows:
        program_files = system.env().get("ProgramFiles", "C:\\Program Files")
        base = rules.join(program_files, "NVIDIA GPU Computing Toolkit", "CUDA")
        return [e.path for e in system.list_dir(base) or [] if e.is_dir]
    found = [e.path for e in system.list_dir("/usr/local") or [] if rules.basename(e.path).startswith("cuda")]
    return found + ["/opt/cuda"]


def _looks_like_toolkit(system: System, folder: str, nvcc_name: str) -> bool:
    rules = system.paths
    markers = (
        ("bin", nvcc_name),
        ("version.json",),
        ("version.txt",),
        ("include", "cuda.h"),
        ("include", "cuda_runtime.h"),
    )
    return any(system.exists(rules.join(folder, *marker)) for marker in markers)


def _find_nvcc(system: System, nvcc_name: str) -> tuple[Optional[str], Optional[str]]:
    """The first nvcc on PATH, and the real compiler behind links and wrapper scripts."""
    rules = system.paths
    for folder in rules.split_list(system.env().get("PATH", "")):
        if not folder:
            continue
        candidate = rules.join(folder, nvcc_name)
        info = system.stat(candidate)
        if info is None or info.is_dir:
            continue
        real = system.realpath(candidate)
        for _ in range(5):  # a wrapper may exec another wrapper
            if (system.stat(real) or info).size > 64 * 1024:
                break
            script = system.read_text(real, limit=4096)
            target = _EXEC.search(script or "") if script and script.startswith("#!") else None
            if target is None:
                break
            real = system.realpath(target.group(1))
        return candidate, rules.norm(real)
    return None, None


def _nvcc_version(system: System) -> Optional[str]:
    result = system.run(["nvcc", "--version"], timeout=15)
    match = _RELEASE.search(result.stdout) if result.ok else None
    if not match:
        return None
    return match.group(2) or match.group(1)


def _version_from_files(system: System, root: str) -> tuple[Optional[str], Optional[ToolkitVersionFrom]]:
    rules = system.paths
    text = system.read_text(rules.join(root, "version.json"))
    if text:
        import json  # only for a toolkit that has a version.json

        try:
            return json.loads(text)["cuda"]["version"], ToolkitVersionFrom.VERSION_JSON
        except (ValueError, KeyError, TypeError):
            pass
    text = system.read_text(rules.join(root, "version.txt"))
    match = _VERSION_TXT.search(text or "")
    if match:
        return match.group(1), ToolkitVersionFrom.VERSION_TXT
    match = _CUDA_H.search(system.read_text(rules.join(root, "include", "cuda.h"), limit=1 << 20) or "")
    if match:
        number = int(match.group(1))
        return f"{number // 1000}.{(number % 1000) // 10}", ToolkitVersionFrom.CUDA_H
    match = _FOLDER.match(rules.basename(root))
    if match:
        return match.group(1), ToolkitVersionFrom.FOLDER_NAME
    return None, None
