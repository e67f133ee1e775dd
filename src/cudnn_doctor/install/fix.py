"""A fix's changes made concrete on the machine: which files a folder move takes, where quarantined files go.

The planners (fixes layer) never touch the machine; this reads it (listing folders, no writes) to
turn their changes into the steps `transaction.apply_fix` journals, so the printed plan names
every file before anything is changed. Refusals are one-line errors raised here, before any write.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path
from typing import Any, Optional, Sequence

from cudnn_doctor.errors import UsageError
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
from cudnn_doctor.install.plan import EnvChange
from cudnn_doctor.install.transaction import FixStep, Store
from cudnn_doctor.lazyre import regex
from cudnn_doctor.paths import MANAGED_ENV_MARKER, tilde
from cudnn_doctor.record import Record
from cudnn_doctor.system.archive import Archive
from cudnn_doctor.system.interface import System


class Expanded(Record):
    steps: list[FixStep]
    env: list[EnvChange]
    commands: list[RunCommand]
    shell_files: tuple[
        str, ...
    ] = ()  # Linux: the doctor's env.sh files written, which take effect where they are sourced
    shell_lines: tuple[
        str, ...
    ] = ()  # what the user adds to ~/.bashrc for each: "add  . ~/.config/cudnn-doctor/env.sh  to ~/.bashrc"
    notes: tuple[str, ...] = ()  # changes left out, and why (a folder reached through a link is no nested copy)


def quarantine_dest(system: System, quarantine: str, path: str) -> str:
    """`C:\\Windows\\System32\\x.dll` → `<quarantine>\\C\\Windows\\System32\\x.dll`: the whole path kept, so it is
    clear where it came from."""
    rules = system.paths
    parts = [p.rstrip(":") for p in rules.norm(path).replace("\\", "/").split("/") if p and p.rstrip(":")]
    return rules.join(quarantine, *parts)


def expand(system: System, changes: Sequence[Change], quarantine: str) -> Expanded:
    """The steps, environment changes and commands of `changes`, in order; each file moved at most once."""
    rules = system.paths
    steps: list[FixStep] = []
    moved: set[str] = set()
    env: list[EnvChange] = []
    commands: list[RunCommand] = []
    archives: dict[str, Archive] = {}
    exports: dict[str, dict[str, ManagedExport]] = {}
    notes: list[str] = []

    def move(source: str, dest: Optional[str], within: Optional[str] = None, home: Optional[str] = None) -> None:
        if rules.key(source) in moved or (system.stat(source) is None and system.link_target(source) is None):
            return  # said twice (two findings about one file), or gone since the check
        target = dest or quarantine_dest(system, quarantine, source)
        info = system.stat(target)
        if info is not None and info.is_dir and system.link_target(target) is None:
            raise UsageError(f"cannot move {source} to {target}: a folder of that name is there; nothing was changed")
        earlier = next((s.source for s in steps if s.kind == "move" and rules.same(s.dest, target)), None)
        if earlier is not None:  # the second would replace the first, whose bytes only its backup would then hold
            raise UsageError(f"cannot move both {earlier} and {source} to {target}; nothing was changed")
        moved.add(rules.key(source))
        steps.append(FixStep("move", target, source, within=within if dest else quarantine, home=home))

    try:
        for change in changes:
            if isinstance(change, MoveFile):
                move(change.src, change.dest)
            elif isinstance(change, MoveTree):
                if not system.is_dir(change.src) or system.link_target(change.src) is not None:
                    continue
                within = rules.dirname(change.dest) if change.dest else None  # the toolkit the folder's files go into
                link = _link_on_the_way(system, change.src, within or rules.dirname(change.src))
                if (
                    link is not None
                ):  # a linked folder inside a toolkit is a link (a cuDNN shared with others), not a nested copy
                    note = (
                        f"{link} is a link to {system.realpath(link)}, not a copy nested in the toolkit: its "
                        f"files are left where they are"
                    )
                    notes.extend([note] if note not in notes else [])
                    continue
                for path in _files_below(system, change.src):
                    if rules.key(path) in moved:
                        continue
                    rel = path[len(rules.norm(change.src)) :].lstrip("\\/")
                    move(
                        path,
                        rules.join(change.dest, *rel.replace("\\", "/").split("/")) if change.dest else None,
                        within,
                        change.src,
                    )
                steps.extend(FixStep("rmdir", folder) for folder in _emptied(system, change.src, moved))
            elif isinstance(change, CopyFile):
                steps.append(FixStep("write", change.dest, change.src))
            elif isinstance(change, WriteFile):
                steps.append(FixStep("write", change.dest, text=change.text))
            elif isinstance(change, SetPersistentEnv):
                # a value of None removes the variable
                env.append(EnvChange(change.scope, change.name, change.old, change.value))  # type: ignore[arg-type]
            elif isinstance(change, RunCommand):
                commands.append(change)
            elif isinstance(change, ExtractFile):
                if (
                    system.stat(change.dest) is None and system.link_target(change.dest) is None
                ):  # there again since the check: left alone
                    steps.append(FixStep("write", change.dest, data=_member_bytes(system, change, archives)))
            elif isinstance(change, ManagedExport):
                exports.setdefault(change.file, {})[change.name] = change
    finally:
        for archive in archives.values():
            archive.close()
    for file, values in exports.items():
        text = managed_env_text(system, file, values)
        if (
            text is not None
        ):  # written as bytes: a folder that is not UTF-8 (a surrogate escape here) is its own bytes again
            steps.append(FixStep("write", file, data=text.encode("utf-8", "surrogateescape")))
    ordered = _rmdirs_last(steps)
    check_containment(system, ordered)
    return Expanded(
        ordered, env, commands, tuple(exports), tuple(source_line(system, f) for f in exports), tuple(notes)
    )


def check_containment(system: System, steps: Sequence[FixStep]) -> None:
    """The plan-time half of the rule every write follows (the transaction checks it again before each write): each
    destination's folder, seen through every link already there, lies inside the folder its step may change, and no
    step's destination or source lies below a link that the same fix moves (a later file would go through it)."""
    rules = system.paths
    links = {
        rules.key(p)
        for s in steps
        if s.kind == "move" and s.source and system.link_target(s.source) is not None
        for p in (s.source, s.dest)
    }
    for step in steps:
        if step.kind == "rmdir":
            continue
        pairs = [(step.dest, step.within)]
        if step.kind == "move" and step.source:
            pairs.append((step.source, step.home))
        for path, root in pairs:
            folder, real_root = system.realpath(rules.dirname(path)), system.realpath(root or rules.dirname(path))
            if not rules.inside(folder, real_root):
                raise UsageError(
                    f"refusing to write {path}: its folder leads to {folder}, outside {root} (a link on the way "
                    f"leads out); nothing was changed"
                )
            parent = rules.dirname(path)
            while not rules.same(rules.dirname(parent), parent):
                if rules.key(parent) in links:
                    raise UsageError(
                        f"refusing to move {path}: it would go through the link {parent} that the same fix moves; "
                        f"nothing was changed"
                    )
                parent = rules.dirname(parent)


def _link_on_the_way(system: System, folder: str, root: str) -> Optional[str]:
    """The first link between `root` (excluded) and `folder` (included), outermost first; None when there is none."""
    rules = system.paths
    if not rules.inside(folder, root):
        return folder if system.link_target(folder) is not None else None
    chain = []
    while not rules.same(folder, root) and not rules.same(rules.dirname(folder), folder):
        chain.append(folder)
        folder = rules.dirname(folder)
    return next((p for p in reversed(chain) if system.link_target(p) is not None), None)


_CLEAN = "_cudnn_doctor_clean"
# POSIX sh (bash, dash, zsh alike): split on ':' by parameter expansion (no IFS, no globbing), compare folders without
# their trailing '/', and export the result (or unset the variable when nothing is left). A variable that is not set
# stays unset.
_CLEAN_FUNCTION = f"""\
# {_CLEAN} NAME [--repeats] [FOLDER...]: $NAME without the FOLDERs and, with --repeats, without later copies of a folder
{_CLEAN}() {{
    _cdd_name=$1; shift
    _cdd_repeats=; if [ "${{1-}}" = --repeats ]; then _cdd_repeats=1; shift; fi
    eval "[ -n \\"\\${{$_cdd_name+set}}\\" ]" || return 0
    eval "_cdd_rest=\\${{$_cdd_name}}:"
    _cdd_out=; _cdd_first=1; _cdd_seen=:
    while [ -n "$_cdd_rest" ]; do
        _cdd_dir=${{_cdd_rest%%:*}}; _cdd_rest=${{_cdd_rest#*:}}
        _cdd_key=$_cdd_dir
        while [ "$_cdd_key" != / ] && [ "${{_cdd_key%/}}" != "$_cdd_key" ]; do _cdd_key=${{_cdd_key%/}}; done
        _cdd_keep=1
        for _cdd_drop in "$@"; do if [ "$_cdd_key" = "$_cdd_drop" ]; then _cdd_keep=; fi; done
        if [ -n "$_cdd_repeats" ] && [ -n "$_cdd_key" ]; then
            case $_cdd_seen in *":$_cdd_key:"*) _cdd_keep= ;; esac
            _cdd_seen=$_cdd_seen$_cdd_key:
        fi
        if [ -n "$_cdd_keep" ]; then
            if [ -n "$_cdd_first" ]; then _cdd_out=$_cdd_dir; _cdd_first=; else _cdd_out=$_cdd_out:$_cdd_dir; fi
        fi
    done
    if [ -n "$_cdd_first" ]; then unset "$_cdd_name"; else export "$_cdd_name=$_cdd_out"; fi
    unset _cdd_name _cdd_repeats _cdd_rest _cdd_out _cdd_first _cdd_seen _cdd_dir _cdd_key _cdd_keep _cdd_drop
}}"""


_NAME = regex(r"[A-Za-z_][A-Za-z0-9_]*")
_SAFE = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-"
)  # shlex.quote leaves these bare
_HEADER = (
    f"{MANAGED_ENV_MARKER}: `cudnn-doctor fix` rewrites this whole file and `cudnn-doctor rollback` undoes it; "
    f"edits here are lost.",
    "# It takes effect in shells that source it from ~/.bashrc (`cudnn-doctor fix` prints the line; it never "
    "edits rc files).",
    "# Each line removes folders from the value the shell has when it sources this file: nothing else is changed.",
)


def _clean_line(name: str, repeats: bool, drop: Sequence[str]) -> str:
    """One statement: every folder a single-quoted POSIX word (a newline, a quote, `$(...)` or U+2028 in it is text)."""
    if not _NAME.fullmatch(name):
        raise UsageError(f"{name!r} is no shell variable name; nothing was changed")
    return " ".join([_CLEAN, name, *(["--repeats"] if repeats else []), *(shlex.quote(d) for d in drop)])


def env_sh_text(lines: dict[str, tuple[bool, tuple[str, ...]]]) -> str:
    """env.sh for these variables (name: whether later copies go, the folders dropped). Its comments hold no value
    (the file's own path included): every value stands quoted in a statement, where `read_env_sh` finds it again."""
    return (
        "\n".join(
            [*_HEADER, _CLEAN_FUNCTION, *(_clean_line(n, r, d) for n, (r, d) in lines.items()), f"unset -f {_CLEAN}"]
        )
        + "\n"
    )


def read_env_sh(text: str) -> dict[str, tuple[bool, tuple[str, ...]]]:
    """What `env_sh_text` (or an earlier doctor) wrote, per variable; ValueError for anything else.

    The grammar is the writer's, read from the start of the file: `#` comments (no values in them), the function
    (up to its closing `}` line), and statements of words separated by blanks and ended by a newline (only \\n:
    U+2028, U+0085 or \\x0b inside a quoted word is part of the word). A word is bare characters shlex.quote
    leaves unquoted, '...' (anything but a quote), "..." (without $, `, \\ or "), or a backslash and one character.
    """
    found: dict[str, tuple[bool, tuple[str, ...]]] = {}
    pos, end = 0, len(text)
    while pos < end:
        if text[pos] == "\n":
            pos += 1
        elif text[pos] == "#":
            stop = text.find("\n", pos)
            pos = end if stop < 0 else stop + 1
        elif text.startswith(f"{_CLEAN}() {{", pos):
            stop = text.find("\n}\n", pos)
            if stop < 0:
                raise ValueError(f"the function at line {text.count(chr(10), 0, pos) + 1} has no end")
            pos = stop + 3
        else:
            line = text.count("\n", 0, pos) + 1
            words, pos = _words(text, pos)
            if words == ["unset", "-f", _CLEAN]:
                continue
            if len(words) < 2 or words[0] != _CLEAN or not _NAME.fullmatch(words[1]):
                raise ValueError(f"line {line} is no statement cudnn-doctor writes")
            repeats = len(words) > 2 and words[2] == "--repeats"
            found[words[1]] = (repeats, tuple(words[3:] if repeats else words[2:]))
    return found


def _words(text: str, pos: int) -> tuple[list[str], int]:
    """The words of the statement at `pos` and where the next one starts (after its newline)."""
    words: list[str] = []
    word: Optional[list[str]] = None
    end = len(text)
    while pos < end:
        char = text[pos]
        if char in " \t\n":
            if word is not None:
                words.append("".join(word))
                word = None
            pos += 1
            if char == "\n":
                return words, pos
            continue
        word = [] if word is None else word
        if char == "'":
            stop = text.find("'", pos + 1)
            if stop < 0:
                raise ValueError("a quote that is never closed")
            word.append(text[pos + 1 : stop])
            pos = stop + 1
        elif char == '"':
            stop = text.find('"', pos + 1)
            inner = text[pos + 1 : stop]
            if stop < 0 or any(c in inner for c in "$`\\"):
                raise ValueError("a double-quoted word cudnn-doctor does not write")
            word.append(inner)
            pos = stop + 1
        elif char == "\\" and pos + 1 < end and text[pos + 1] != "\n":
            word.append(text[pos + 1])
            pos += 2
        elif char in _SAFE:
            word.append(char)
            pos += 1
        else:
            raise ValueError(f"{char!r} outside quotes")
    if word is not None:
        words.append("".join(word))
    return words, pos


def managed_env_text(system: System, file: str, exports: dict[str, ManagedExport]) -> Optional[str]:
    """The whole new env.sh: its first line marks it as the doctor's; what a former fix dropped is kept and these
    fixes' drops added (one line per variable); None when it already says exactly this. A file of that name that the
    doctor did not write is a one-line refusal."""
    old = _read_text(system, file)
    lines: dict[str, tuple[bool, tuple[str, ...]]] = {}
    if old is not None:
        if not old.startswith(MANAGED_ENV_MARKER):
            raise UsageError(
                f"{file} exists and is not a file cudnn-doctor manages (its first line is not "
                f"{MANAGED_ENV_MARKER!r}): move it away and run the fix again; nothing was changed"
            )
        try:
            lines = read_env_sh(old)
        except ValueError as error:
            raise UsageError(
                f"{file} is not as cudnn-doctor wrote it ({error}): move it away and run the fix again; nothing "
                f"was changed"
            ) from None
    for name, export in exports.items():
        repeats, drop = lines.get(name, (False, ()))
        lines[name] = (repeats or export.repeats, tuple(dict.fromkeys(drop + export.drop)))
    text = env_sh_text(lines)
    return None if text == old else text


def _read_text(system: System, file: str) -> Optional[str]:
    """The file's text as it is now (a fix may have written it: read its bytes), None when there is none; bytes that
    are not UTF-8 (a folder's name) kept as surrogate escapes, so they are written back as they were."""
    if system.stat(file) is None and system.link_target(file) is None:
        return None
    try:
        with system.open_read(file) as handle:
            return handle.read(1 << 20).decode("utf-8", "surrogateescape")
    except OSError as error:
        raise UsageError(f"cannot read {file} ({error.strerror or error}); nothing was changed") from None


def shell_word(path: str, env: Any) -> str:
    """A path as one POSIX shell word a user can paste: `~/.config/x` bare, anything unusual single-quoted after
    `~/`."""
    shown = tilde(path, env)
    if shown == "~":
        return shown
    if shown.startswith("~/"):
        return "~/" + shlex.quote(shown[2:])
    return shlex.quote(shown)


def source_line(system: System, file: str) -> str:
    """What the user adds to ~/.bashrc so that new shells get the cleaned variables (the path quoted for the shell)."""
    return f"add  . {shell_word(file, system.env())}  to ~/.bashrc"


def _member_bytes(system: System, change: ExtractFile, archives: dict[str, Archive]) -> bytes:
    """The bytes of the member the install wrote at `change.dest`: a file of that name in the archive whose
    SHA-256 is the one the history recorded (a v9 archive holds one cudnn.h per CUDA major; the hash picks the one)."""
    rules = system.paths
    if change.archive not in archives:
        archives[change.archive] = Archive(
            Path(change.archive)
        )  # validated as install validates it; a bad one is a one-line error
    archive = archives[change.archive]
    name = rules.name_key(rules.basename(change.dest))
    for member in archive.members:
        if member.is_file and member.size <= MAX_RESTORED and rules.name_key(member.name.rsplit("/", 1)[-1]) == name:
            data = archive.read_head(member, MAX_RESTORED + 1)
            if f"sha256:{hashlib.sha256(data).hexdigest()}" == change.identity:
                return data
    raise UsageError(
        f"{change.archive} no longer holds the {rules.basename(change.dest)} that was installed at {change.dest}; "
        f"nothing was changed"
    )


MAX_RESTORED = 64 << 20  # headers and import libraries are kilobytes to a few megabytes


def recorded_releases(store: Store) -> tuple[InstalledRelease, ...]:
    """The installs the history records and that are still in place (oldest first), each with the files it wrote
    and, when its archive cannot give them back any more, why: the archive is read on this host, where install read
    it."""
    releases = []
    for entry in store.history():
        if entry.get("kind") == "fix" or entry.get("state") != "installed":
            continue
        files = tuple(
            (step["dest"], step["new"])
            for step in entry["steps"]
            if step.get("kind") in ("add", "replace")
            and isinstance(step.get("new"), str)
            and step["new"].startswith("sha256:")
        )
        releases.append(
            InstalledRelease(
                entry["id"], entry["archive"], entry["target"], entry.get("version"), files, _unusable(entry)
            )
        )
    return tuple(releases)


def _unusable(entry: dict[str, Any]) -> Optional[str]:
    path = Path(entry["archive"])
    try:
        if not path.exists():
            return "is not on disk any more"
        size = entry.get("archive_size")
        if isinstance(size, int) and path.is_file() and path.stat().st_size != size:
            return f"has changed since (it is {path.stat().st_size:,} bytes; the install read {size:,})"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    return None


def _files_below(system: System, folder: str) -> list[str]:
    """Every file and link below `folder` (links are moved as links, never followed)."""
    found = []
    for entry in system.list_dir(folder, sizes=False) or []:
        if entry.is_dir and system.link_target(entry.path) is None:
            found.extend(_files_below(system, entry.path))
        else:
            found.append(entry.path)
    return found


def _emptied(system: System, folder: str, moved: set[str]) -> list[str]:
    """The folders (innermost first, `folder` last) that hold nothing once the moved files are gone."""
    rules = system.paths
    emptied: list[str] = []
    keeps = False
    for entry in system.list_dir(folder, sizes=False) or []:
        if entry.is_dir and system.link_target(entry.path) is None:
            inner = _emptied(system, entry.path, moved)
            emptied.extend(inner)
            keeps = keeps or not inner or not rules.same(inner[-1], entry.path)
        elif rules.key(entry.path) not in moved:
            keeps = True
    return emptied if keeps else [*emptied, rules.norm(folder)]


def _rmdirs_last(steps: list[FixStep]) -> list[FixStep]:
    """Folders are removed after every move (a later change may take files out of an earlier one's folder), deepest
    first."""
    files = [s for s in steps if s.kind != "rmdir"]
    folders = list(dict.fromkeys(s.dest for s in steps if s.kind == "rmdir"))
    return files + [FixStep("rmdir", f) for f in sorted(folders, key=lambda f: -len(f))]
