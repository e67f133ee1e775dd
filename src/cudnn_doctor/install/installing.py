"""`cudnn-doctor install` as a library call: refuse early, read and judge the archive in one pass, plan, let the caller
show the plan and answer, copy it in one transaction under the lock, and look at the toolkit again.

The caller (the command line, a test) gives what it shows and asks as callbacks; nothing here prints."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager, Iterator, Optional

from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.install import environment, transaction
from cudnn_doctor.install.archive_info import inspect
from cudnn_doctor.install.plan import EnvChange, Plan, choose_target, make_plan, preflight
from cudnn_doctor.probes.toolkit import probe_toolkits
from cudnn_doctor.record import Record
from cudnn_doctor.system.archive import Archive
from cudnn_doctor.versions import parse_version

if TYPE_CHECKING:
    from cudnn_doctor.facts import ToolkitFacts
    from cudnn_doctor.system.interface import System

Advance = Callable[[int], None]
Progress = Callable[[int], ContextManager[Optional[Advance]]]  # total bytes → a callback advanced by each block written


class Proposal(Record):
    """What the user is shown before anything changes: the plan, and what reading the state folder found."""

    plan: Plan
    env_changes: tuple[EnvChange, ...]
    warnings: tuple[str, ...] = ()  # records of the state folder skipped (torn by a full disk or a kill)
    recovered: Optional[str] = None  # an interrupted install or rollback finished or undone first
    interrupted: Optional[str] = None  # dry run (no lock taken): the target of an install running or interrupted

    @property
    def nothing_to_do(self) -> bool:
        return not self.plan.writes and not self.env_changes


class Installed(Record):
    """What `install` did: shown a plan; applied it or not (a dry run, nothing to do, or the user said no); and what the
    cuDNN checks find in the target afterwards."""

    proposal: Proposal
    dry_run: bool
    applied: bool
    seconds: float  # the command's own time, reading the archive included
    live: bool  # False: a fixture machine, changed in memory only
    notes: tuple[str, ...] = ()  # Linux: how programs find the libraries (ld.so.conf, LD_LIBRARY_PATH)
    findings: tuple[Finding, ...] = ()  # the re-check's findings about the target

    @property
    def declined(self) -> bool:
        return not self.dry_run and not self.applied and not self.proposal.nothing_to_do

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity is Severity.ERROR for f in self.findings) else 0


def install(
    system: System,
    archive_path: Path,
    *,
    into: Optional[str] = None,
    force: bool = False,
    dry_run: bool = False,
    set_cudnn_home: bool = False,
    show: Callable[[Proposal], None] = lambda proposal: None,
    confirm: Callable[[], bool] = lambda: True,
    progress: Optional[Progress] = None,
    recheck: Optional[Callable[[], System]] = None,
    after_file: Optional[Callable[[int], None]] = None,
    started: Optional[float] = None,
) -> Installed:
    """Install the cuDNN archive at `archive_path` into the matching toolkit (or `into`). `show` gets the plan,
    `confirm`
    is asked only when there is something to do and this is no dry run; `recheck` gives the machine to look at
    afterwards (live: a fresh look; by default this same system). Refusals raise a one-line UsageError before a byte
    of the archive is read; a failure during the copy is undone before it is raised."""
    started = time.perf_counter() if started is None else started
    toolkits = probe_toolkits(system)
    preflight(system, archive_path, into, force, toolkits)
    store = transaction.Store(system)
    if dry_run:
        with _opened(system, archive_path, spool=None) as archive:
            journal = store.journal()
            running = journal["target"] if journal is not None and journal.get("state") == "in-progress" else None
            proposal = _propose(system, archive, toolkits, into, force, set_cudnn_home, interrupted=running)
            show(proposal)
        return Installed(proposal, dry_run=True, applied=False, seconds=time.perf_counter() - started, live=system.live)
    command: Optional[list[str]] = None
    with store.locked():
        recovered = transaction.recover(store)
        warnings = store.take_warnings()
        with (
            store.spooling(_spool_root(system, into, toolkits)) as spool,
            _opened(system, archive_path, spool) as archive,
        ):
            proposal = _propose(
                system, archive, toolkits, into, force, set_cudnn_home, warnings=warnings, recovered=recovered
            )
            show(proposal)
            if proposal.nothing_to_do or not confirm():
                return Installed(
                    proposal, dry_run=False, applied=False, seconds=time.perf_counter() - started, live=system.live
                )
            plan = proposal.plan
            notes, command = _library_path_notes(system, plan)
            with progress(plan.bytes_written) if progress else contextlib.nullcontext() as advance:
                transaction.apply(
                    plan,
                    archive,
                    store,
                    progress=advance,
                    after_file=after_file,
                    env_changes=list(proposal.env_changes),
                    ldconfig=command is not None,
                )
    if command:
        system.run(command, timeout=60)
    seconds = time.perf_counter() - started
    return Installed(
        proposal,
        dry_run=False,
        applied=True,
        seconds=seconds,
        live=system.live,
        notes=tuple(notes),
        findings=_recheck((recheck or (lambda: system))(), plan.target),
    )


@contextlib.contextmanager
def _opened(system: System, path: Path, spool: Optional[str]) -> Iterator[Archive]:
    """The archive, judged member by member in the one pass that reads it; with a spool its bytes land there."""
    archive = Archive(path, spool=spool, opener=system.xz_reader)
    try:
        yield archive
    finally:
        archive.close()


def _propose(
    system: System,
    archive: Archive,
    toolkits: ToolkitFacts,
    into: Optional[str],
    force: bool,
    set_cudnn_home: bool,
    warnings: tuple[str, ...] = (),
    recovered: Optional[str] = None,
    interrupted: Optional[str] = None,
) -> Proposal:
    info = inspect(archive)
    target = choose_target(system, info, toolkits, into, force)
    toolkit = toolkits.by_root(target)
    parsed = parse_version(toolkit.version) if toolkit and toolkit.version else None
    major = parsed.release[0] if parsed is not None else None
    plan = make_plan(system, archive, info, target, major)
    env_changes = environment.windows_changes(system, target, set_cudnn_home) if system.os == "windows" else []
    return Proposal(plan, tuple(env_changes), warnings, recovered, interrupted)


def _spool_root(system: System, into: Optional[str], toolkits: ToolkitFacts) -> Optional[str]:
    """Where the archive's bytes are spooled while it is read: on the target's file system (the folder given with
    --into, else the toolkit on PATH or the first one found), so the install renames them into place. None on a
    machine that is only described: the bytes are then copied from the archive."""
    if not system.live:
        return None
    if into is not None:
        return into
    roots = [t.root for t in toolkits.toolkits]
    return toolkits.path_toolkit if toolkits.path_toolkit in roots else (roots[0] if roots else None)


def _library_path_notes(system: System, plan: Plan) -> tuple[list[str], Optional[list[str]]]:
    """Linux: what to tell about the library folder (is it on the loader's path?) and the ldconfig to run, if any."""
    if system.os == "windows":
        return [], None
    lib_dir = next((system.paths.dirname(a.dest) for a in plan.actions if ".so" in system.paths.basename(a.dest)), None)
    return environment.linux_notes(system, lib_dir) if lib_dir is not None else ([], None)


def _recheck(system: System, target: str) -> tuple[Finding, ...]:
    """The cuDNN, library and dependency findings about the target on a fresh look at the machine."""
    from cudnn_doctor.diagnose import diagnose

    found = diagnose(system, with_frameworks=False).findings
    return tuple(f for f in found if f.id.startswith(("cudnn-", "library-", "dependency-")) and target in f.detail)
