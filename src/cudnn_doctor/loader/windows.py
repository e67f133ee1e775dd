"""Where Windows looks for a DLL, in order, for one load: the folders depend on how that load was asked for.

Microsoft, "Dynamic-link library search order"
(https://learn.microsoft.com/windows/win32/dlls/dynamic-link-library-search-order) and
"LoadLibraryExW" (https://learn.microsoft.com/windows/win32/api/libloaderapi/nf-libloaderapi-loadlibraryexw):

- STANDARD — `LoadLibrary("x.dll")`, or a path without flags (SafeDllSearchMode on): the folder
  of the executable (the Python interpreter), `%SystemRoot%\\System32`, `%SystemRoot%\\System`,
  `%SystemRoot%`, the current folder (not known to a diagnosis; skipped), the folders of `PATH`.
  Folders added with `os.add_dll_directory` are *not* searched: AddDllDirectory folders are
  used only by loads that ask for LOAD_LIBRARY_SEARCH_USER_DIRS.
- ALTERED — `LoadLibraryExW(path, LOAD_WITH_ALTERED_SEARCH_PATH)`, as ONNX Runtime loads its
  execution providers (`WindowsEnv::LoadDynamicLibrary`, onnxruntime/core/platform/windows/env.cc):
  the folder of the loaded DLL takes the place of the executable's folder; the rest is STANDARD.
- DEFAULT_DIRS — `LoadLibraryExW(path, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)`,
  as CPython ≥ 3.8 loads extension modules (`_PyImport_FindSharedFuncptrWindows`, Python/dynload_win.c)
  and ctypes a path: the folder of the loaded DLL, the executable's folder, the
  `os.add_dll_directory` folders (their order is unspecified; kept as added), System32 — never
  PATH, never the Windows folder.
- DEFAULT_DIRS_THEN_PATH — what torch/__init__.py does for every DLL of `torch\\lib`: DEFAULT_DIRS,
  and when that fails with ERROR_MOD_NOT_FOUND (126), `LoadLibraryW` after putting its DLL folders
  in front of PATH. Emulated as the DEFAULT_DIRS folders followed by that patched STANDARD search.

A load's flags hold for everything it loads through import tables: the DLL's folder in ALTERED /
DEFAULT_DIRS is the folder of the DLL the call named, for its imports and theirs. A library
that calls LoadLibrary itself later (cuDNN's sub-libraries) starts a new STANDARD load, so the
folder of that library is *not* searched: a cuDNN copied into System32 loads its sub-libraries
from PATH. A module already loaded under the same name is reused, and the first file found is
used even when it is broken (0 bytes, wrong architecture): the load then fails, it does not go on.
"""

from __future__ import annotations

from typing import Optional, Sequence

from cudnn_doctor.system.interface import System

STANDARD = "standard"
ALTERED = "altered"  # LOAD_WITH_ALTERED_SEARCH_PATH
DEFAULT_DIRS = "default-dirs"  # LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR
DEFAULT_DIRS_THEN_PATH = "default-dirs-then-path"  # torch's preload of torch\lib
MODES = (STANDARD, ALTERED, DEFAULT_DIRS, DEFAULT_DIRS_THEN_PATH)
# modes that search the folder of the DLL the load named
WITH_LOAD_DIR = (ALTERED, DEFAULT_DIRS, DEFAULT_DIRS_THEN_PATH)


def search_places(
    system: System,
    executable: Optional[str],
    mode: str = STANDARD,
    load_dir: Optional[str] = None,
    user_dirs: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """(label, folder) in search order for one load. `load_dir`: the folder of the DLL the load
    named (ALTERED, DEFAULT_DIRS); `user_dirs`: folders added with os.add_dll_directory."""
    if mode not in MODES:
        raise ValueError(f"unknown Windows search mode {mode!r}")
    rules, env = system.paths, system.env()
    root = env.get("SystemRoot") or env.get("windir") or "C:\\Windows"
    system32 = ("system folder", rules.join(root, "System32"))
    exe = [("executable folder", rules.dirname(executable))] if executable else []
    own = [("DLL folder", load_dir)] if load_dir and mode in WITH_LOAD_DIR else []
    if mode in (DEFAULT_DIRS, DEFAULT_DIRS_THEN_PATH):
        places = [*own, *exe, *(("add_dll_directory", folder) for folder in user_dirs), system32]
        if mode == DEFAULT_DIRS:
            return places
        return places + _standard(system, exe, system32, root, [("PATH (torch)", folder) for folder in user_dirs])
    return _standard(system, own or exe, system32, root, [])  # ALTERED without a path is STANDARD


def _standard(
    system: System,
    first: list[tuple[str, str]],
    system32: tuple[str, str],
    root: str,
    path_front: list[tuple[str, str]],
) -> list[tuple[str, str]]:
    rules = system.paths
    places = [
        *first,
        system32,
        ("16-bit system folder", rules.join(root, "System")),
        ("Windows folder", root),
        *path_front,
    ]
    return places + [("PATH", entry) for entry in rules.split_list(system.env().get("PATH", "")) if entry]
