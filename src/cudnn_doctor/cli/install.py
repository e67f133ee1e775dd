"""`cudnn-doctor install ARCHIVE`, `rollback` and `history`: put a cuDNN archive where it belongs, safely."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterator, Optional

if TYPE_CHECKING:
    from cudnn_doctor.install.archive import Archive
    from cudnn_doctor.install.plan import EnvChange, Plan
    from cudnn_doctor.install.transaction import Store
    from cudnn_doctor.system.interface import System


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("install", help="install a cuDNN archive into the matching CUDA toolkit, with rollback")
    parser.add_argument("archive", type=Path, help="a cuDNN .zip, .tar.xz, .tar.gz, or an extracted folder")
    parser.add_argument("--into", type=Path, metavar="DIR", help="install into this folder instead of the matching toolkit")
    parser.add_argument("--force", action="store_true", help="allow a target that is not a CUDA toolkit, or of another CUDA major")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask before changing anything")
    parser.add_argument("--set-cudnn-home", action="store_true", help="Windows: also set CUDNN_HOME to the toolkit folder")
    parser.set_defaults(run=run_install)
    rollback = commands.add_parser("rollback", help="undo the last install or fix, restoring every replaced or moved file")
    rollback.set_defaults(run=run_rollback)
    history = commands.add_parser("history", help="list the installs and fixes made with cudnn-doctor")
    history.set_defaults(run=run_history)


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _say_warnings(store: Store) -> None:
    """What reading the state folder skipped (a journal record torn by a full disk or a kill), once, on stderr."""
    for warning in store.warnings:
        _say(f"cudnn-doctor: warning: {warning}")
    store.warnings.clear()


def run_install(args: argparse.Namespace) -> int:
    from cudnn_doctor.install import transaction
    from cudnn_doctor.install.archive import Archive
    from cudnn_doctor.install.plan import preflight
    from cudnn_doctor.probes.toolkit import probe_toolkits
    from cudnn_doctor.system import open_system

    started = time.perf_counter()  # the time said at the end is the command's: reading the archive included
    system = open_system()
    into = str(args.into.resolve()) if args.into else None
    preflight(system, args.archive, into, args.force, probe_toolkits(system))  # before a byte of the archive is read
    store = transaction.Store(system)
    if args.dry_run:
        archive = Archive(args.archive, opener=xz_stream)  # every member is judged here, in the one pass that reads it
        try:
            journal = store.journal()
            if journal is not None and journal.get("state") == "in-progress":
                _say(f"cudnn-doctor: an install into {journal['target']} is running or was interrupted; the next install or rollback finishes or undoes it")
            _plan_and_print(system, archive, args)
        finally:
            archive.close()
        return 0
    with store.locked():
        recovered = transaction.recover(store)
        _say_warnings(store)
        if recovered:
            _say(f"cudnn-doctor: {recovered}")
        with store.spooling(_spool_root(system, args)) as spool:
            archive = Archive(args.archive, spool=spool, opener=xz_stream)  # judged in the one pass that reads it; the bytes land in the spool
            try:
                target = _install(system, store, archive, args, started)
            finally:
                archive.close()
    return _verify(target) if target is not None else 0


@contextlib.contextmanager
def xz_stream(path: Path) -> Iterator[Optional[IO[bytes]]]:
    """The decompressed bytes of an .xz file from `xz -dc` in another process, as `tar -xf` reads them, so that
    decompressing runs beside the hashing and writing; None where there is no xz (Python's lzma then does it).
    A failure of xz (a truncated or corrupt file) is a tarfile.ReadError once the stream is read."""
    import shutil
    import subprocess
    import tarfile

    xz = shutil.which("xz")
    if xz is None:
        yield None
        return
    process = subprocess.Popen([xz, "-dc", "--", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert process.stdout is not None and process.stderr is not None
    _widen_pipe(process.stdout.fileno())
    try:
        yield process.stdout
        while process.stdout.read(1 << 20):  # the zero blocks after the end-of-archive marker
            pass
        if process.wait() != 0:
            why = process.stderr.read(4096).decode("utf-8", "replace").strip().splitlines()
            raise tarfile.ReadError(f"xz: {why[-1] if why else 'failed'}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


def _widen_pipe(descriptor: int) -> None:
    """A 1 MB pipe instead of 64 KB (Linux): xz keeps decompressing while a block is hashed and written."""
    try:
        import fcntl

        fcntl.fcntl(descriptor, fcntl.F_SETPIPE_SZ, 1 << 20)  # type: ignore[attr-defined]
    except (ImportError, AttributeError, OSError):
        pass


def _spool_root(system: System, args: argparse.Namespace) -> Optional[str]:
    """Where the archive's bytes are spooled while it is read: on the target's file system (the folder given
    with --into, else the toolkit on PATH or the first one found), so the install renames them into place.
    None on a machine that is not this one (a fixture): the bytes are then copied from the archive."""
    from cudnn_doctor.system.live import LiveSystem

    if not isinstance(system, LiveSystem):
        return None
    if args.into is not None:
        return str(args.into.resolve())
    from cudnn_doctor.probes.toolkit import probe_toolkits

    toolkits = probe_toolkits(system)
    roots = [t.root for t in toolkits.toolkits]
    return toolkits.path_toolkit if toolkits.path_toolkit in roots else (roots[0] if roots else None)


def _plan_and_print(system: System, archive: Archive, args: argparse.Namespace) -> tuple[Plan, list[EnvChange]]:
    """The plan and the environment changes, printed."""
    from cudnn_doctor.install import environment
    from cudnn_doctor.install.archive import inspect
    from cudnn_doctor.install.plan import choose_target, make_plan
    from cudnn_doctor.probes.toolkit import probe_toolkits
    from cudnn_doctor.versions import parse_version

    info = inspect(archive)
    toolkits = probe_toolkits(system)
    target = choose_target(system, info, toolkits, str(args.into.resolve()) if args.into else None, args.force)
    toolkit = toolkits.by_root(target)
    major = parse_version(toolkit.version).release[0] if toolkit and toolkit.version else None
    plan = make_plan(system, archive, info, target, major)
    env_changes = environment.windows_changes(system, target, args.set_cudnn_home) if system.os == "windows" else []
    _print_plan(plan, env_changes)
    if not plan.writes and not env_changes:
        print("Nothing to do: every file is already installed.")
    return plan, env_changes


def _install(system: System, store: Store, archive: Archive, args: argparse.Namespace, started: float) -> Optional[str]:
    """Plan, ask, copy, set up the environment; the target, or None when nothing was installed."""
    from cudnn_doctor.errors import UsageError
    from cudnn_doctor.install import environment, transaction

    plan, env_changes = _plan_and_print(system, archive, args)
    if not plan.writes and not env_changes:
        return None
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("not asking on a non-interactive input: pass --yes to install, or --dry-run to see the plan")
        if input("Install? [y/N] ").strip().lower() not in ("y", "yes"):
            print("Nothing changed.")
            return None
    notes: list[str] = []
    command = None
    if system.os != "windows":
        lib_dir = next((system.paths.dirname(a.dest) for a in plan.actions if ".so" in system.paths.basename(a.dest)), None)
        if lib_dir is not None:
            notes, command = environment.linux_notes(system, lib_dir)
    with _progress(plan.bytes_written) as advance:
        transaction.apply(plan, archive, store, progress=advance, after_file=_test_hook(), env_changes=env_changes, ldconfig=command is not None)
    print(f"Installed {len(plan.writes)} files into {plan.target} in {time.perf_counter() - started:.1f} s (rollback: `cudnn-doctor rollback`).")
    if env_changes:  # written in the transaction, after the files, journaled: rollback and recovery undo them too
        print("The persistent environment changed: close and reopen terminals, IDEs and Jupyter so they see it.")
    for note in notes:
        print(note)
    if command:
        system.run(command, timeout=60)
    return plan.target


def _print_plan(plan: Plan, env_changes: list[EnvChange]) -> None:
    """The plan the user confirms: names from the archive with their control and bidi characters escaped (`visible`)."""
    from cudnn_doctor.reports.encoding import visible

    info = plan.archive
    print(visible(f"cuDNN {info.version or '?'} for CUDA {info.cuda_major or '?'} ({info.os or '?'} {info.arch or '?'}, layout {info.layout}) → {plan.target}"))
    for action in plan.actions:
        label = {"add": "add    ", "replace": "replace", "same": "same   ", "link": "link   "}[action.kind]
        extra = f" → {action.member.link}" if action.kind == "link" else f" ({action.member.size:,} bytes)"
        if action.kind == "replace":
            replaced = f"{action.replaced_size:,} bytes" if action.replaced_size is not None else "a link"
            extra += f", replacing {replaced} of cuDNN {plan.replaced_version or '(unknown release)'} (backed up)"
        print(visible(f"  {label} {action.dest}{extra}"))
    for change in env_changes:
        print(visible(f"  env     {change.scope} {change.name}: {change.old or '(unset)'} → {change.new}"))
    print(_totals(plan, env_changes))


def _totals(plan: Plan, env_changes: list[EnvChange]) -> str:
    """`Total: 7 to add, 2 to replace (backed up), 1 already there; 812.3 MB to write; 2 environment change(s).`"""
    kinds = [action.kind for action in plan.actions]
    parts = [
        f"{kinds.count(kind)} {said}"
        for kind, said in (("add", "to add"), ("link", "link(s) to make"), ("replace", "to replace (backed up)"), ("same", "already there"))
        if kinds.count(kind)
    ]
    size = f"; {plan.bytes_written / 1e6:,.1f} MB to write" if plan.bytes_written else ""
    env = f"; {len(env_changes)} environment change(s)" if env_changes else ""
    return f"Total: {', '.join(parts) or 'no file'}{size}{env}."


class _progress:
    """A progress bar on a terminal (rich), nothing otherwise."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._bar = None

    def __enter__(self):
        if not sys.stderr.isatty():
            return None
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        self._bar = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(), transient=True)
        self._bar.__enter__()
        task = self._bar.add_task("copying", total=self.total)
        return lambda n: self._bar.update(task, advance=n)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


def _test_hook():
    """Tests slow the copy down (to kill it half-way) with CUDNN_DOCTOR_TEST_DELAY seconds per file."""
    import os

    delay = float(os.environ.get("CUDNN_DOCTOR_TEST_DELAY", "0") or 0)
    return (lambda index: time.sleep(delay)) if delay else None


def _verify(target: str) -> int:
    """Run the cuDNN checks on the result (a fresh look at the machine) and show what concerns the toolkit."""
    from cudnn_doctor.diagnose import diagnose
    from cudnn_doctor.findings import Severity
    from cudnn_doctor.system import open_system

    findings = [
        f for f in diagnose(open_system(), with_frameworks=False).findings if f.id.startswith(("cudnn-", "library-", "dependency-")) and target in f.detail
    ]
    if not findings:
        print("Verified: the cuDNN checks find nothing wrong in the toolkit.")
        return 0
    for found in findings:
        print(f"{found.severity.value}: {found.id}: {found.detail}")
    return 1 if any(f.severity is Severity.ERROR for f in findings) else 0


def run_rollback(args: argparse.Namespace) -> int:
    from cudnn_doctor.install.undoing import rollback
    from cudnn_doctor.reports.install_report import render_rollback
    from cudnn_doctor.system import open_system

    result = rollback(open_system())
    render_rollback(result, sys.stdout, sys.stderr)
    return result.exit_code


def run_history(args: argparse.Namespace) -> int:
    """List the installs and fixes; reads only."""
    from cudnn_doctor.install.undoing import history
    from cudnn_doctor.reports.install_report import render_history
    from cudnn_doctor.system import open_system

    system = open_system()
    render_history(history(system), system.paths, sys.stdout, sys.stderr)
    return 0
