"""One pure planner per rule with an automatic fix: (finding, facts) → the changes that remove it.

Planners read the finding's evidence and the facts only, never the machine (those of WITH_HISTORY
also the install history, which the install layer reads and hands over as `InstalledRelease` values);
an empty list means this finding's case is not one the fix handles safely (its manual steps stay).
"""

from __future__ import annotations

import shlex
from typing import Callable, Collection, Iterable, Optional, Sequence, TypeVar

from cudnn_doctor.checks.evidence import (
    CpuBuild,
    MissingFolders,
    MissingHeaders,
    MissingImportLibraries,
    NestedCopy,
    RepeatedEntries,
    ShadowedCopies,
    SystemFolderCopy,
    UnreadVariable,
)
from cudnn_doctor.checks.registry import Rule
from cudnn_doctor.checks.rules import (
    CUDA_LIBS_NOT_FOUND,
    CUDNN_HEADER_MISSING,
    CUDNN_IMPORT_LIB_MISSING,
    CUDNN_IN_SYSTEM_DIR,
    CUDNN_MISSING,
    CUDNN_NESTED_LAYOUT,
    CUDNN_SHADOWED,
    DEPENDENCY_MISSING,
    ENV_VAR_INEFFECTIVE,
    PATH_DUPLICATE_ENTRIES,
    PATH_MISSING_DIR,
    TORCH_CPU_BUILD,
)
from cudnn_doctor.facts import DISTRIBUTION_METADATA, CudnnInstall, Facts, PathEntry
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.fixes.changes import (
    Change,
    ExtractFile,
    InstalledRelease,
    ManagedExport,
    MoveFile,
    MoveTree,
    RunCommand,
    SetPersistentEnv,
)
from cudnn_doctor.lazyre import regex
from cudnn_doctor.paths import PathRules, expand_percent, managed_env_file
from cudnn_doctor.versions import parse_version

Planner = Callable[[Finding, Facts], list[Change]]
Seen = TypeVar("Seen")
PLANNERS: dict[str, Planner] = {}


def planner(rule: Rule) -> Callable[[Planner], Planner]:
    """Decorator: `function` plans the fix of `rule`'s findings."""

    def add(function: Planner) -> Planner:
        PLANNERS[rule.id] = function
        return function

    return add


def evidence_of(finding: Finding, kind: type[Seen]) -> Optional[Seen]:
    """The finding's typed evidence, or None for one made without it (a finding read back from elsewhere has none)."""
    return finding.evidence if isinstance(finding.evidence, kind) else None


def _managed(facts: Facts, install: CudnnInstall) -> bool:
    """A copy a package manager (apt, pip, conda) owns: removing it is that manager's job, not a quarantine's."""
    parts = {p.lower() for p in install.folder.replace("\\", "/").split("/")}
    return (
        install.package is not None
        or install.version_source in DISTRIBUTION_METADATA
        or bool(parts & {"site-packages", "dist-packages"})
    )


def _release_files(facts: Facts, install: CudnnInstall) -> list[str]:
    """Every file of the release in its folder: each library's name and the file behind it."""
    rules = PathRules(facts.os)
    files: list[str] = []
    for library in install.libraries:
        for path in (library.path, library.real_path):
            if path and rules.same(rules.dirname(path), install.folder) and not any(rules.same(path, f) for f in files):
                files.append(path)
    return files


def _quarantine(files: Iterable[str]) -> list[Change]:
    return [MoveFile(path) for path in files]


@planner(CUDNN_SHADOWED)
def plan_shadowed(finding: Finding, facts: Facts) -> list[Change]:
    """The copy that wins is unusable (an error) and a hand-copied one: quarantine its whole release, so the next copy
    wins."""
    evidence = evidence_of(finding, ShadowedCopies)
    if evidence is None:
        return []
    used = evidence.used
    # the copy beside the library that asked is not on its search path
    copies = [c for c in evidence.copies if c != evidence.off_path]
    if len(copies) < 2:
        return []  # with the winner gone, no copy would be found
    install = facts.cudnn_owner(used)[0]
    if install is not None and _managed(facts, install):
        return []
    if finding.severity is not Severity.ERROR and not _next_is_managed_and_not_older(facts, used, install, copies):
        return []  # the winner is usable: which copy to keep is the user's choice
    return _quarantine(_release_files(facts, install) if install is not None else [used])


def _next_is_managed_and_not_older(facts: Facts, used: str, install: Optional[CudnnInstall], copies: list[str]) -> bool:
    """A stray copy ahead of one a package manager installed (a pip wheel's, apt's) for the same major: with the stray
    gone the managed one wins, which is what that environment installed for the program; refused only when both
    versions are known and the managed one is older (the program may need what the stray has)."""
    rules = PathRules(facts.os)
    following = next((c for c in copies if not rules.same(c, used)), None)
    managed = facts.cudnn_owner(following)[0] if following else None
    if install is None or managed is None or not _managed(facts, managed) or managed.major != install.major:
        return False
    mine, theirs = parse_version(install.version or ""), parse_version(managed.version or "")
    return mine is None or theirs is None or theirs >= mine


@planner(CUDNN_IN_SYSTEM_DIR)
def plan_in_system_dir(finding: Finding, facts: Facts) -> list[Change]:
    """Every file of that release in the system folder goes to quarantine."""
    evidence = evidence_of(finding, SystemFolderCopy)
    files = list(evidence.files) if evidence is not None else []
    if not files:
        return []
    install = facts.cudnn_owner(files[0])[0]
    if install is not None and _managed(facts, install):
        return []
    return _quarantine(_release_files(facts, install) if install is not None else files)


@planner(CUDNN_NESTED_LAYOUT)
def plan_nested_layout(finding: Finding, facts: Facts) -> list[Change]:
    """`<toolkit>\\<top>\\bin\\…` → `<toolkit>\\bin\\…` (and include, lib); what else the top folder held goes to
    quarantine."""
    evidence = evidence_of(finding, NestedCopy)
    if evidence is None:
        return []
    top, toolkit = evidence.top, evidence.toolkit
    rules = PathRules(facts.os)
    if rules.windows:
        pairs = [("bin", "bin"), ("include", "include"), ("lib", "lib")]
    # a Linux toolkit keeps its libraries in lib64 (the runfile's and the packages' layout); the archives name it lib
    else:
        pairs = [("include", "include"), ("lib", "lib64"), ("lib64", "lib64")]
    moves: list[Change] = [MoveTree(rules.join(top, sub), rules.join(toolkit, dest)) for sub, dest in pairs]
    return [*moves, MoveTree(top)]


def _scope_values(facts: Facts) -> dict[str, dict[str, str]]:
    persistent = facts.environment.persistent or {}
    return {scope: dict(persistent.get(scope) or {}) for scope in ("system", "user")}


def _path_name(values: dict[str, str]) -> Optional[str]:
    return next((k for k in values if k.upper() == "PATH"), None)


def _rewrite_path(facts: Facts, keep: Callable[[str, str, set[str]], bool]) -> list[Change]:
    """A new registry PATH per scope (system first, as new processes see them), each entry kept as written (%VAR% and
    all)."""
    if facts.os != "windows" or facts.environment.persistent is None:
        return []
    rules = PathRules("windows")
    scopes = _scope_values(facts)
    scope_vars = {k.upper(): v for k, v in facts.environment.variables.items()}
    for scope in ("system", "user"):
        scope_vars.update({k.upper(): v for k, v in scopes[scope].items() if k.upper() != "PATH"})
    seen: set[str] = set()
    changes: list[Change] = []
    for scope in ("system", "user"):
        name = _path_name(scopes[scope])
        if name is None:
            continue
        old = scopes[scope][name]
        kept = []
        for raw in old.split(";"):
            expanded = expand_percent(raw, scope_vars).strip()
            if raw.strip() and keep(scope, expanded, seen):
                kept.append(raw)
            if expanded:
                seen.add(rules.key(expanded))
        new = ";".join(kept)
        if new != old.strip(";") and new != old:
            changes.append(SetPersistentEnv(scope, name, new, old))
    return changes


@planner(PATH_DUPLICATE_ENTRIES)
def plan_path_duplicates(finding: Finding, facts: Facts) -> list[Change]:
    """Drop the later copies of an entry (the first stays, so the search order does not change): from the registry PATH
    on Windows; on Linux in the doctor's env.sh, which the user sources."""
    evidence = evidence_of(finding, RepeatedEntries)
    if evidence is None:
        return []
    variable = evidence.variable
    if facts.os == "linux":
        return _linux_exports(
            facts,
            {variable},
            lambda entry, seen: bool(entry.value) and PathRules("linux").key(entry.value) in seen,
            repeats=True,
        )
    if variable.upper() != "PATH":
        return []
    rules = PathRules("windows")
    return _rewrite_path(facts, lambda scope, entry, seen: rules.key(entry) not in seen)


@planner(PATH_MISSING_DIR)
def plan_path_missing(finding: Finding, facts: Facts) -> list[Change]:
    """Drop the entries the finding names (folders that do not exist): from the registry PATH on Windows; on Linux
    in the doctor's env.sh (PATH and LD_LIBRARY_PATH)."""
    evidence = evidence_of(finding, MissingFolders)
    if evidence is None:
        return []
    if facts.os == "linux":
        named = set(evidence.entries)
        return _linux_exports(
            facts, LINUX_VARIABLES, lambda entry, seen: entry.value in named and not entry.exists, repeats=False
        )
    rules = PathRules("windows")
    missing = {rules.key(e) for e in evidence.entries}
    return _rewrite_path(facts, lambda scope, entry, seen: rules.key(entry) not in missing)


LINUX_VARIABLES = frozenset({"LD_LIBRARY_PATH", "PATH"})


def _linux_exports(
    facts: Facts, names: Collection[str], drop: Callable[[PathEntry, set[str]], bool], repeats: bool
) -> list[Change]:
    """Linux: for each variable with entries `drop` names, a line of the doctor's env.sh that removes them from the
    value each new shell has (the missing folders by name, or every later copy of a folder)."""
    variables = facts.environment.variables
    file = managed_env_file(variables)
    if facts.os != "linux" or file is None:
        return []
    rules = PathRules("linux")
    changes: list[Change] = []
    for entries in (facts.environment.ld_library_path, facts.environment.path):
        if not entries or entries[0].variable not in names:
            continue
        seen: set[str] = set()
        kept: list[str] = []
        dropped: list[str] = []
        for entry in entries:
            (dropped if drop(entry, seen) else kept).append(entry.value)
            if entry.value:
                seen.add(rules.key(entry.value))
        if not dropped:
            continue
        name = entries[0].variable
        old = variables.get(name, ":".join(e.value for e in entries))
        named = () if repeats else tuple(dict.fromkeys(_without_trailing_slash(d) for d in dropped))
        changes.append(ManagedExport(file, name, ":".join(kept), old, named, repeats))
    return changes


def _without_trailing_slash(folder: str) -> str:
    """How env.sh's function compares folders: `/usr/lib64/` is `/usr/lib64`, `//` is `/`."""
    return folder.rstrip("/") or folder[:1]


@planner(ENV_VAR_INEFFECTIVE)
def plan_ineffective_variable(finding: Finding, facts: Facts) -> list[Change]:
    """Windows: remove the persistent variable nothing reads; a misspelling's value goes to the name that is read.
    (On Linux the variable comes from a shell file the doctor does not edit: its steps stay manual.)"""
    evidence = evidence_of(finding, UnreadVariable)
    if facts.os != "windows" or facts.environment.persistent is None or evidence is None:
        return []
    name, suggestion = evidence.variable, evidence.suggestion
    changes: list[Change] = []
    for scope, values in _scope_values(facts).items():
        found = next((k for k in values if k.upper() == name.upper()), None)
        if found is None:
            continue
        changes.append(SetPersistentEnv(scope, found, None, values[found]))
        if suggestion is not None and not any(k.upper() == suggestion.upper() for k in values):
            changes.append(SetPersistentEnv(scope, suggestion, values[found], None))
    return changes


def _pip_argv(line: str, python: str) -> Optional[tuple[str, ...]]:
    """A fix line `"PYTHON" -m pip …` of the finding's own interpreter as argv; None for any other line."""
    try:
        argv = shlex.split(line, posix=True)
    except ValueError:
        return None
    if len(argv) < 4 or argv[0] != python or argv[1:3] != ["-m", "pip"]:
        return None
    return tuple(argv)


@planner(TORCH_CPU_BUILD)
def plan_torch_cpu_build(finding: Finding, facts: Facts) -> list[Change]:
    """Unsafe: the finding's own pip lines (the CUDA build the planner chose), run in the interpreter it is about;
    undone
    by reinstalling the versions that were there, which the plan names."""
    evidence = evidence_of(finding, CpuBuild)
    if evidence is None or evidence.torch is None:
        return []
    python, torch = evidence.python, evidence.torch
    commands = [argv for argv in (_pip_argv(line, python) for line in finding.fix) if argv is not None]
    if not commands or len(commands) != len(finding.fix):
        return []  # a line that is not a pip command of that interpreter: the steps stay manual
    env = facts.python(python)
    packages = dict(env.packages) if env is not None else {}
    touched = [a for argv in commands for a in argv[4:] if not a.startswith("-") and "://" not in a]
    names = [a.split("==")[0] for a in touched]
    recorded = [f"{n}=={packages.get(n) or (torch if n == 'torch' else '?')}" for n in dict.fromkeys(names)]
    # uninstall first: `pip install torch==2.2.2` is satisfied by an installed 2.2.2+cu121 (a local version matches ==)
    undo = (
        f'"{python}" -m pip uninstall -y {" ".join(dict.fromkeys(names))}, then "{python}" -m pip install '
        f"{' '.join(recorded)}"
    )
    return [RunCommand(argv, undo=undo) for argv in commands]


_ORT_EXTRAS = regex(r"^onnxruntime(?:-gpu)?\[cuda,cudnn\]==[0-9][0-9A-Za-z.+!-]*$")


def plan_ort_extras(finding: Finding, facts: Facts) -> list[Change]:
    """Unsafe: ONNX Runtime's own `pip install "onnxruntime-gpu[cuda,cudnn]==<its version>"` line of the finding, run
    in the
    interpreter of that ONNX Runtime (the nvidia-* CUDA and cuDNN wheels it asks for; ONNX Runtime itself stays). The
    finding's other lines (preload_dlls(), a search path) stay manual; undone by uninstalling the nvidia-* wheels it
    added."""
    pythons = {b.executable for b in facts.builds if b.name == "onnxruntime"}
    for line in finding.fix:
        if "[cuda,cudnn]" not in line:  # not the extras line: no need to split it like a shell
            continue
        try:
            python = shlex.split(line, posix=True)[0]
        except (ValueError, IndexError):
            continue
        argv = _pip_argv(line, python) if python in pythons else None
        if argv is None or argv[3] != "install" or len(argv) != 5 or not _ORT_EXTRAS.match(argv[4]):
            continue
        env = facts.python(python)
        had = sorted(n for n in (env.packages if env is not None else {}) if n.startswith("nvidia-"))
        kept = f" except {', '.join(had)}, which were there before" if had else ""
        undo = (
            f'"{python}" -m pip uninstall -y every nvidia-* package that `"{python}" -m pip list` shows{kept} '
            f"({argv[4].split('[')[0]} itself is not changed)"
        )
        return [RunCommand(argv, undo=undo)]
    return []


for _rule in (CUDNN_MISSING, CUDA_LIBS_NOT_FOUND, DEPENDENCY_MISSING):
    PLANNERS[_rule.id] = plan_ort_extras


# Files an install wrote and that are gone since: taken again from the archive the install history names ------------

WITH_HISTORY: set[str] = set()  # rules whose planner also takes the install history: (finding, facts, releases)


def _restore(
    finding: Finding, facts: Facts, releases: Sequence[InstalledRelease]
) -> tuple[list[Change], Optional[str]]:
    """The missing headers (include/cudnn*.h) or import libraries (lib/x64/cudnn*.lib) the newest install into that
    toolkit wrote, each from its archive with the bytes it wrote; else no change and why (a sentence)."""
    rules = PathRules(facts.os)
    headers, libraries = evidence_of(finding, MissingHeaders), evidence_of(finding, MissingImportLibraries)
    if headers is not None:
        folder, suffix, what = headers.include, ".h", "headers"
    elif libraries is not None:
        folder, suffix, what = libraries.folder, ".lib", "import libraries"
    else:
        return [], None
    toolkit = rules.dirname(folder) if suffix == ".h" else rules.dirname(rules.dirname(folder))
    install = next((i for i in facts.cudnn if i.toolkit and rules.same(i.toolkit, toolkit) and not i.nested_in), None)
    present = [*(install.headers_in_toolkit if install else ()), *(install.import_libraries if install else ())]
    release = next((r for r in reversed(releases) if rules.same(r.target, toolkit)), None)
    if release is None:
        return (
            [],
            f"no install into {toolkit} is in cudnn-doctor's history (`cudnn-doctor install ARCHIVE` records "
            f"one), so no archive to copy the {what} from",
        )
    mine, theirs = parse_version((install.version or "") if install else ""), parse_version(release.version or "")
    if mine is not None and theirs is not None and mine.release[:3] != theirs.release[:3]:
        return (
            [],
            f"the cuDNN in {toolkit} is {install.version if install else '?'}, not the {release.version} that "
            f"{release.archive} installed there",
        )
    files = [
        (dest, identity)
        for dest, identity in release.files
        if rules.same(rules.dirname(dest), folder)
        and rules.name_key(rules.basename(dest)).startswith(rules.name_key("cudnn"))
        and rules.basename(dest).lower().endswith(suffix)
        and not any(rules.same(dest, p) for p in present)
    ]
    if not files:
        return [], f"the install of {release.archive} wrote none of the missing {what} into {folder}"
    if release.unusable:
        return (
            [],
            f"the archive {release.archive} that installed cuDNN {release.version or ''} into {toolkit} "
            f"{release.unusable}".replace("  ", " "),
        )
    return [ExtractFile(release.archive, dest, identity) for dest, identity in files], None


def why_no_fix(finding: Finding, facts: Facts, releases: Optional[Sequence[InstalledRelease]]) -> Optional[str]:
    """Why a finding whose rule has a fix gets none here, when a sentence says more than "this case": the install
    history holds no usable archive; None otherwise."""
    if finding.id in WITH_HISTORY:
        return _restore(finding, facts, releases)[1] if releases is not None else None
    return None


@planner(CUDNN_HEADER_MISSING)
def plan_header_missing(finding: Finding, facts: Facts, releases: Sequence[InstalledRelease] = ()) -> list[Change]:
    """Headers `cudnn-doctor install` wrote and that are gone since: extracted again from the same archive, byte for
    byte."""
    return _restore(finding, facts, releases)[0]


@planner(CUDNN_IMPORT_LIB_MISSING)
def plan_import_lib_missing(finding: Finding, facts: Facts, releases: Sequence[InstalledRelease] = ()) -> list[Change]:
    """Windows import libraries (lib\\x64\\cudnn*.lib) the install wrote and that are gone since, from the same
    archive."""
    return _restore(finding, facts, releases)[0]


WITH_HISTORY.update({CUDNN_HEADER_MISSING.id, CUDNN_IMPORT_LIB_MISSING.id})
