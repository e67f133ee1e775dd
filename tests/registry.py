"""HKCU\\Environment for the tests that run Windows code for real (the Wine lane): read it, and put it back.

A live `install` on Windows writes the user's Path (and CUDNN_HOME) there; every test leaves the
key exactly as it found it, values and registry types, whatever the test did or where it failed.
"""

from __future__ import annotations

import sys
from typing import Any

KEY = "Environment"


def user_environment() -> dict[str, tuple[Any, int]]:
    """Every value of HKCU\\Environment: {name: (data, registry type)}; {} off Windows."""
    if sys.platform != "win32":
        return {}
    import winreg

    values: dict[str, tuple[Any, int]] = {}
    with winreg.OpenKey(winreg.HKEY_CURRENT_USER, KEY) as key:
        index = 0
        while True:
            try:
                name, data, kind = winreg.EnumValue(key, index)
            except OSError:
                return values
            values[name] = (data, kind)
            index += 1


def restore_user_environment(saved: dict[str, tuple[Any, int]]) -> None:
    """Make HKCU\\Environment equal to `saved` again, writing only what differs."""
    if sys.platform != "win32":
        return
    import winreg

    now = user_environment()
    if now == saved:
        return
    with winreg.OpenKey(winreg.HKEY_CURRENT_USER, KEY, 0, winreg.KEY_READ | winreg.KEY_SET_VALUE) as key:
        for name in now:
            if name not in saved:
                winreg.DeleteValue(key, name)
        for name, (data, kind) in saved.items():
            if now.get(name) != (data, kind):
                winreg.SetValueEx(key, name, 0, kind, data)
