"""Fixes: what `cudnn-doctor fix` would change to remove a finding, planned from the facts and the finding alone.

Each rule with `fix_kind` has a planner here (fixes/planners.py); the install layer applies the
changes as one transaction (journal, backups, lock, recovery), so `rollback` undoes a fix.
"""

from __future__ import annotations

from typing import Collection, Optional, Sequence

from cudnn_doctor.checks.registry import RULES
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding
from cudnn_doctor.fixes.changes import (
    Change,
    CopyFile,
    ExtractFile,
    InstalledRelease,
    ManagedExport,
    MoveFile,
    MoveTree,
    RunCommand,
    SetPersistentEnv,
    WriteFile,
)
from cudnn_doctor.fixes.planners import PLANNERS, WITH_HISTORY, why_no_fix
from cudnn_doctor.record import Record


class PlannedFix(Record):
    finding: Finding
    kind: str  # safe | unsafe
    changes: tuple[Change, ...]


class Skipped(Record):
    finding: Finding
    why: str


class FixPlan(Record):
    fixes: tuple[PlannedFix, ...]
    skipped: tuple[Skipped, ...]

    @property
    def changes(self) -> list[Change]:
        """Every change once, in the order planned (two findings about one file quarantine it once)."""
        seen: set[Change] = set()
        ordered: list[Change] = []
        for fix in self.fixes:
            for change in fix.changes:
                if change in seen:
                    continue
                seen.add(change)
                index = next((i for i, c in enumerate(ordered) if _same_variable(c, change)), None)
                if index is None:
                    ordered.append(change)
                else:  # two fixes of one PATH (duplicates, missing folders): one value without what either drops
                    ordered[index] = _both(ordered[index], change)
        return ordered


def _same_variable(a: Change, b: Change) -> bool:
    if isinstance(a, ManagedExport) and isinstance(b, ManagedExport):
        return (a.file, a.name) == (b.file, b.name)
    return (
        isinstance(a, SetPersistentEnv)
        and isinstance(b, SetPersistentEnv)
        and (a.scope, a.name.upper()) == (b.scope, b.name.upper())
    )


def _kept(old: list[str], new: list[str]) -> list[bool]:
    """Which entries of `old` a value made by dropping entries from it kept (the first match, as the planners keep the
    first copy)."""
    mask, position = [], 0
    for entry in old:
        keep = position < len(new) and new[position] == entry
        mask.append(keep)
        position += keep
    return mask


def _both(a: Change, b: Change) -> Change:
    """Two values of one PATH-like variable, each the same old value less some entries: the old value less both's."""
    if isinstance(a, ManagedExport) and isinstance(
        b, ManagedExport
    ):  # Linux: ':' and an empty entry is the current folder
        drop, repeats = tuple(dict.fromkeys(a.drop + b.drop)), a.repeats or b.repeats
        if a.old != b.old:
            return ManagedExport(b.file, b.name, b.value, b.old, drop, repeats)
        old = a.old.split(":")
        masks = zip(_kept(old, a.value.split(":")), _kept(old, b.value.split(":")))
        value = ":".join(entry for entry, (x, y) in zip(old, masks) if x and y)
        return ManagedExport(a.file, a.name, value, a.old, drop, repeats)
    assert isinstance(a, SetPersistentEnv) and isinstance(b, SetPersistentEnv)
    if a.old is None or a.old != b.old or a.value is None or b.value is None:
        return b
    old = a.old.split(";")
    masks = zip(_kept(old, a.value.split(";")), _kept(old, b.value.split(";")))
    value = ";".join(entry for entry, (x, y) in zip(old, masks) if x and y and entry.strip())
    return SetPersistentEnv(a.scope, a.name, value, a.old)


def plan_fix(finding: Finding, facts: Facts, releases: Optional[Sequence[InstalledRelease]] = None) -> list[Change]:
    """The changes that remove this finding; [] when its rule has no planner or this case is not one it handles.
    A fix that restores files from the install history gets `releases` (None: the history was not read, no fix)."""
    planner = PLANNERS.get(finding.id)
    if planner is None:
        return []
    if finding.id in WITH_HISTORY:
        return planner(finding, facts, releases) if releases is not None else []  # type: ignore[call-arg]
    return planner(finding, facts)


def automatic_fix(
    finding: Finding, facts: Facts, releases: Optional[Sequence[InstalledRelease]] = None
) -> Optional[str]:
    """ "safe" / "unsafe" when `fix` has changes for this very finding; None when its steps stay manual
    (its rule has no fix, or this case is not one the fix handles, e.g. a PATH fix off Windows)."""
    rule = RULES.get(finding.id)
    if rule is None or rule.fix_kind is None:
        return None
    return rule.fix_kind if plan_fix(finding, facts, releases) else None


def fix_line(finding: Finding, facts: Facts) -> Optional[str]:
    """The line a report prints under a finding `fix` repairs."""
    kind = automatic_fix(finding, facts)
    if kind is None:
        return None
    return f"fix: {kind} — `cudnn-doctor fix {finding.id}{' --unsafe-fixes' if kind == 'unsafe' else ''}`"


def plan_fixes(
    findings: Collection[Finding],
    facts: Facts,
    ids: Optional[Collection[str]] = None,
    unsafe: bool = False,
    releases: Optional[Sequence[InstalledRelease]] = None,
) -> FixPlan:
    """A fix for every finding that has one (or only those of `ids`); the others, with why they are left.
    `releases`: the installs the history records, for the fixes that copy files back from their archives."""
    fixes, skipped = [], []
    for found in findings:
        if ids and found.id not in ids:
            continue
        rule = RULES.get(found.id)
        kind = rule.fix_kind if rule is not None else None
        if kind is None:
            skipped.append(Skipped(found, "no automatic fix: follow its steps"))
            continue
        changes = plan_fix(found, facts, releases)
        if changes and kind == "unsafe" and not unsafe:
            skipped.append(Skipped(found, "an unsafe fix (it changes packages): pass --unsafe-fixes"))
            continue
        if not changes:
            why = why_no_fix(found, facts, releases)
            skipped.append(
                Skipped(
                    found, f"{why}: follow its steps" if why else "this case has no automatic fix: follow its steps"
                )
            )
            continue
        fixes.append(PlannedFix(found, kind, tuple(changes)))
    return FixPlan(tuple(fixes), tuple(skipped))


__all__ = [
    "Change",
    "CopyFile",
    "ExtractFile",
    "FixPlan",
    "InstalledRelease",
    "ManagedExport",
    "MoveFile",
    "MoveTree",
    "PlannedFix",
    "RunCommand",
    "SetPersistentEnv",
    "Skipped",
    "WriteFile",
    "automatic_fix",
    "fix_line",
    "plan_fix",
    "plan_fixes",
]
