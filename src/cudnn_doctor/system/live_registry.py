"""The live system's persistent environment: the Windows registry's user and system Environment keys, read and
written with their value types kept, and the WM_SETTINGCHANGE broadcast."""

from __future__ import annotations

import sys
from typing import Any, Optional

from cudnn_doctor.system.interface import (
    REG_EXPAND_SZ,
    System,
    registry_kind,
)

_KIND_NAMES = {1: "REG_SZ", 2: "REG_EXPAND_SZ"}  # winreg.REG_SZ, winreg.REG_EXPAND_SZ (winreg exists only on Windows)

_REGISTRY_KEYS = {
    "user": ("HKEY_CURRENT_USER", r"Environment"),
    "system": ("HKEY_LOCAL_MACHINE", r"SYSTEM\CurrentControlSet\Control\Session Manager\Environment"),
}


class LiveRegistry(System):
    """Mixed into LiveSystem, which sets these in its __init__."""

    def persistent_env(self) -> Optional[dict[str, dict[str, str]]]:
        if self.os != "windows":
            return None
        winreg = _winreg()

        result: dict[str, dict[str, str]] = {}
        for scope, (hive, subkey) in _REGISTRY_KEYS.items():
            values: dict[str, str] = {}
            try:
                with winreg.OpenKey(getattr(winreg, hive), subkey) as key:
                    index = 0
                    while True:
                        try:
                            name, value, _kind = winreg.EnumValue(key, index)
                        except OSError:
                            break
                        if isinstance(value, str):
                            values[name] = value
                        index += 1
            except OSError:
                pass
            result[scope] = values
        return result

    def persistent_env_kind(self, scope: str, name: str) -> Optional[str]:
        if self.os != "windows":
            return None
        winreg = _winreg()

        hive, subkey = _REGISTRY_KEYS[scope]
        try:
            with winreg.OpenKey(getattr(winreg, hive), subkey) as key:
                _, kind = winreg.QueryValueEx(key, name)
        except OSError:
            return None
        return _KIND_NAMES.get(kind, str(kind))

    def set_persistent_env(self, scope: str, name: str, value: Optional[str], kind: Optional[str] = None) -> None:
        if self.os != "windows":
            raise NotImplementedError("the persistent environment is a Windows registry feature")
        winreg = _winreg()

        hive, subkey = _REGISTRY_KEYS[scope]
        with winreg.OpenKey(getattr(winreg, hive), subkey, 0, winreg.KEY_READ | winreg.KEY_SET_VALUE) as key:
            if value is None:
                try:
                    winreg.DeleteValue(key, name)
                except FileNotFoundError:
                    pass
                return
            if kind is None:
                try:
                    _, existing = winreg.QueryValueEx(key, name)
                except OSError:
                    existing = None
                kind = registry_kind(name, value, _KIND_NAMES.get(existing) if existing is not None else None)
            winreg.SetValueEx(key, name, 0, winreg.REG_EXPAND_SZ if kind == REG_EXPAND_SZ else winreg.REG_SZ, value)

    def broadcast_environment_change(self) -> None:
        if (
            self.os != "windows" or sys.platform != "win32"
        ):  # one question; mypy reads the second (its Windows-only ctypes)
            return
        import ctypes

        result = ctypes.c_size_t()
        HWND_BROADCAST, WM_SETTINGCHANGE, SMTO_ABORTIFHUNG = 0xFFFF, 0x001A, 0x0002
        ctypes.windll.user32.SendMessageTimeoutW(
            HWND_BROADCAST, WM_SETTINGCHANGE, 0, "Environment", SMTO_ABORTIFHUNG, 5000, ctypes.byref(result)
        )


def _winreg() -> Any:
    """The winreg module (Windows only; the tests' stand-in on other hosts). Any: mypy checks the code as Linux's
    (pyproject.toml), whose winreg stubs have none of these names."""
    import winreg

    return winreg
