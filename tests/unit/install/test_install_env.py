"""The persistent (registry) environment an install changes on Windows: its types, and undoing it.

Run on any host through the fixture machine, which keeps each value's registry type as the live
one does: a new user Path is REG_EXPAND_SZ, an existing value keeps its type, and every change
is journaled (existed, old value, old type) before it is made, so rollback and the recovery of a
killed install or rollback put back exactly that.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Optional

import pytest

from cudnn_doctor.errors import CudnnDoctorError
from cudnn_doctor.install import transaction
from cudnn_doctor.install.plan import EnvChange
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.interface import REG_EXPAND_SZ, REG_SZ, registry_kind
from tests import archives
from tests.registry import user_environment
from tests.unit.install.test_install_faults import (
    STATE,
    TARGET,
    Faulty,
    archive_path,
    cli,
    install,
    installed_entries,
    rollback,
    tree,
    windows_machine,
)

__all__ = ["archive_path"]  # the module-scoped fixture, shared

BIN = f"{TARGET}\\bin"
WINDOWS_APPS = "%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps"


def registry(system: FixtureSystem) -> dict[str, Any]:
    """Every persistent value with its type: what a rollback must give back exactly."""
    persistent = system.persistent_env() or {}
    return {
        (scope, name): (value, system.persistent_env_kind(scope, name))
        for scope, values in persistent.items()
        for name, value in values.items()
    }


def prepared(user: dict[str, tuple[str, str]]) -> FixtureSystem:
    """The Windows machine with these user values (name: (value, registry type)) and nothing recorded yet."""
    system = windows_machine()
    system.document["persistent_env"] = {"user": {}, "system": {"Path": "%SystemRoot%\\system32;%SystemRoot%"}}
    for name, (value, kind) in user.items():
        system.set_persistent_env("user", name, value, kind)
    system.env_writes.clear()
    return system


def changes(system: FixtureSystem, cudnn_home: bool = True) -> tuple[EnvChange, ...]:
    from cudnn_doctor.install.environment import windows_changes

    return tuple(windows_changes(system, TARGET, cudnn_home))


def test_registry_kind_keeps_an_existing_type_and_makes_a_new_path_expandable():
    assert registry_kind("Path", "C:\\x", None) == REG_EXPAND_SZ
    assert registry_kind("PATH", "C:\\x", REG_SZ) == REG_SZ  # an existing value keeps its own type
    assert registry_kind("Path", "%X%\\bin", REG_SZ) == REG_SZ  # even with a %VAR% in it: not promoted
    assert registry_kind("CUDNN_HOME", "C:\\x", None) == REG_SZ
    assert registry_kind("CUDNN_HOME", "%CUDA_PATH%", None) == REG_EXPAND_SZ
    assert registry_kind("CUDNN_HOME", "C:\\x", REG_EXPAND_SZ) == REG_EXPAND_SZ


def test_a_new_user_path_is_reg_expand_sz_and_cudnn_home_reg_sz(monkeypatch, archive_path):
    system = prepared({})
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes", "--set-cudnn-home") in (0, 1)
    assert system.persistent_env()["user"] == {"Path": BIN, "CUDNN_HOME": TARGET}
    assert system.persistent_env_kind("user", "Path") == REG_EXPAND_SZ
    assert system.persistent_env_kind("user", "CUDNN_HOME") == REG_SZ


@pytest.mark.parametrize("kind", [REG_SZ, REG_EXPAND_SZ])
def test_an_existing_path_keeps_its_type_and_its_unexpanded_variables(monkeypatch, archive_path, kind):
    system = prepared({"Path": (WINDOWS_APPS, kind)})
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes") in (0, 1)
    assert system.persistent_env()["user"]["Path"] == f"{WINDOWS_APPS};{BIN}"
    assert system.persistent_env_kind("user", "Path") == kind


def test_rollback_deletes_what_did_not_exist_and_broadcasts(monkeypatch, capsys, archive_path):
    system = prepared({})
    before = registry(system)
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes", "--set-cudnn-home") in (0, 1)
    assert system.env_writes[-1] == ("broadcast", "WM_SETTINGCHANGE", "Environment")
    system.env_writes.clear()
    assert cli(monkeypatch, system, "rollback") == 0
    assert registry(system) == before and "Path" not in system.persistent_env()["user"]
    assert system.env_writes == [
        ("user", "CUDNN_HOME", None),
        ("user", "Path", None),
        ("broadcast", "WM_SETTINGCHANGE", "Environment"),
    ]
    out = capsys.readouterr().out
    assert "user Path restored to (unset)" in out and "user CUDNN_HOME restored to (unset)" in out


def test_rollback_restores_old_values_and_their_types(monkeypatch, archive_path):
    system = prepared({"Path": (WINDOWS_APPS, REG_SZ), "CUDNN_HOME": ("%OLD_CUDA%", REG_EXPAND_SZ)})
    before = registry(system)
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes", "--set-cudnn-home") in (0, 1)
    assert system.persistent_env()["user"]["CUDNN_HOME"] == TARGET
    assert system.persistent_env_kind("user", "CUDNN_HOME") == REG_EXPAND_SZ  # an existing value keeps its type
    system.set_persistent_env("user", "CUDNN_HOME", TARGET, REG_SZ)  # the same value, another type: ours still
    assert cli(monkeypatch, system, "rollback") == 0
    assert registry(system) == before


def test_a_path_the_user_edited_since_loses_only_our_entry(monkeypatch, capsys, archive_path):
    """The rule: a Path changed since the install keeps every entry but those the install added; its type stays."""
    system = prepared({})
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes", "--set-cudnn-home") in (0, 1)
    system.set_persistent_env("user", "Path", f"C:\\Tools;{BIN};%USERPROFILE%\\go\\bin")
    system.set_persistent_env("user", "CUDNN_HOME", "D:\\cudnn")  # the user's own value now: not ours to remove
    assert cli(monkeypatch, system, "rollback") == 0
    assert system.persistent_env()["user"] == {"Path": "C:\\Tools;%USERPROFILE%\\go\\bin", "CUDNN_HOME": "D:\\cudnn"}
    assert system.persistent_env_kind("user", "Path") == REG_EXPAND_SZ
    out = capsys.readouterr().out
    assert f"removed {BIN}" in out and "CUDNN_HOME was changed since the install; left as it is" in out


def test_an_entry_that_was_there_before_is_not_ours_to_remove(monkeypatch, archive_path):
    system = prepared({"Path": (WINDOWS_APPS, REG_EXPAND_SZ)})
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes") in (0, 1)
    system.set_persistent_env("user", "Path", f"{BIN};{WINDOWS_APPS};{BIN}")  # the user moved it to the front too
    assert cli(monkeypatch, system, "rollback") == 0
    assert system.persistent_env()["user"]["Path"] == WINDOWS_APPS


def test_history_shows_the_environment_changes(monkeypatch, capsys, archive_path):
    system = prepared({"Path": (WINDOWS_APPS, REG_SZ)})
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes", "--set-cudnn-home") in (0, 1)
    capsys.readouterr()
    assert cli(monkeypatch, system, "history") == 0
    out = capsys.readouterr().out
    assert f"env user Path: added {BIN}\n" in out
    assert f"env user CUDNN_HOME: (unset) → {TARGET} (a new REG_SZ value)" in out


def test_the_journal_holds_the_old_value_and_type_before_the_registry_is_written(archive_path):
    system = prepared({"Path": (WINDOWS_APPS, REG_SZ)})
    seen = []

    def write(scope: str, name: str, value: Optional[str], kind: Optional[str] = None) -> None:
        data = system.open_read(f"{STATE}\\journal.jsonl").read().decode()
        seen.append([e for e in map(json.loads, data.splitlines()) if isinstance(e.get("env"), int)])
        raise OSError(5, "injected")

    system.set_persistent_env = write  # type: ignore[method-assign]
    with pytest.raises(CudnnDoctorError):
        install(system, archive_path, changes(system))
    assert seen[0] == [
        {
            "env": 0,
            "started": True,
            "name": "Path",
            "existed": True,
            "old": WINDOWS_APPS,
            "old_kind": REG_SZ,
            "kind": REG_SZ,
        }
    ]


def test_nothing_outside_the_target_and_the_state_folder_is_written(archive_path):
    system = prepared({"Path": (WINDOWS_APPS, REG_EXPAND_SZ)})

    def outside(system: FixtureSystem) -> dict[str, Any]:
        """Everything but the target, the state folder and the folders that lead to the state folder."""
        return {
            p: v
            for p, v in tree(system, "C:\\").items()
            if not p.startswith((TARGET.lower(), STATE.lower())) and not STATE.lower().startswith(p)
        }

    others = outside(system)
    install(system, archive_path, changes(system))
    assert outside(system) == others
    assert [(scope, name) for scope, name, _ in system.env_writes] == [
        ("user", "Path"),
        ("user", "CUDNN_HOME"),
        ("broadcast", "WM_SETTINGCHANGE"),
    ]
    assert system.persistent_env()["system"] == {"Path": "%SystemRoot%\\system32;%SystemRoot%"}


class RegistryFaulty(Faulty):
    """Faulty, where writing a registry value and the broadcast are fault points too."""

    def __getattr__(self, name: str) -> Any:
        if name not in ("set_persistent_env", "broadcast_environment_change"):
            return super().__getattr__(name)
        value = getattr(self.inner, name)

        def operation(*args: Any) -> Any:
            self._tick(str(args[0]) if args else name)
            return value(*args)

        return operation


START = {"Path": (WINDOWS_APPS, REG_SZ), "CUDNN_HOME": ("C:\\old-cudnn", REG_SZ)}


@pytest.mark.parametrize("crash", [False, True], ids=["fails-once", "killed"])
def test_a_fault_anywhere_in_an_install_with_environment_changes_recovers_the_registry(archive_path, crash):
    """Killed between any two steps, registry writes included: recovery leaves files and registry both as before or both installed."""
    clean = prepared(START)
    before = (tree(clean, TARGET), registry(clean))
    done = prepared(START)
    install(done, archive_path, changes(done))
    installed = (tree(done, TARGET), registry(done))
    counter = RegistryFaulty(prepared(START))
    install(counter, archive_path, changes(counter.inner))
    points = [
        p for p in range(counter.count) if p >= counter.count - 20
    ]  # the tail: the registry writes, the history, the commit
    seen = set()
    for point in points:
        system = prepared(START)
        with pytest.raises(CudnnDoctorError):
            install(RegistryFaulty(system, point, crash), archive_path, changes(system))
        store = transaction.Store(system, STATE)
        with store.locked():
            transaction.recover(store)
        now = (tree(system, TARGET), registry(system))
        assert now in (before, installed), f"fault point {point}: {now[1]}"
        seen.add("before" if now == before else "installed")
        if installed_entries(system):
            rollback(system)
        assert (tree(system, TARGET), registry(system)) == before, f"fault point {point}"
    assert "before" in seen


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
@pytest.mark.parametrize("crash", [False, True], ids=["fails-once", "killed"])
def test_an_interrupted_rollback_finishes_restoring_the_registry(archive_path, crash):
    clean = prepared(START)
    before = (tree(clean, TARGET), registry(clean))
    counter = RegistryFaulty(prepared(START))
    install(counter.inner, archive_path, changes(counter.inner))
    rollback(counter)
    for point in range(counter.count):
        system = prepared(START)
        install(system, archive_path, changes(system))
        try:
            rollback(RegistryFaulty(system, point, crash))
        except CudnnDoctorError:
            pass
        if installed_entries(system):
            rollback(system)  # the next, healthy, rollback
        assert (tree(system, TARGET), registry(system)) == before, f"fault point {point}"


class FakeWinreg:
    """The few winreg calls the live machine makes, over a dict: the live registry code, run on any host."""

    HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE = "HKCU", "HKLM"
    REG_SZ, REG_EXPAND_SZ, KEY_READ, KEY_SET_VALUE = 1, 2, 0x20019, 0x0002

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str], dict[str, tuple[str, int]]] = {}

    class _Key:
        def __init__(self, values: dict[str, tuple[str, int]]) -> None:
            self.values = values

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: Any) -> None:
            pass

    def OpenKey(self, hive: str, subkey: str, *rest: Any) -> Any:
        return self._Key(self.keys.setdefault((hive, subkey), {}))

    def QueryValueEx(self, key: Any, name: str) -> tuple[str, int]:
        if name not in key.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return key.values[name]

    def SetValueEx(self, key: Any, name: str, reserved: int, kind: int, value: str) -> None:
        key.values[name] = (value, kind)

    def DeleteValue(self, key: Any, name: str) -> None:
        if key.values.pop(name, None) is None:
            raise FileNotFoundError(2, "The system cannot find the file specified")

    def EnumValue(self, key: Any, index: int) -> tuple[str, str, int]:
        items = list(key.values.items())
        if index >= len(items):
            raise OSError(259, "No more data is available")
        name, (value, kind) = items[index]
        return name, value, kind


@pytest.mark.live
def test_the_live_registry_writes_a_new_path_as_reg_expand_sz_and_keeps_an_existing_type(monkeypatch):
    import sys

    from cudnn_doctor.system.live import LiveSystem

    system = LiveSystem()  # first: on Windows `platform.machine()` reads the real registry through winreg
    system.os = "windows"
    fake = FakeWinreg()
    monkeypatch.setitem(sys.modules, "winreg", fake)
    user = fake.keys.setdefault(("HKCU", "Environment"), {})
    system.set_persistent_env("user", "Path", BIN)
    system.set_persistent_env("user", "CUDNN_HOME", TARGET)
    assert user == {"Path": (BIN, fake.REG_EXPAND_SZ), "CUDNN_HOME": (TARGET, fake.REG_SZ)}
    assert (
        system.persistent_env_kind("user", "Path") == REG_EXPAND_SZ
        and system.persistent_env_kind("user", "Nope") is None
    )
    user["Path"] = (WINDOWS_APPS, fake.REG_SZ)  # a literal REG_SZ Path holding a %VAR%: not promoted
    system.set_persistent_env("user", "Path", f"{WINDOWS_APPS};{BIN}")
    assert user["Path"] == (f"{WINDOWS_APPS};{BIN}", fake.REG_SZ)
    system.set_persistent_env("user", "Path", WINDOWS_APPS, REG_EXPAND_SZ)  # an undo gives the old type back
    assert user["Path"] == (WINDOWS_APPS, fake.REG_EXPAND_SZ)
    system.set_persistent_env("user", "CUDNN_HOME", None)
    assert system.persistent_env()["user"] == {"Path": WINDOWS_APPS}


# The real registry: only in the Wine lane's throwaway prefix (conftest puts HKCU\Environment back after each test).
wine_registry = pytest.mark.skipif(
    sys.platform != "win32" or not os.environ.get("CUDNN_DOCTOR_WINE_LANE"),
    reason="writes the real HKCU\\Environment: only in the Wine lane",
)


def _set_user_values(values: dict[str, Optional[tuple[str, int]]]) -> None:
    """Write (or, for None, delete) HKCU\\Environment values with their registry types."""
    import winreg

    with winreg.OpenKey(winreg.HKEY_CURRENT_USER, "Environment", 0, winreg.KEY_READ | winreg.KEY_SET_VALUE) as key:
        for name, value in values.items():
            if value is None:
                try:
                    winreg.DeleteValue(key, name)
                except FileNotFoundError:
                    pass
            else:
                winreg.SetValueEx(key, name, 0, value[1], value[0])


@pytest.mark.live
@wine_registry
@pytest.mark.parametrize("before", ["unset", "REG_SZ", "REG_EXPAND_SZ"])
def test_a_live_install_writes_hkcu_environment_and_rollback_restores_it(tmp_path, monkeypatch, capsys, before):
    """`install --yes --set-cudnn-home` with the live system, then `rollback`: Path and CUDNN_HOME read back with winreg."""
    import winreg

    from cudnn_doctor.cli import main

    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path / "state"))
    kind = {"unset": None, "REG_SZ": winreg.REG_SZ, "REG_EXPAND_SZ": winreg.REG_EXPAND_SZ}[before]
    old_path = (WINDOWS_APPS, kind) if kind is not None else None
    old_home = ("C:\\old\\cudnn", kind) if kind is not None else None
    _set_user_values({"Path": old_path, "CUDNN_HOME": old_home})
    target = archives.toolkit(tmp_path / "cuda-12.6")
    started = time.monotonic()
    assert main(
        ["install", str(archives.native_archive(tmp_path)), "--into", str(target), "--yes", "--set-cudnn-home"]
    ) in (0, 1)
    elapsed = time.monotonic() - started
    values = user_environment()
    bin_dir = f"{target}\\bin"
    if old_path is None:
        assert values["Path"] == (bin_dir, winreg.REG_EXPAND_SZ)  # as Windows' own Path
    else:
        assert values["Path"] == (
            f"{WINDOWS_APPS};{bin_dir}",
            kind,
        )  # an existing value keeps its type, %VAR% unexpanded
    assert values["CUDNN_HOME"] == (str(target), kind if kind is not None else winreg.REG_SZ)
    assert elapsed < 60, elapsed  # the WM_SETTINGCHANGE broadcast returned (SendMessageTimeout, 5 s at most)
    capsys.readouterr()
    assert main(["rollback"]) == 0
    after = user_environment()
    assert after.get("Path") == old_path and after.get("CUDNN_HOME") == old_home  # deleted when they did not exist
    assert (
        " file(s) removed." in capsys.readouterr().out
    )  # the files the install added (issue 31: removed, not "restored")


@pytest.mark.live
@pytest.mark.skipif(sys.platform != "win32", reason="the real user32 broadcast")
def test_the_environment_broadcast_returns_promptly():
    """SendMessageTimeoutW with SMTO_ABORTIFHUNG and 5 s: a hung top-level window (or Wine's desktop) cannot block the install."""
    from cudnn_doctor.system.live import LiveSystem

    started = time.monotonic()
    LiveSystem().broadcast_environment_change()
    assert time.monotonic() - started < 15
