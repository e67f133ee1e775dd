"""The closed sets facts are said in: how a value is known, where a framework's CUDA comes from, why a file cannot
be loaded, how a name was asked of the loader, where a version was read. Each member is its text (`TextEnum`), so
reports and JSON show the words they always showed; facts.py names the members as constants too (`facts.LIVE`)."""

from __future__ import annotations

from cudnn_doctor.textenum import TextEnum


class ToolkitVersionFrom(TextEnum):
    """Where a toolkit's version was read, most direct first."""

    NVCC = "nvcc"
    VERSION_JSON = "version.json"
    VERSION_TXT = "version.txt"
    CUDA_H = "cuda.h"
    FOLDER_NAME = "folder-name"


class KnownFrom(TextEnum):
    """How a value is known, so a report can say whether the machine or a table said it."""

    LIVE = "live report"  # the framework said so when imported in its interpreter
    WHEEL_METADATA = "wheel build metadata"  # a file the wheel ships (torch/version.py, build_info.py), read as text
    LIBRARY_IMPORTS = "library imports"  # the DT_NEEDED / PE imports (or the scanned run-time loads) of its GPU library
    DIST_METADATA = "distribution metadata"  # the Requires-Dist of the installed distribution (nvidia-cudnn-cu13~=9.0)
    DIST_VERSION = "distribution version"  # the local version tag of the installed distribution (+cu118, .post112)
    KNOWLEDGE = "knowledge table"  # a row of the shipped version tables
    # the runtime the framework's messages say it tried to load (libcudart.so.10.2: 10.2)
    FRAMEWORK_LOG = "framework log"


class CudaFrom(TextEnum):
    """Where a framework's CUDA and cuDNN libraries come from."""

    SYSTEM = "system"  # found by the OS loader's search: toolkit, PATH / LD_LIBRARY_PATH, ld.so.cache
    BUNDLED = "bundled"  # shipped inside the framework's own wheel
    # pip nvidia-* wheels, reached through the framework's RUNPATH or its own preloading
    NVIDIA_WHEELS = "nvidia-wheels"


class UnusableKind(TextEnum):
    """Why a file of the wanted name cannot be loaded, as checks compare it."""

    EMPTY = "0 bytes"
    UNREADABLE = "unreadable"
    NOT_A_BINARY = "not a loadable binary"
    WRONG_ARCHITECTURE = "wrong architecture"


class LoadHow(TextEnum):
    """How a name was asked of the loader: a program's own load of a root, a binary's import, its load by name."""

    ROOT = "root"
    IMPORT = "import"
    LOAD = "load"


class CudnnVersionFrom(TextEnum):
    HEADER = "header"
    DIST_INFO = "dist-info METADATA"
    CONDA_META = "conda-meta record"
    ASKED_NAMES = "versioned names the front asks for"
    FILE_VERSION = "FileVersion"
    FILE_NAME = "file name"
    LOAD = "cudnnGetVersion()"
