"""Every rule, declared once: the finding ids, their severity, title, report area and relations.

This is the one place a finding id is written in the source (its page, `checks/pages/<id>.md`, and
the tests aside). The check modules attach each rule's check (`@CUDNN_MISSING.checks`), in the
order below, which is also the order that breaks ties between causes (checks/causes.py). A
relation is written on the later rule of the pair, as `explains` or `explained_by`.
"""

from __future__ import annotations

from cudnn_doctor.checks.evidence import (
    CpuBuild,
    MissingFolders,
    MissingHeaders,
    MissingImportLibraries,
    NestedCopy,
    RepeatedEntries,
    ShadowedCopies,
    SystemFolderCopy,
    UnreadVariable,
)
from cudnn_doctor.checks.registry import declare as _declare
from cudnn_doctor.findings import Area, Severity

# checks/cudnn.py
CUDNN_MISSING = _declare(
    "cudnn-missing", Severity.ERROR, "The framework finds no cuDNN library", Area.CUDNN, fix_kind="unsafe"
)
CUDNN_VERSION_MISMATCH = _declare(
    "cudnn-version-mismatch",
    Severity.ERROR,
    "The cuDNN that would be loaded is not the version the framework needs",
    Area.CUDNN,
    explains=(CUDNN_MISSING,),
)
CUDNN_CUDA_MISMATCH = _declare(
    "cudnn-cuda-mismatch", Severity.ERROR, "The cuDNN that would be loaded was built for another CUDA major", Area.CUDNN
)
CUDNN_SHADOWED = _declare(
    "cudnn-shadowed",
    Severity.WARNING,
    "An earlier copy of a cuDNN library wins the search",
    Area.CUDNN,
    fix_kind="safe",
    severity_when="error when the copy found first is unusable (another version or CUDA major)",
    evidence=ShadowedCopies,
)
CUDNN_PARTIAL_INSTALL = _declare(
    "cudnn-partial-install", Severity.ERROR, "A cuDNN installation lacks some of its release's libraries", Area.CUDNN
)
CUDNN_MIXED_VERSIONS = _declare(
    "cudnn-mixed-versions", Severity.ERROR, "cuDNN libraries from different releases are combined", Area.CUDNN
)
CUDNN_HEADER_MISSING = _declare(
    "cudnn-header-missing",
    Severity.WARNING,
    "cuDNN headers are missing from the toolkit's include folder",
    Area.CUDNN,
    fix_kind="safe",
    evidence=MissingHeaders,
)
CUDNN_IMPORT_LIB_MISSING = _declare(
    "cudnn-import-lib-missing",
    Severity.WARNING,
    "cuDNN import libraries are missing from the toolkit's lib\\x64",
    Area.CUDNN,
    fix_kind="safe",
    evidence=MissingImportLibraries,
)
CUDNN_NESTED_LAYOUT = _declare(
    "cudnn-nested-layout",
    Severity.ERROR,
    "A cuDNN archive was copied with its top folder",
    Area.CUDNN,
    explains=(CUDNN_MISSING,),
    fix_kind="safe",
    evidence=NestedCopy,
)
CUDNN_IN_SYSTEM_DIR = _declare(
    "cudnn-in-system-dir",
    Severity.ERROR,
    "cuDNN was copied into a system folder",
    Area.CUDNN,
    fix_kind="safe",
    evidence=SystemFolderCopy,
)

# checks/driver.py
NO_NVIDIA_GPU = _declare("no-nvidia-gpu", Severity.ERROR, "No NVIDIA driver or GPU found", Area.DRIVER)
DRIVER_LIBRARY_MISMATCH = _declare(
    "driver-library-mismatch",
    Severity.ERROR,
    "The loaded NVIDIA kernel module and the driver's libraries are different releases",
    Area.DRIVER,
    explains=(NO_NVIDIA_GPU,),
)
GPU_NOT_PASSED_TO_CONTAINER = _declare(
    "gpu-not-passed-to-container",
    Severity.ERROR,
    "This container was started without access to the GPU",
    Area.DRIVER,
    explains=(NO_NVIDIA_GPU,),
)
DRIVER_TOO_OLD = _declare(
    "driver-too-old", Severity.ERROR, "The NVIDIA driver is too old for the installed CUDA software", Area.DRIVER
)
GPU_ARCH_UNSUPPORTED = _declare(
    "gpu-arch-unsupported", Severity.ERROR, "A build has no code for this GPU's architecture", Area.DRIVER
)
WSL_LINUX_DRIVER_INSTALLED = _declare(
    "wsl-linux-driver-installed", Severity.ERROR, "A Linux NVIDIA driver is installed inside WSL2", Area.DRIVER
)

# checks/environment.py
ENV_STALE_SESSION = _declare(
    "env-stale-session",
    Severity.WARNING,
    "This terminal or IDE started before the environment was changed",
    Area.ENVIRONMENT,
    explains=(CUDNN_MISSING,),
)
PATH_MISSING_DIR = _declare(
    "path-missing-dir",
    Severity.WARNING,
    "A CUDA-related PATH entry does not exist",
    Area.ENVIRONMENT,
    fix_kind="safe",
    severity_when="info when the entry does not matter to the GPU stack",
    evidence=MissingFolders,
)
PATH_DUPLICATE_ENTRIES = _declare(
    "path-duplicate-entries",
    Severity.INFO,
    "The same folder is on PATH more than once",
    Area.ENVIRONMENT,
    fix_kind="safe",
    evidence=RepeatedEntries,
)
ENV_VAR_INEFFECTIVE = _declare(
    "env-var-ineffective",
    Severity.WARNING,
    "A variable is set that nothing reads",
    Area.ENVIRONMENT,
    fix_kind="safe",
    evidence=UnreadVariable,
)
CUDA_VISIBLE_DEVICES_HIDES_GPUS = _declare(
    "cuda-visible-devices-hides-gpus", Severity.WARNING, "CUDA_VISIBLE_DEVICES hides every GPU", Area.ENVIRONMENT
)

# checks/frameworks.py
TORCH_CPU_BUILD = _declare(
    "torch-cpu-build",
    Severity.ERROR,
    "PyTorch is a CPU-only build",
    Area.FRAMEWORKS,
    fix_kind="unsafe",
    evidence=CpuBuild,
)
TORCH_CUDA_UNAVAILABLE = _declare(
    "torch-cuda-unavailable",
    Severity.ERROR,
    "PyTorch is a CUDA build but cannot use the GPU",
    Area.FRAMEWORKS,
    explained_by=(
        DRIVER_LIBRARY_MISMATCH,
        GPU_NOT_PASSED_TO_CONTAINER,
        CUDA_VISIBLE_DEVICES_HIDES_GPUS,
        NO_NVIDIA_GPU,
        DRIVER_TOO_OLD,
        GPU_ARCH_UNSUPPORTED,
        WSL_LINUX_DRIVER_INSTALLED,
        ENV_VAR_INEFFECTIVE,
    ),
)
TF_WINDOWS_GPU_UNSUPPORTED = _declare(
    "tf-windows-gpu-unsupported",
    Severity.ERROR,
    "TensorFlow 2.11+ has no GPU support on native Windows",
    Area.FRAMEWORKS,
)
TF_CPU_BUILD = _declare("tf-cpu-build", Severity.ERROR, "TensorFlow was built without CUDA", Area.FRAMEWORKS)
FRAMEWORK_CUDA_MISMATCH = _declare(
    "framework-cuda-mismatch",
    Severity.ERROR,
    "The system CUDA does not match what the framework was built for",
    Area.FRAMEWORKS,
    explains=(CUDNN_CUDA_MISMATCH,),
)
PYTHON_UNSUPPORTED = _declare(
    "python-unsupported",
    Severity.ERROR,
    "The Python version is outside what the framework release supports",
    Area.FRAMEWORKS,
)
INTERPRETER_MISMATCH = _declare(
    "interpreter-mismatch",
    Severity.WARNING,
    "The GPU framework is installed in another interpreter than the one in use",
    Area.FRAMEWORKS,
)
KNOWLEDGE_OUTDATED = _declare(
    "knowledge-outdated", Severity.INFO, "A framework is newer than the doctor's data", Area.FRAMEWORKS
)

# checks/libraries.py
LIBRARY_ZERO_BYTES = _declare("library-zero-bytes", Severity.ERROR, "A CUDA/cuDNN library file is 0 bytes", Area.CUDNN)
LIBRARY_UNREADABLE = _declare(
    "library-unreadable", Severity.ERROR, "A CUDA/cuDNN library file cannot be read", Area.CUDNN
)
LIBRARY_WRONG_ARCHITECTURE = _declare(
    "library-wrong-architecture", Severity.ERROR, "A library is built for another machine type", Area.CUDNN
)
DEPENDENCY_MISSING = _declare(
    "dependency-missing",
    Severity.ERROR,
    "A library imports or loads a DLL / shared object that cannot be found",
    Area.ENVIRONMENT,
    explained_by=(
        FRAMEWORK_CUDA_MISMATCH,
        CUDNN_CUDA_MISMATCH,
        CUDNN_PARTIAL_INSTALL,
        CUDNN_MISSING,
        LIBRARY_ZERO_BYTES,
        LIBRARY_UNREADABLE,
        LIBRARY_WRONG_ARCHITECTURE,
    ),
    fix_kind="unsafe",
    severity_when="warning when the library treats that load as optional (cuDNN 8's libnvrtc.so)",
)
LOADER_EMULATION_DIFFERS = _declare(
    "loader-emulation-differs",
    Severity.WARNING,
    "The real loader picked another file than the emulation",
    Area.ENVIRONMENT,
)

# checks/toolkit.py
CUDA_TOOLKIT_MISSING = _declare(
    "cuda-toolkit-missing",
    Severity.INFO,
    "No CUDA toolkit is installed",
    Area.TOOLKIT,
    explains=(DEPENDENCY_MISSING,),
    severity_when="error when a framework loads the CUDA runtime from the system",
)
CUDA_LIBS_NOT_FOUND = _declare(
    "cuda-libs-not-found",
    Severity.ERROR,
    "A framework cannot find the CUDA runtime libraries",
    Area.TOOLKIT,
    explained_by=(
        FRAMEWORK_CUDA_MISMATCH,
        CUDA_TOOLKIT_MISSING,
        ENV_STALE_SESSION,
    ),
    explains=(DEPENDENCY_MISSING,),
    fix_kind="unsafe",
)
NVCC_NOT_ON_PATH = _declare(
    "nvcc-not-on-path",
    Severity.WARNING,
    "A CUDA toolkit is installed but its nvcc is not on PATH",
    Area.TOOLKIT,
    explained_by=(ENV_STALE_SESSION,),
)
CUDA_PATH_MISMATCH = _declare(
    "cuda-path-mismatch",
    Severity.WARNING,
    "CUDA_PATH / CUDA_HOME does not name the toolkit of the nvcc on PATH",
    Area.TOOLKIT,
)
MULTIPLE_CUDA_ON_PATH = _declare(
    "multiple-cuda-on-path", Severity.WARNING, "Several CUDA toolkits are on PATH", Area.TOOLKIT
)

# made by the runner itself (checks/__init__.py)
DOCTOR_INTERNAL_ERROR = _declare(
    "doctor-internal-error",
    Severity.WARNING,
    "A check or probe of cudnn-doctor itself failed",
    Area.ENVIRONMENT,
    why="A bug in the doctor must show, not vanish: the findings that depend on the failed part may be missing.",
)
