"""Which system libraries a framework build needs, and what the framework itself said about loading them."""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple, Optional

from cudnn_doctor.builds import Build, builds, system_libraries
from cudnn_doctor.facts import Facts, LoadStep
from cudnn_doctor.paths import PathRules

_LOAD_FAILURES = (
    re.compile(r"Could not load dynamic library '([^']+)'"),
    re.compile(r"([\w.+-]+\.so[.\d]*): cannot open shared object file"),
    re.compile(r"Could not find the DLL\(s\) '([^']+)'"),
    re.compile(r"Could not locate ([\w.]+\.dll)"),
)
_CUDA_LIBRARY = re.compile(r"^(lib)?(cudart|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|cupti|nvJitLink|nppc)", re.IGNORECASE)
_CUDNN_FRONT = re.compile(r"^(libcudnn\.so(\.\d+)*|cudnn64_\d+\.dll)$", re.IGNORECASE)


class SystemNeeds(NamedTuple):
    """A GPU build that loads CUDA from the system, and the libraries it will ask for."""

    build: Build
    cuda: Optional[object]
    cudart: Optional[str]
    cudnn: Optional[str]


def system_builds(facts: Facts) -> Iterator[SystemNeeds]:
    for build in builds(facts):
        libraries = system_libraries(build, facts.os)
        if libraries is not None:
            yield SystemNeeds(build, libraries.cuda, libraries.cudart, libraries.cudnn)


def lookup(facts: Facts, build: Build, name: Optional[str]) -> Optional[LoadStep]:
    """The loader's search for a root library of this build: where it looked, what it found."""
    if not name:
        return None
    for resolution in facts.resolutions:
        if resolution.executable == build.python.executable and resolution.framework == build.name:
            return next((s for s in resolution.steps if s.how == "root" and s.name == name), None)
    return None


def failed_loads(build: Build) -> list[str]:
    """Library names the framework's own output says it could not load."""
    names: list[str] = []
    for pattern in _LOAD_FAILURES:
        for match in pattern.finditer(build.text):
            for name in match.group(1).split("', '"):
                if name not in names:
                    names.append(name)
    return names


def is_cuda_library(name: str) -> bool:
    return bool(_CUDA_LIBRARY.match(name))


def is_cudnn_front(name: str) -> bool:
    return bool(_CUDNN_FRONT.match(name))


def reach_folder_fix(facts: Facts, folder: str) -> str:
    """The step that puts `folder` on the library search path, or says why it is not there yet."""
    rules = PathRules(facts.os)
    if any(rules.same(folder, entry) for entry in facts.environment.persistent_path):
        return (f"{folder} is already on the saved (registry) PATH, but this process started before it was added: "
                "close and reopen the terminal, restart the IDE or Jupyter completely.")
    if facts.os == "windows":
        return f"Add {folder} to PATH (System Properties → Environment Variables → Path → New), then open a new terminal / restart the IDE."
    return f"export LD_LIBRARY_PATH={folder}:$LD_LIBRARY_PATH  (add it to ~/.bashrc, or to the environment's activate script)"
