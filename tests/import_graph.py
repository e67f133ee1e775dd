"""The resolved import graph of a package, read with `ast` (nothing is imported).

Every import statement counts wherever it stands: at module level, inside a function, under
`if TYPE_CHECKING:` or in a `try`. Relative imports are resolved against the importing module;
`from pkg import name` counts as importing `pkg.name` when that is a module, and as importing the
module a lazy re-export table (`_EXPORTS = {"name": "pkg.module"}` in `pkg/__init__.py`) names;
`importlib.import_module("literal")` counts too. A layer test built on this graph cannot be
side-stepped by spelling an import another way.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Mapping, NamedTuple, Optional


class Module(NamedTuple):
    name: str
    path: Path
    is_package: bool


def modules_of(package_dir: Path) -> dict[str, Module]:
    """Every module of the package at `package_dir`, by dotted name."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        found[name] = Module(name, path, is_package)
    return found


def lazy_exports(source: str) -> dict[str, str]:
    """The `_EXPORTS = {"Name": "pkg.module"}` table of a package `__init__`, if it has one."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets):
            table = ast.literal_eval(node.value)
            return {str(k): str(v) for k, v in table.items()}
    return {}


def _base(importer: str, is_package: bool, level: int) -> str:
    """The package a relative import with `level` dots starts from."""
    parts = importer.split(".") if is_package else importer.split(".")[:-1]
    if level - 1 >= len(parts):
        raise ValueError(f"{importer}: a relative import of level {level} goes above the top-level package")
    return ".".join(parts[: len(parts) - (level - 1)])


def imports_of(
    source: str,
    importer: str,
    is_package: bool,
    known: Optional[Mapping[str, object]] = None,
    exports: Optional[Mapping[str, Mapping[str, str]]] = None,
) -> set[str]:
    """The modules `source` (the text of module `importer`) imports, absolute and resolved.

    `known` holds the package's module names (to tell a submodule from an attribute);
    `exports` maps a package name to its lazy re-export table.
    """
    known, exports = known or {}, exports or {}
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _base(importer, is_package, node.level)
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            names.add(target)
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    names.add(f"{target}.{alias.name}")
                elif alias.name in exports.get(target, {}):
                    names.add(exports[target][alias.name])
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return names


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def package_graph(package_dir: Path) -> dict[str, set[str]]:
    """module → every module it imports (inside the package or not), for the package at `package_dir`."""
    modules = modules_of(package_dir)
    sources = {name: module.path.read_text(encoding="utf-8") for name, module in modules.items()}
    exports = {name: lazy_exports(sources[name]) for name, module in modules.items() if module.is_package}
    return {
        name: imports_of(sources[name], name, module.is_package, modules, exports) for name, module in modules.items()
    }
