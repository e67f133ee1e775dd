"""Library names as checks see them: which family a file belongs to, what a build asks the loader for,
and the keys that tie findings about one missing runtime together."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.facts import Facts, FrameworkBuild, SystemLibraries
from cudnn_doctor.findings import Area
from cudnn_doctor.lazyre import regex
from cudnn_doctor.loads import LoadStep
from cudnn_doctor.paths import PathRules, prepend_ld_library_path
from cudnn_doctor.versions import cuda_major_of_dll_number

_CUDA_LIBRARY = regex(
    r"^(lib)?(cudart|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|cupti|nvJitLink|nppc)", re.IGNORECASE
)
_CUDA_RUNTIME_MAJOR = regex(r"(?i)^(?:lib)?(?:cudart|cublas|cublasLt|nvrtc)(?:64_(\d+)(?:_\d+)?\.dll|\.so\.(\d+))")
_CUDNN = regex(r"(?i)^(lib)?cudnn")
STALE_SESSION = "env:stale-session"  # the cause key of everything a restarted terminal would fix


def system_builds(facts: Facts) -> Iterator[tuple[FrameworkBuild, SystemLibraries]]:
    """GPU builds that load CUDA and cuDNN from the system, with the names they ask for."""
    return ((b, b.system_libraries) for b in facts.builds if b.system_libraries is not None)


def lookup(facts: Facts, build: FrameworkBuild, name: Optional[str]) -> Optional[LoadStep]:
    """The loader's search for a root library of this build: where it looked, what it found."""
    if not name:
        return None
    for resolution in facts.resolutions:
        if resolution.executable == build.executable and resolution.framework == build.name:
            return next((s for s in resolution.steps if s.how == "root" and s.name == name), None)
    return None


def basename(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def is_cuda_library(name: str) -> bool:
    return bool(_CUDA_LIBRARY.match(basename(name)))


def is_cudnn(name: str) -> bool:
    return bool(_CUDNN.match(basename(name)))


def area_of_library(name: str, requester: Optional[str] = None) -> Area:
    """The report line a library's problem belongs on: cuDNN's files and dependencies, the toolkit's, the driver's."""
    if is_cudnn(name):
        return Area.CUDNN
    if is_cuda_library(name):
        return Area.TOOLKIT
    if re.match(knowledge.table("libraries").driver_provided.pattern, basename(name)):
        return Area.DRIVER
    if requester is not None and requester != name:
        return area_of_library(requester)
    return Area.ENVIRONMENT


def cuda_key(major: Optional[int]) -> Optional[str]:
    """The cause key "the CUDA <major> runtime is missing or wrong"."""
    return f"cuda:{major}" if major is not None else None


def cuda_key_of_library(name: str) -> Optional[str]:
    """cuda:11 for cudart64_110.dll, cublas64_11.dll, libcublasLt.so.11: the runtime a missing file belongs to."""
    match = _CUDA_RUNTIME_MAJOR.match(basename(name))
    if match is None:
        return None
    return cuda_key(cuda_major_of_dll_number(match.group(1)) if match.group(1) else int(match.group(2)))


def build_key(build: FrameworkBuild) -> str:
    """The cause key "this build cannot get the libraries it was made for"."""
    return f"build:{build.name}@{build.executable}"


def cudnn_key(facts: Facts, folder: str) -> str:
    """The cause key "this cuDNN installation is incomplete or wrong"."""
    return f"cudnn:{PathRules(facts.os).key(folder)}"


def reach_folder_fix(facts: Facts, folder: str) -> tuple[str, Optional[str]]:
    """The step that puts `folder` on the library search path, and STALE_SESSION when a restart is all it takes."""
    rules = PathRules(facts.os)
    if any(rules.same(folder, entry) for entry in facts.environment.persistent_path):
        return (
            f"{folder} is already on the saved (registry) PATH, but this process started before it was added: "
            "close and reopen the terminal, restart the IDE or Jupyter completely."
        ), STALE_SESSION
    if facts.os == "windows":
        return (
            f"Add {folder} to PATH (System Properties → Environment Variables → Path → New), then open a new "
            f"terminal / restart the IDE.",
            None,
        )
    return f"{prepend_ld_library_path([folder])}  (add it to ~/.bashrc, or to the environment's activate script)", None
