"""Native code outside the known frameworks (issue 29): every extension module and library of every
package in every environment that names a CUDA-family library is a root of the process model.

A package's native files (`.so`, `.pyd`, `.dll` below site-packages) are roots when their imports
or run-time loads (fixture `imports` / `loads`; live the headers and the string scan, through
`System.cuda_names`, cached by path, size and mtime) name cuBLAS, cuDNN, the CUDA runtime, NVRTC,
NCCL, TensorRT and the like. Excluded: the packages of frameworks already resolved (their load is
modelled by `resolution._roots`), the CUDA libraries themselves (providers, not consumers: the
nvidia-* wheels, a bundled `libcudart-….so.12`), and files a framework's load already takes.

Each package's roots are resolved as one load by that environment's interpreter
(`Resolution(PROCESS, executable, package=...)`): by path, so on Linux each file's own RUNPATH
($ORIGIN) finds what it imports; on Windows an extension module (`.pyd`) and the DLLs beside it
are loaded as CPython 3.8+ loads extensions (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR: their own folder, the application folder, System32 and the
`os.add_dll_directory` folders, never PATH). The folders the package's `__init__.py` adds with
`os.add_dll_directory` count when its argument is spelt from literals, `__file__`, `os.path`
calls, `pathlib.Path` and environment variables (`added_dll_directories`); one computed any
other way (a loop, `importlib.resources`) is not known, and that package's load is judged without it.
"""

from __future__ import annotations

from typing import Callable, Collection

from cudnn_doctor import knowledge
from cudnn_doctor.binaries.names import is_cuda_family
from cudnn_doctor.facts import PythonEnv
from cudnn_doctor.loader import windows
from cudnn_doctor.loader.resolve import Resolver, Root
from cudnn_doctor.loads import PROCESS, LoadStep, Resolution
from cudnn_doctor.probes.cudnn import site_packages
from cudnn_doctor.system.interface import Files, System

# top-level folders that hold the CUDA libraries themselves (the nvidia-* wheels): never roots
_PROVIDER_FOLDERS = frozenset({"nvidia", "tensorrt_libs", "tensorrt_bindings"})


def package_roots(
    system: Files, pythons: tuple[PythonEnv, ...], skip: Callable[[PythonEnv], Collection[str]] = lambda python: ()
) -> list[tuple[PythonEnv, str, str, list[str]]]:
    """(interpreter, site-packages folder, package, root files) for every package whose native files name a CUDA-family
    library,
    each site-packages folder walked once (for the first interpreter that lists it); the top-level
    folders `skip` names for an interpreter are not walked."""
    rules = system.paths
    seen: set[str] = set()
    found = []
    for python in pythons:
        for site in site_packages(system, python):
            key = rules.key(site)
            if key in seen:
                continue
            seen.add(key)
            every: dict[str, list[str]] = {}
            naming: dict[str, list[str]] = {}
            for path in system.native_files(site, _PROVIDER_FOLDERS | set(skip(python))):
                top = path[len(site.rstrip("/\\")) :].replace("\\", "/").lstrip("/").split("/", 1)[0]
                every.setdefault(_package_of(top), []).append(path)
                if not is_cuda_family(rules.basename(path)) and system.cuda_names(path):
                    naming.setdefault(_package_of(top), []).append(path)
            found += [
                (python, site, package, _entry_points(system, every[package], paths))
                for package, paths in sorted(naming.items())
            ]
    return found


def file_names(system: Files, path: str) -> set[str]:
    """The names a loaded binary answers to (its file name and its SONAME), as the loader compares them."""
    rules = system.paths
    binary = system.binary(path)
    return {
        rules.name_key(rules.basename(path)),
        *((rules.name_key(binary.soname),) if binary and binary.soname else ()),
    }


def asked_names(system: Files, path: str) -> set[str]:
    """The names a binary imports or loads, as the loader compares them."""
    rules = system.paths
    binary = system.binary(path)
    return {rules.name_key(rules.basename(n)) for n in (*binary.imports, *binary.loads)} if binary else set()


def _entry_points(system: Files, files: list[str], naming: list[str]) -> list[str]:
    """The files of a package through which a process reaches its CUDA-naming code: every file that imports or loads,
    directly
    or through others, one that names a CUDA library, less those another of them brings in. CTranslate2's extension
    module
    (`_ext…so`) is the entry, not the vendored library it imports: only through the extension's DT_RPATH does the
    loader find
    what that library needs (auditwheel's `ctranslate2.libs`). Without an entry (a library loaded by path with ctypes)
    the
    naming files are their own."""
    names = {path: file_names(system, path) for path in files}  # the naming files are among `files`
    asks = {path: asked_names(system, path) for path in files}
    reached = set(naming)
    reached_names = set().union(*(names[p] for p in naming))
    grew = True
    while grew:
        grew = False
        for path in files:
            if path not in reached and asks[path] & reached_names:
                reached.add(path)
                reached_names |= names[path]
                grew = True
    asked = set().union(*(asks[p] for p in reached))
    entries = sorted(p for p in reached if not names[p] & asked)
    return entries or sorted(naming)


def _package_of(entry: str) -> str:
    """The import name a site-packages entry belongs to: `ctranslate2` for `ctranslate2/`,
    `ctranslate2.libs/` (auditwheel / delvewheel) and `_foo.cpython-311-x86_64-linux-gnu.so` → `_foo`."""
    if entry.endswith(".libs"):
        return entry[: -len(".libs")]
    return entry.split(".", 1)[0] if "." in entry else entry


def probe_package_loads(
    system: System, resolver: Resolver, pythons: tuple[PythonEnv, ...], resolutions: list[Resolution]
) -> tuple[Resolution, ...]:
    """One Resolution per package with native code that names a CUDA-family library, outside the frameworks already
    resolved."""
    rules = system.paths
    used = {rules.key(s.winner) for r in resolutions for s in r.steps if s.winner}
    rooted = {(r.executable, r.framework) for r in resolutions}
    modules = {
        framework.name: (framework.module.split(".", 1)[0], *framework.native_packages)
        for framework in knowledge.frameworks()
    }
    skipped: dict[str, set[str]] = {}
    for executable, name in rooted:
        for module in modules.get(name, ()):
            skipped.setdefault(executable, set()).update((module, f"{module}.libs"))
    found = []
    for python, site, package, paths in package_roots(
        system, pythons, lambda python: skipped.get(python.executable, ())
    ):
        paths = [p for p in paths if rules.key(p) not in used]
        if not paths:
            continue
        if rules.windows:
            roots, folders = (
                [Root(p, windows.DEFAULT_DIRS) for p in paths],
                added_dll_directories(system, paths[0], package),
            )
        else:
            roots, folders = [Root(p) for p in paths], []
        resolution = resolver.resolve(PROCESS, python.executable, roots, folders)
        wheels = _wheel_folders(system, site)
        if wheels:
            resolution = resolution._replace(
                steps=tuple(_with_copies(resolver, step, wheels) for step in resolution.steps)
            )
        found.append(resolution._replace(package=package))
    return tuple(found)


def _with_copies(resolver: Resolver, step: LoadStep, folders: list[str]) -> LoadStep:
    """A failed load with the copies of its name that lie in `folders`, off its search path (evidence for the fix)."""
    if not step.failed or step.elsewhere:
        return step
    copies = (resolver.index.find(folder, name) for folder in folders for name in (step.one_of or (step.name,)))
    return step._replace(elsewhere=tuple(dict.fromkeys(c for c in copies if c)))


def _wheel_folders(system: Files, site: str) -> list[str]:
    """The library folders of the pip nvidia-* wheels in `site` (nvidia/cublas/lib, nvidia/cudnn/bin, …): where a
    library the package's code misses may already lie, off its search path."""
    rules = system.paths
    sub = "bin" if rules.windows else "lib"
    wheels = system.list_dir(rules.join(site, "nvidia")) or []
    return [
        rules.join(entry.path, sub) for entry in wheels if entry.is_dir and system.is_dir(rules.join(entry.path, sub))
    ]


def added_dll_directories(system: System, root: str, package: str) -> list[str]:
    """The existing folders `package/__init__.py` (beside or above `root`, below site-packages) passes to
    `os.add_dll_directory`, where the argument can be evaluated without running the code."""
    rules = system.paths
    folder = rules.dirname(root)
    init = None
    while folder and rules.dirname(folder) != folder:
        if rules.basename(folder) in (package, f"{package}.libs"):
            candidate = rules.join(rules.dirname(folder), package, "__init__.py")
            init = candidate if system.is_file(candidate) else None
            break
        folder = rules.dirname(folder)
    text = system.read_text(init, 256 * 1024) if init else None
    if not text or "add_dll_directory" not in text:
        return []
    import ast  # only for a package that calls os.add_dll_directory

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    evaluator = _Evaluator(system, init or "", {k: v[0] for k, v in assigned.items() if len(v) == 1})
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node.func) == "add_dll_directory" and len(node.args) == 1:
            value = evaluator.value(node.args[0], 0)
            if isinstance(value, str) and rules.is_abs(value) and system.is_dir(value):
                found.append(rules.norm(value))
    return list(dict.fromkeys(found))


def _callee(func: object) -> str:
    import ast

    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


class _Evaluator:
    """The string value of a path expression, or None: literals, `__file__`, os.path.{join, dirname, abspath,
    realpath, normpath}, str(), pathlib.Path(...) with `.parent` and `/`, os.environ[...] / .get / os.getenv,
    and names assigned once in the module."""

    def __init__(self, system: System, init: str, assigned: dict) -> None:
        self.system, self.init, self.assigned = system, init, assigned

    def value(self, node: object, depth: int) -> object:
        import ast

        rules = self.system.paths
        if depth > 12:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return self.init
            return self.value(self.assigned[node.id], depth + 1) if node.id in self.assigned else None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self.value(node.value, depth + 1)
            return rules.dirname(inner) if isinstance(inner, str) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            return rules.join(left, right) if isinstance(left, str) and isinstance(right, str) else None
        if isinstance(node, ast.Subscript) and _callee(node.value) == "environ":
            key = self.value(node.slice, depth + 1)
            return self.system.env().get(key) if isinstance(key, str) else None
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        name = _callee(node.func)
        if (
            name in ("resolve", "absolute") and not node.args and isinstance(node.func, ast.Attribute)
        ):  # Path(...).resolve()
            return self.value(node.func.value, depth + 1)
        args = [self.value(arg, depth + 1) for arg in node.args]
        if (
            name in ("get", "getenv")
            and (name == "getenv" or _callee(getattr(node.func, "value", None)) == "environ")
            and args
        ):
            found = self.system.env().get(args[0]) if isinstance(args[0], str) else None
            return found if found is not None else (args[1] if len(args) > 1 else None)
        if not args or not all(isinstance(a, str) for a in args):
            return None
        if name == "join":
            return rules.join(*args)  # type: ignore[arg-type]
        if name == "dirname" and len(args) == 1:
            return rules.dirname(args[0])  # type: ignore[arg-type]
        if name in ("abspath", "realpath", "normpath", "str", "Path", "fspath", "resolve") and len(args) == 1:
            return rules.norm(args[0])  # type: ignore[arg-type]
        return None
