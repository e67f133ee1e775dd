"""Where each interpreter's process would find the CUDA runtime and cuDNN libraries by name.

Only interpreters with a framework that loads CUDA from the system are searched (the
knowledge data says which); the names come from the knowledge data too.
"""

from __future__ import annotations

from cudnn_doctor import knowledge
from cudnn_doctor.facts import LibraryLookup, PythonEnv, ToolkitFacts, lookup_key
from cudnn_doctor.knowledge import cudnn_names, loads_system_cuda
from cudnn_doctor.loader.search import process_search_path
from cudnn_doctor.system.interface import System
from cudnn_doctor.versions import canonical_name as canonicalize_name


def probe_libraries(system: System, pythons: tuple[PythonEnv, ...], toolkits: ToolkitFacts) -> dict[str, LibraryLookup]:
    """`"{executable}|{name}"` → lookup, for each interpreter whose frameworks load system CUDA."""
    names = list(knowledge.cudart_names(system.os)) + cudnn_names(system.os)
    other_folders = [tk.bin_dir for tk in toolkits.toolkits]
    if system.os != "windows":
        other_folders += [system.paths.join(tk.root, sub) for tk in toolkits.toolkits for sub in ("lib64", "lib")]
    results: dict[str, LibraryLookup] = {}
    for python in pythons:
        needs = [name for name in _frameworks_of(python) if loads_system_cuda(name, python.packages)]
        if not needs:
            continue
        search = process_search_path(system, python.executable)
        for name in names:
            found, searched = search.find(name)
            elsewhere = tuple(p for p in search.copies(name, other_folders) if found is None or not system.paths.same(p, found))
            results[lookup_key(python.executable, name)] = LibraryLookup(name, found, searched, elsewhere)
    return results


def _frameworks_of(python: PythonEnv) -> list[str]:
    installed = set(python.packages)
    return [
        f["name"] for f in knowledge.frameworks()
        if installed & {canonicalize_name(d) for d in f["distributions"]} or f["name"] in python.frameworks
    ]
