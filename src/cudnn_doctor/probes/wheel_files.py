"""What a framework's installed files say about its build, read without importing anything.

A wheel states its build in three places a probe can read as plain files: a generated Python
module (`onnxruntime/capi/build_and_package_info.py`, `torch/version.py`, TensorFlow's
`build_info.py`, `paddle/version/__init__.py`), the import table of its GPU library (DT_NEEDED /
PE imports name `libcudart.so.13`, `cublas64_13.dll`, `libcudnn.so.9`), and its distribution
metadata (`Requires-Dist: nvidia-cudnn-cu13~=9.0; extra == "cudnn"`). These outrank the
knowledge tables: a table row is a guess about a release, the files are the build itself.
The Python modules are parsed with `ast`, never executed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from packaging.version import InvalidVersion, Version

from cudnn_doctor.binaries import BinaryInfo
from cudnn_doctor.facts import PythonEnv, WheelRequirement
from cudnn_doctor.lazyre import regex
from cudnn_doctor.probes.cudnn import site_packages
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import Files
from cudnn_doctor.versions import canonical_name, cuda_in_tag, cuda_major_of_dll_number

if TYPE_CHECKING:
    import ast

# CUDA libraries whose file-name major is the CUDA major (cuFFT, cuRAND, cuSPARSE number their own releases).
_CUDA_LINUX = regex(r"^lib(?:cudart|cublas|cublasLt|nvrtc)\.so\.(\d+)")
_CUDA_WINDOWS = regex(r"^(?:cudart|cublas|cublasLt)64_(\d+)\.dll$|^nvrtc64_(\d+)_0\.dll$", re.IGNORECASE)
_CUDNN_LINUX = regex(r"^libcudnn\.so\.(\d+)")
_CUDNN_WINDOWS = regex(r"^cudnn64_(\d+)\.dll$", re.IGNORECASE)
# pip distributions whose name or version carries the CUDA major: nvidia-cudnn-cu13, nvidia-cuda-runtime~=13.0,
# cuda-toolkit==13.0.3
_CUDA_VERSIONED = frozenset({"nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cublas", "cuda-toolkit"})
_LEADING_NAME = regex(
    r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)"
)  # PEP 508's name, for skipping unwanted lines unparsed
_EXTRA = regex(r"""extra\s*==\s*['"]([^'"]+)['"]""")
_LOWER_BOUNDS = ("~=", "==", "===", ">=")


class Evidence(Record):
    """One value a file states, where it is, and the words a report quotes."""

    value: str
    path: str
    detail: str  # "onnxruntime/capi/build_and_package_info.py", "libtorch_cuda.so imports libcudnn.so.9"


class WheelFiles:
    """The site-packages folders of one interpreter, read through the System (live or fixture)."""

    def __init__(self, system: Files, python: PythonEnv) -> None:
        self.system = system
        self.python = python
        self.sites = [s for s in site_packages(system, python) if system.is_dir(s)]

    def find(self, *parts: str) -> Optional[str]:
        """The first file at `site/parts...`, in site order (as on sys.path)."""
        for site in self.sites:
            path = self.system.paths.join(site, *parts)
            if self.system.is_file(path):
                return path
        return None

    def constants(self, *parts: str) -> Optional[tuple[dict[str, Any], str]]:
        """The literal assignments of a generated module, and its path; None when absent or unreadable."""
        path = self.find(*parts)
        text = self.system.read_text(path, 256 * 1024) if path else None
        if path is None or text is None:
            return None
        return module_constants(text), path

    def binary(self, *parts: str) -> Optional[tuple[BinaryInfo, str]]:
        path = self.find(*parts)
        info = self.system.binary(path) if path else None
        return (info, path) if path is not None and info is not None and info.format is not None else None

    def requirements(
        self, distribution: str, wanted: Optional[Callable[[str], bool]] = None
    ) -> tuple[tuple[WheelRequirement, ...], Optional[str]]:
        """The Requires-Dist of an installed distribution that apply on this machine, with the extra that asks for each;
        with `wanted`, only those whose canonical name it accepts."""
        path = self._metadata_path(distribution)
        text = self.system.read_text(path) if path else None
        if path is None or text is None:
            return (), None
        environment = self._marker_environment()
        return tuple(requirements_of(text, environment, wanted)), path

    def _metadata_path(self, distribution: str) -> Optional[str]:
        wanted = canonical_name(distribution)
        for site in self.sites:
            for entry in self.system.list_dir(site, sizes=False) or []:
                name = self.system.paths.basename(entry.path)
                if (
                    entry.is_dir
                    and name.endswith(".dist-info")
                    and canonical_name(name[: -len(".dist-info")].split("-")[0]) == wanted
                ):
                    path = self.system.paths.join(entry.path, "METADATA")
                    if self.system.is_file(path):
                        return path
        return None

    def _marker_environment(self) -> dict[str, str]:
        """PEP 508 marker values of the interpreter these files belong to, not of the doctor's own."""
        windows = self.system.paths.windows
        version = self.python.version
        return {
            "os_name": "nt" if windows else "posix",
            "sys_platform": "win32" if windows else "linux",
            "platform_system": "Windows" if windows else "Linux",
            "platform_machine": "AMD64" if windows and self.system.arch == "x86_64" else self.system.arch,
            "python_version": ".".join(version.split(".")[:2]),
            "python_full_version": version,
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
        }


def module_constants(text: str) -> dict[str, Any]:
    """Top-level `name = literal` (and `name: T = literal`) of a module; a dict built from literals
    (`collections.OrderedDict([(k, v), ...])`, `{...}`) and `name[key] = literal` fill a dict."""
    import ast  # only where a framework's generated module is read

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, Any] = {}
    for node in tree.body:
        target, value = (
            (node.targets[0], node.value) if isinstance(node, ast.Assign) and len(node.targets) == 1 else (None, None)
        )
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and value is not None:
            literal = _literal(value)
            if literal is not _NOT_LITERAL:
                found[target.id] = literal
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and isinstance(found.get(target.value.id), dict)
        ):
            key, literal = _literal(target.slice), _literal(value) if value is not None else _NOT_LITERAL
            if isinstance(key, str) and literal is not _NOT_LITERAL:
                found[target.value.id][key] = literal
    return found


_NOT_LITERAL = object()


def _literal(node: ast.AST) -> Any:
    import ast

    if (
        isinstance(node, ast.Call)
        and _called(node.func) in ("dict", "OrderedDict")
        and len(node.args) <= 1
        and not node.keywords
    ):  # OrderedDict([...]) / dict()
        inner = _literal(node.args[0]) if node.args else {}
        try:
            return dict(inner) if isinstance(inner, (dict, list)) else _NOT_LITERAL
        except (TypeError, ValueError):
            return _NOT_LITERAL
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _called(func: ast.AST) -> Optional[str]:
    import ast

    """The name a call calls: `dict`, or `OrderedDict` of `collections.OrderedDict`."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def requirements_of(
    metadata: str, environment: dict[str, str], wanted: Optional[Callable[[str], bool]] = None
) -> Iterable[WheelRequirement]:
    """Each `Requires-Dist` header whose markers hold here: once per extra that asks for it, or with extra None.
    With `wanted`, a line whose leading name it rejects is skipped before it is parsed: packaging.requirements
    (markers, tokenizer, tags: a heavy import) loads only when a wanted line is there."""
    lines = []
    for line in metadata.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the description follows
        key, _, value = line.partition(":")
        if key.strip().lower() != "requires-dist":
            continue
        name = _LEADING_NAME.match(value)
        if wanted is None or name is None or wanted(canonical_name(name.group(1))):
            lines.append(value)
    if not lines:
        return
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement

    for value in lines:
        try:
            requirement = Requirement(value.strip())
        except InvalidRequirement:
            continue
        marker = requirement.marker
        extras = _EXTRA.findall(str(marker)) if marker is not None else []
        for extra in extras or [None]:
            try:
                holds = marker is None or marker.evaluate({**environment, "extra": extra or ""})
            except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
                holds = False
            if holds:
                yield WheelRequirement(canonical_name(requirement.name), str(requirement.specifier), extra)


# --- what the evidence says ------------------------------------------------------------------


def cuda_major_of_library(name: str) -> Optional[int]:
    """13 for libcudart.so.13, cublas64_13.dll, nvrtc64_120_0.dll (12); None for other libraries."""
    match = _CUDA_LINUX.match(name)
    if match:
        return int(match.group(1))
    match = _CUDA_WINDOWS.match(name)
    return cuda_major_of_dll_number(match.group(1) or match.group(2)) if match else None


def cudnn_major_of_library(name: str) -> Optional[int]:
    match = _CUDNN_LINUX.match(name) or _CUDNN_WINDOWS.match(name)
    return int(match.group(1)) if match else None


def library_majors(
    info: BinaryInfo, path: str, short: str
) -> tuple[Optional[Evidence], Optional[Evidence], tuple[str, ...]]:
    """(CUDA major, cuDNN major, the NVIDIA libraries it names) from a GPU library's imports.

    The CUDA major comes from the import table only: the names a binary loads by itself are a
    string scan, and builds carry fallbacks for other majors (ONNX Runtime 1.31 names both
    `libcudart.so.12` and `.13`). cuDNN, which some builds load only at run time, is taken from the
    scanned names too when they name one major alone."""
    cuda = _one_major(info.imports, cuda_major_of_library)
    cudnn = _one_major(info.imports, cudnn_major_of_library)
    how = "imports"
    if cudnn is None:
        cudnn, how = _one_major(info.loads, cudnn_major_of_library), "loads"
    named = tuple(
        n
        for n in (*info.imports, *info.loads)
        if cuda_major_of_library(n) is not None or cudnn_major_of_library(n) is not None
    )
    return (
        Evidence(str(cuda[0]), path, f"{short} imports {cuda[1]}") if cuda else None,
        Evidence(str(cudnn[0]), path, f"{short} {how} {cudnn[1]}") if cudnn else None,
        named,
    )


def _one_major(names: Iterable[str], major_of: Any) -> Optional[tuple[int, str]]:
    found: dict[int, str] = {}
    for name in names:
        major = major_of(name)
        if major is not None:
            found.setdefault(major, name)
    return next(iter(found.items())) if len(found) == 1 else None


def requirement_majors(
    requirements: Iterable[WheelRequirement], path: str, short: str
) -> tuple[Optional[Evidence], Optional[Evidence]]:
    """(CUDA major, cuDNN major) the distribution's NVIDIA wheel requirements imply, when they agree."""
    cuda: dict[int, WheelRequirement] = {}
    cudnn: dict[int, WheelRequirement] = {}
    for requirement in requirements:
        suffix = cuda_in_tag(
            requirement.name, "nvidia-wheel"
        )  # nvidia-cudnn-cu12: 12; nvidia-cublas-cu117: 11.7, major 11
        if suffix is not None:
            cuda.setdefault(suffix.release[0], requirement)
        elif requirement.name in _CUDA_VERSIONED and _lower_major(requirement.specifier) is not None:
            cuda.setdefault(_lower_major(requirement.specifier), requirement)  # type: ignore[arg-type]
        if requirement.name.startswith("nvidia-cudnn") and _lower_major(requirement.specifier) is not None:
            cudnn.setdefault(_lower_major(requirement.specifier), requirement)  # type: ignore[arg-type]
    return (
        Evidence(str(next(iter(cuda))), path, f"{short} requires {cuda[next(iter(cuda))].text}")
        if len(cuda) == 1
        else None,
        Evidence(str(next(iter(cudnn))), path, f"{short} requires {cudnn[next(iter(cudnn))].text}")
        if len(cudnn) == 1
        else None,
    )


def _lower_major(specifier: str) -> Optional[int]:
    """9 for "~=9.0", "==9.24.0.43", ">=9.1,<10": the major of the lowest release it admits."""
    majors = []
    for part in specifier.split(","):
        part = part.strip()
        for operator in _LOWER_BOUNDS:
            if part.startswith(operator) and not part.startswith(operator + "="):
                try:
                    majors.append(Version(part[len(operator) :].strip().rstrip(".*")).release[0])
                except InvalidVersion:
                    pass
                break
    return min(majors) if majors else None
