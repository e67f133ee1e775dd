"""Text view of one resolution: the search order for the root, then the import tree."""

from __future__ import annotations

from typing import Iterator, TextIO

from cudnn_doctor.facts import Confirmation
from cudnn_doctor.loads import Resolution
from cudnn_doctor.reports.encoding import Fitter


def render(resolution: Resolution, confirmations: tuple[Confirmation, ...], out: TextIO) -> None:
    fit = Fitter(out)
    for line in _lines(resolution, confirmations):
        out.write(fit(line))


def _lines(resolution: Resolution, confirmations: tuple[Confirmation, ...]) -> Iterator[str]:
    if not resolution.steps:
        return
    root = resolution.steps[0]
    yield (f"{root.name} from {resolution.executable}\n")
    how = _SEARCH.get(root.search or "")
    if how:
        yield (f"loaded with {how}\n")
    yield ("search order:\n")
    hits = {_folder_key(c.path): c for c in root.candidates}
    for number, place in enumerate(root.searched, 1):
        hit = hits.pop(place.rstrip("/\\").casefold(), None)
        mark = ""
        if hit is not None:
            mark = "  ← used" if hit.path == root.winner else f"  (copy: {hit.problem or 'not used'})"
        yield (f"  {number:3d}. {place}{mark}\n")
    yield (f"result: {root.winner or ('BROKEN ' + root.blocked_by if root.blocked_by else 'NOT FOUND')}\n")
    for confirmation in confirmations:
        verdict = "agrees" if confirmation.agrees else "DISAGREES"
        yield (f"real load: {confirmation.real or confirmation.error} ({verdict} with the emulation)\n")
    yield ("import tree:\n")
    for step in resolution.steps[1:]:
        if step.reused:
            continue
        provided = {
            "driver": "not found: a driver library (only a machine with the NVIDIA driver has it)",
            "os": "provided by the OS",
        }
        where = step.winner or (
            f"BROKEN {step.blocked_by}"
            if step.blocked_by
            else provided[step.provided_by]
            if step.provided_by
            else "NOT FOUND" + (" (optional)" if step.optional else "")
        )
        requester = step.requester.replace("\\", "/").rsplit("/", 1)[-1]
        yield (f"  {step.how:6} {step.wanted} ← {requester}: {where}\n")


# Windows loads that do not search the standard way (loader/windows.py)
_SEARCH = {
    "altered": "LOAD_WITH_ALTERED_SEARCH_PATH: its imports are searched from its folder, not python.exe's",
    "default-dirs": "LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR (a Python extension module): "
    "its imports are searched in its folder, python.exe's, os.add_dll_directory folders and System32, never PATH",
    "default-dirs-then-path": "torch's preload (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | "
    "LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR, then PATH)",
}


def _folder_key(path: str) -> str:
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[:cut].rstrip("/\\").casefold()
