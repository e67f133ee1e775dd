"""The environment an install needs: the toolkit's bin on the persistent PATH (Windows), the loader path (Linux).

All writes go through the System layer, so fixture machines show exactly what would change.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from cudnn_doctor.install.plan import EnvChange
from cudnn_doctor.paths import PathRules, expand_percent, prepend_ld_library_path
from cudnn_doctor.system.interface import System


def windows_changes(system: System, target: str, set_cudnn_home: bool) -> list[EnvChange]:
    """Make `<target>\\bin` reachable by new processes: add it to the user PATH unless some PATH already has it."""
    persistent = system.persistent_env() or {"user": {}, "system": {}}
    rules = system.paths
    user = {k.upper(): (k, v) for k, v in persistent.get("user", {}).items()}
    machine = {k.upper(): v for k, v in persistent.get("system", {}).items()}
    scope = {**{k.upper(): v for k, v in system.env().items()}, **machine, **{k: v for k, (_, v) in user.items()}}
    bin_dir = rules.join(target, "bin")
    entries = [
        e
        for e in rules.split_list(
            expand_percent(";".join(filter(None, (machine.get("PATH", ""), user.get("PATH", ("", ""))[1]))), scope)
        )
        if e
    ]
    changes = []
    if not any(rules.same(e, bin_dir) for e in entries):
        name, old = user.get("PATH", ("Path", None))
        new = f"{old.rstrip(';')};{bin_dir}" if old else bin_dir
        changes.append(EnvChange("user", name, old, new))
    if set_cudnn_home:
        name, old = user.get("CUDNN_HOME", ("CUDNN_HOME", None))
        if old is None or not rules.same(old, target):
            changes.append(EnvChange("user", name, old, target))
    return changes


def apply_windows_changes(system: System, changes: list[EnvChange]) -> None:
    """Write the changes outside a transaction (each keeps its registry type, see `registry_kind`), then tell
    Explorer."""
    for change in changes:
        system.set_persistent_env(change.scope, change.name, change.new)
    if changes:
        system.broadcast_environment_change()


def path_added(rules: PathRules, change: dict[str, Any]) -> list[str]:
    """The entries an install put in a PATH-like value: those of the new value that the old one did not have."""
    old = [e for e in rules.split_list(change.get("old") or "") if e]
    return [e for e in rules.split_list(change.get("new") or "") if e and not any(rules.same(e, o) for o in old)]


def describe(rules: PathRules, change: dict[str, Any]) -> str:
    """One environment change, as `history` shows it."""
    scope, name = change.get("scope"), change.get("name")
    fresh = change.get("existed") is False or (change.get("existed") is None and change.get("old") is None)
    if str(name).upper() == "PATH":
        said = f"{scope} {name}: added {', '.join(path_added(rules, change)) or '(nothing)'}"
    else:
        said = f"{scope} {name}: {change.get('old') if not fresh else '(unset)'} → {change.get('new')}"
    kind = change.get("kind")
    return said + (f" (a new {kind} value)" if fresh and kind else "")


def undo_environment(system: System, changes: Sequence[dict[str, Any]], failed: list[tuple[str, str]]) -> list[str]:
    """Undo the persistent-environment changes, newest first, then broadcast; sentences saying what.

    A value still exactly as the install wrote it gets its old value and type back (or is deleted,
    if it did not exist). A PATH changed since loses only the entries the install added; the
    user's own edits stay. Any other value changed since is left alone, and said so. A value
    already as before (an undo that was interrupted, run again) is left alone silently. A write
    that fails goes to `failed` (what, why), never raised: the files are undone all the same.
    """
    said: list[str] = []
    changed = False
    rules = system.paths
    for change in reversed(
        [c for c in changes if isinstance(c, dict) and {"scope", "name", "new"} <= set(c) and c.get("started", True)]
    ):
        scope = change["scope"]
        values = (system.persistent_env() or {}).get(scope) or {}
        name = next((k for k in values if k.upper() == change["name"].upper()), change["name"])
        current, old = values.get(name), change.get("old")
        existed = change.get("existed", old is not None)
        try:
            if current == change["new"]:
                system.set_persistent_env(
                    scope, name, old if existed else None, change.get("old_kind") if existed else None
                )
                said.append(f"{scope} {name} restored to {old if existed else '(unset)'}")
            elif current == (old if existed else None):
                continue
            elif current is not None and name.upper() == "PATH":
                added = path_added(rules, change)
                entries = current.split(";")
                kept = [e for e in entries if not any(e and rules.same(e, a) for a in added)]
                if len(kept) == len(entries):
                    continue
                left = ";".join(kept)
                system.set_persistent_env(scope, name, left if existed or left.strip(";") else None)
                said.append(f"{scope} {name}: removed {', '.join(added)}; the rest, changed since the install, is kept")
            else:
                said.append(f"{scope} {name} was changed since the install; left as it is")
                continue
            changed = True
        except OSError as error:
            failed.append((f"{scope} {name}", error.strerror or str(error)))
    if changed:
        try:
            system.broadcast_environment_change()
        except OSError:
            pass  # the registry is restored; new sign-ins see it
    return said


def linux_notes(system: System, lib_dir: str) -> tuple[list[str], Optional[list[str]]]:
    """(sentences for the user, the command to run) so the loader finds the new libraries."""
    cache_dirs = {system.paths.dirname(p) for p in _cache_paths(system)}
    if lib_dir in cache_dirs:
        if system.is_superuser():
            return [f"{lib_dir} is in the loader cache: running ldconfig to refresh it."], ["ldconfig"]
        return [f"{lib_dir} is in the loader cache; refresh it with: sudo ldconfig"], None
    return [
        f"{lib_dir} is not on the loader's path. Either add it for your shell: {prepend_ld_library_path([lib_dir])}",
        f"or for everyone: echo {lib_dir} | sudo tee /etc/ld.so.conf.d/cudnn.conf && sudo ldconfig",
    ], None


def _cache_paths(system: System) -> list[str]:
    from cudnn_doctor.loader.index import FolderIndex

    return list(FolderIndex(system).cache.values())
