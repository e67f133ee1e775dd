"""Interpreters laid out as python.org's embeddable CPython is: a `._pth` file beside the program fixes sys.path.

ComfyUI's portable build and many Stable Diffusion bundles ship exactly this (`python_embeded\\python.exe`
with `python3XX._pth`). Such an interpreter ignores PYTHONPATH, so tests that hand a child stand-in
frameworks must name their folder where the interpreter itself looks: in its `._pth` file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

import pytest


def stdlib_entries() -> list[str]:
    """The running interpreter's sys.path without its site folders: enough to start, nothing installed."""
    return [p for p in sys.path if p and not p.rstrip("\\/").endswith(("site-packages", "dist-packages"))]


def pth_interpreter(
    folder: Path, named: Sequence[Path], import_site: bool = False, stdlib: Optional[Sequence[str]] = None
) -> Path:
    """A copy of the running interpreter in `folder` whose `._pth` names `named` (first), then the standard
    library; skips the test where the copy does not honour it (POSIX before 3.11, or a copy that cannot start)."""
    folder.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":
        import _winapi

        library = Path(_winapi.GetModuleFileName(sys.dllhandle))  # type: ignore[attr-defined]
        executable = folder / "python.exe"
        _link_or_copy(Path(sys.executable), executable)
        _link_or_copy(library, folder / library.name)
        for runtime in Path(sys.executable).parent.glob("vcruntime*.dll"):
            _link_or_copy(runtime, folder / runtime.name)
        pth = folder / f"{library.stem}._pth"
    else:
        executable = folder / "python"
        _link_or_copy(Path(os.path.realpath(sys.executable)), executable)
        pth = folder / "python._pth"
    lines = [str(p) for p in named] + list(stdlib_entries() if stdlib is None else stdlib)
    pth.write_text("\n".join(lines + (["import site"] if import_site else [])) + "\n", encoding="utf-8")
    seen = _sys_path(executable)
    if seen is None or [os.path.normcase(p) for p in seen[: len(lines)]] != [
        os.path.normcase(os.path.abspath(p)) for p in lines
    ]:
        pytest.skip(
            f"a copy of this interpreter does not take its sys.path from a ._pth file (Python {sys.version.split()[0]}, {sys.platform})"
        )
    return executable


def _sys_path(executable: Path) -> Optional[list[str]]:
    try:
        done = subprocess.run(
            [str(executable), "-c", "import json, sys; print(json.dumps(sys.path))"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link where the file system allows one (cheap, and still a program of its own name), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
