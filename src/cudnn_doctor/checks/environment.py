"""Environment: stale terminals, PATH entries that lead nowhere or repeat, variables nothing reads."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.checks._libraries import STALE_SESSION
from cudnn_doctor.checks.evidence import MissingFolders, RepeatedEntries, UnreadVariable
from cudnn_doctor.checks.rules import (
    CUDA_VISIBLE_DEVICES_HIDES_GPUS,
    ENV_STALE_SESSION,
    ENV_VAR_INEFFECTIVE,
    PATH_DUPLICATE_ENTRIES,
    PATH_MISSING_DIR,
)
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.lazyre import regex
from cudnn_doctor.paths import PathRules

GPU_RELATED = regex(r"cuda|cudnn|nvidia|tensorrt|nvvm|cupti", re.IGNORECASE)
VARIABLE_PREFIXES = ("CUDA_", "CUDNN_", "NVIDIA_", "TF_CUDNN")
LOADABLE_FOLDERS = {"bin", "lib", "lib64", "x64", "stubs"}


@ENV_STALE_SESSION.checks
def env_stale_session(facts: Facts) -> Iterator[Finding]:
    """Windows gives each process a copy of the registry environment at its start; a PATH edited later reaches only new
    processes."""
    env = facts.environment
    if facts.os != "windows" or env.persistent is None:
        return
    rules = PathRules("windows")
    process = {rules.key(e.value) for e in env.path if e.value}
    missing = [p for p in env.persistent_path if GPU_RELATED.search(p) and rules.key(p) not in process]
    changed = []
    for scope in ("user", "system"):
        for name, value in (env.persistent.get(scope) or {}).items():
            if name.upper().startswith("CUDA_PATH") or name.upper() in ("CUDA_HOME", "CUDNN_PATH"):
                now = env.variables.get(name)
                if now is None or not rules.same(now, value):
                    changed.append((name, value, now))
    if not missing and not changed:
        return
    parts = []
    if missing:
        parts.append(f"The registry PATH has {', '.join(missing)}, which this process's PATH lacks.")
    for name, value, now in changed:
        parts.append(f"{name} is {value} in the registry but {'not set' if now is None else now} here.")
    yield ENV_STALE_SESSION.finding(
        " ".join(parts) + " The terminal or IDE running Python was started before the change.",
        [
            "Close and reopen the terminal; restart the IDE (PyCharm, VS Code) or Jupyter completely, since they "
            "pass their own old environment on.",
            "If it persists, sign out of Windows and back in.",
        ],
        {"missing_from_process_path": missing, "changed": [c[0] for c in changed]},
        causes=(STALE_SESSION,),
    )


@PATH_MISSING_DIR.checks
def path_missing_dir(facts: Facts) -> Iterator[Finding]:
    """An entry left behind by an uninstalled or moved toolkit hides typos and makes the real search order hard to
    read."""
    entries = [
        e
        for e in (*facts.environment.path, *facts.environment.ld_library_path)
        if e.value and not e.exists and GPU_RELATED.search(e.value)
    ]
    if not entries:
        return
    listing = "; ".join(f"{e.variable}[{e.index}] = {e.value}" for e in entries)
    rules = PathRules(facts.os)
    # a missing bin/lib folder is where a loader or shell was told to look; others (libnvvp, docs) are clutter
    matters = any(rules.basename(e.value).lower() in LOADABLE_FOLDERS or "cudnn" in e.value.lower() for e in entries)
    yield PATH_MISSING_DIR.finding(
        f"These entries name folders that do not exist: {listing}.",
        [f"Remove {e.value} from {e.variable}, or install what it should point to." for e in entries],
        MissingFolders(entries=tuple(e.value for e in entries)),
        severity=Severity.WARNING if matters else Severity.INFO,
    )


@PATH_DUPLICATE_ENTRIES.checks
def path_duplicate_entries(facts: Facts) -> Iterator[Finding]:
    """Harmless for loading, but it makes PATH longer and its order harder to reason about."""
    rules = PathRules(facts.os)
    for entries in (facts.environment.path, facts.environment.ld_library_path):
        seen: dict[str, int] = {}
        dupes = []
        for entry in entries:
            if not entry.value:
                continue
            key = rules.key(entry.value)
            if key in seen:
                dupes.append((entry, seen[key]))
            else:
                seen[key] = entry.index
        if dupes:
            variable = dupes[0][0].variable
            yield PATH_DUPLICATE_ENTRIES.finding(
                f"{variable} repeats: "
                + "; ".join(f"{e.value} (#{e.index + 1}, first at #{first + 1})" for e, first in dupes)
                + ".",
                [f"Remove the later copies from {variable}."],
                RepeatedEntries(variable=variable, entries=tuple(e.value for e, _ in dupes)),
            )


@ENV_VAR_INEFFECTIVE.checks
def env_var_ineffective(facts: Facts) -> Iterator[Finding]:
    """CUDA, cuDNN and the frameworks ignore misspelled or invented variables without a word."""
    table = knowledge.ineffective_variables()
    known = knowledge.known_variables()
    for name, value in sorted(facts.environment.variables.items()):
        upper = name.upper()
        row = table.get(upper)
        if row is not None:
            yield ENV_VAR_INEFFECTIVE.finding(
                f"{name}={value} is set, but no CUDA, cuDNN or framework component reads {name}.",
                [f"Unset {name}; use {row.instead}."],
                UnreadVariable(variable=name, source=row.source),
            )
            continue
        if not upper.startswith(VARIABLE_PREFIXES) or upper in known or upper.startswith("CUDA_PATH_V"):
            continue
        import difflib  # only for an unknown variable

        close = difflib.get_close_matches(upper, sorted(known), n=1, cutoff=0.85)
        prefix = [k for k in sorted(known) if k.startswith(upper) and k != upper]
        suggestion = close[0] if close else prefix[0] if prefix else None
        if suggestion:
            yield ENV_VAR_INEFFECTIVE.finding(
                f"{name}={value} is set, but nothing reads {name}; it looks like a misspelling of {suggestion}.",
                [f"Rename it: unset {name} and set {suggestion}={value}."],
                UnreadVariable(variable=name, suggestion=suggestion),
            )


def _visible_indices(value: str) -> Optional[list[str]]:
    """The entries CUDA takes from CUDA_VISIBLE_DEVICES: up to the first it cannot read; None when UUIDs are used."""
    taken = []
    for token in value.split(","):
        token = token.strip()
        if token.upper().startswith(("GPU-", "MIG-")):
            return None  # UUIDs: which GPU they name is not in the facts
        if not token.isdigit():
            break
        taken.append(token)
    return taken


@CUDA_VISIBLE_DEVICES_HIDES_GPUS.checks
def cuda_visible_devices_hides_gpus(facts: Facts) -> Iterator[Finding]:
    """CUDA shows a process only the devices CUDA_VISIBLE_DEVICES lists; an empty value, -1, or indices past the last
    GPU hide them all."""
    value = facts.environment.variables.get("CUDA_VISIBLE_DEVICES")
    gpus = len(facts.driver.gpus)
    if value is None or not gpus:
        return
    taken = _visible_indices(value)
    if taken is None or any(int(index) < gpus for index in taken):
        return
    reason = (
        "names no device CUDA can read"
        if not taken
        else f"names only {', '.join(taken)}, and the GPUs are numbered 0 to {gpus - 1}"
    )
    unset = "set CUDA_VISIBLE_DEVICES=" if facts.os == "windows" else "unset CUDA_VISIBLE_DEVICES"
    yield CUDA_VISIBLE_DEVICES_HIDES_GPUS.finding(
        f"CUDA_VISIBLE_DEVICES={value!r} {reason}: every CUDA program started from this environment sees no GPU.",
        [
            f"`{unset}` (or list the GPUs to use, e.g. CUDA_VISIBLE_DEVICES=0), then start the program again; "
            "look for where it is set: the shell profile, the IDE's run configuration, the job script or the "
            "container's environment."
        ],
        {
            "variable": "CUDA_VISIBLE_DEVICES",
            "value": value,
            "gpus": gpus,
            "source": "https://docs.nvidia.com/deploy/topics/topic_5_2_1.html",
        },
    )
