"""Where Windows' `LoadLibrary("x.dll")` looks, in order (standard search order, SafeDllSearchMode on).

  1. the folder of the executable (the Python interpreter),
  2. the system folder `%SystemRoot%\\System32`,
  3. the 16-bit system folder `%SystemRoot%\\System`,
  4. the Windows folder `%SystemRoot%`,
  5. the current folder (not known to a diagnosis; skipped),
  6. the folders of `PATH`, in order.

The folder of the DLL that calls LoadLibrary is *not* searched: a cuDNN copied into System32
loads its sub-libraries from PATH. A module already loaded under the same name is reused,
and the first file found is used even when it is broken (0 bytes, wrong architecture): the
load then fails, it does not go on searching.
"""

from __future__ import annotations

from typing import Optional

from cudnn_doctor.system.interface import System


def search_places(system: System, executable: Optional[str], extra: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(label, folder) in search order; `extra` are folders added with os.add_dll_directory."""
    rules, env = system.paths, system.env()
    root = env.get("SystemRoot") or env.get("windir") or "C:\\Windows"
    places: list[tuple[str, str]] = []
    if executable:
        places.append(("executable folder", rules.dirname(executable)))
    places += [("add_dll_directory", folder) for folder in extra]
    places += [("system folder", rules.join(root, "System32")), ("16-bit system folder", rules.join(root, "System")), ("Windows folder", root)]
    places += [("PATH", entry) for entry in rules.split_list(env.get("PATH", "")) if entry]
    return places
