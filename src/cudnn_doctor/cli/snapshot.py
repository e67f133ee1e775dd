"""`cudnn-doctor snapshot`: record this machine as a machine-fixture/1 file that `check --fixture` replays."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

from cudnn_doctor.cli.options import add_timeout_option
from cudnn_doctor.errors import InputError, UsageError
from cudnn_doctor.lazyre import regex


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("snapshot", help="write this machine as a fixture file for bug reports")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here (.yaml or .json) instead of standard output")
    parser.add_argument("--force", action="store_true", help="replace FILE when it exists (a symbolic link there is replaced itself, never followed)")
    parser.add_argument("--redact", action="store_true", help="replace the user name, home folder, host name and GPU UUIDs")
    parser.add_argument("--no-frameworks", action="store_true", help="do not import the GPU frameworks")
    add_timeout_option(parser)
    parser.set_defaults(run=run)


def take_snapshot(with_frameworks: bool = True, framework_timeout: float = 60.0, redact: bool = False) -> dict[str, Any]:
    """Run the probes on the live machine through a recorder and return the recorded document."""
    import platform

    from cudnn_doctor.probes import run_probes
    from cudnn_doctor.system.live import LiveSystem
    from cudnn_doctor.system.recorder import RecordingSystem

    recorder = RecordingSystem(LiveSystem(limit=framework_timeout))
    run_probes(recorder, with_frameworks, framework_timeout)
    document = recorder.document(f"snapshot-{platform.node() or 'machine'}", "Recorded by cudnn-doctor snapshot.")
    if not redact:
        return document
    home = os.path.expanduser("~")
    return redact_document(document, home, user_names(os.environ, home), platform.node())


def user_names(env: Mapping[str, str], home: str) -> list[str]:
    """Every name this user goes by: USERNAME (Windows), USER and LOGNAME (POSIX), the login, and the last part of
    each home folder, which can differ from all of them (`C:\\Users\\dev.CORP` for USERNAME `dev`)."""
    import getpass

    names = [env.get(key, "") for key in ("USERNAME", "USER", "LOGNAME")]
    try:
        names.append(getpass.getuser())
    except (KeyError, OSError, ImportError):  # no name for this uid (a container): the variables above are all there is
        pass
    # The home folder, and on Windows HOME too (Git Bash, MSYS and Cygwin set it), which may name another folder.
    for folder in (home, env.get("HOME", ""), env.get("USERPROFILE", "")):
        names.append(re.split(r"[\\/]", folder.rstrip("\\/"))[-1] if folder not in ("", "~") else "")
    return [n for n in dict.fromkeys(names) if n]


_GPU_UUID = regex(r"(?i)\b(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# What may stand either side of a user name that is a whole path component or a whole value: a path
# separator, a PATH list separator, a quote, `=`, white space (a command's output has many lines).
_EDGE = "\\\\/;:=\"',\\s"


def redact_document(document: Any, home: str, user: Union[str, Iterable[str]], host: str = "") -> Any:
    """Replace the home folder, the user's names, the host name and GPU UUIDs everywhere, keys included.

    On a Windows machine names are compared without regard to case (`C:\\Users\\Alice`, `c:\\users\\alice` and
    `%HOMEPATH%` `\\Users\\ALICE` are one folder), either slash separates folders, and the 8.3 short name of a long
    user folder (`ALICEM~1`) goes too. A name is replaced only where it is a whole path component or value, so a
    folder called `alice-pc-notes` keeps its name and the redacted snapshot replays to the same findings.
    """
    windows = (isinstance(document, dict) and document.get("os") == "windows") or "\\" in home or ":" in home[:2]
    flags = re.IGNORECASE if windows else 0
    placeholder_home = "C:\\Users\\user" if windows else "/home/user"
    rules: list[tuple[re.Pattern[str], Any]] = []
    parts = [p for p in re.split(r"[\\/]+", home.rstrip("\\/")) if p] if home not in ("", "~") else []
    if len(parts) > 1:
        separator = r"[\\/]" if windows else "/"
        lead = separator if home[:1] in "\\/" else ""
        pattern = lead + separator.join(re.escape(p) for p in parts) + f"(?=$|{separator}|[{_EDGE}])"
        rules.append((re.compile(pattern, flags), lambda m: _in_style(placeholder_home, m.group(0))))
    names = [user] if isinstance(user, str) else list(user)
    for name in sorted({n for n in names if len(n) > 1}, key=len, reverse=True):  # "dev.CORP" before "dev"
        rules.append((re.compile(f"(?<![^{_EDGE}]){re.escape(name)}(?![^{_EDGE}])", flags), "user"))
        short = re.sub(r"[\s.]", "", name)[:6]
        if windows and short and (len(name) > 8 or short != name):
            rules.append((re.compile(f"(?<![^{_EDGE}]){re.escape(short)}~\\d+(?![^{_EDGE}])", re.IGNORECASE), "user"))
    if host and len(host) > 1:
        # whole values only (the snapshot's name, HOSTNAME, COMPUTERNAME, LOGONSERVER's \\\\HOST): a host called "cuda" must not rewrite paths
        rules.append((re.compile(rf"^(snapshot-|\\\\)?{re.escape(host)}$", re.IGNORECASE), r"\1host"))
    rules.append((_GPU_UUID, r"\1-00000000-0000-0000-0000-000000000000"))

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            for pattern, replacement in rules:
                value = pattern.sub(replacement, value)
            return value
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(document)


def _in_style(placeholder: str, found: str) -> str:
    """The placeholder home with the separator the replaced text used (`C:/Users/user` for `C:/Users/Alice`)."""
    return placeholder.replace("\\", "/") if "/" in found and "\\" not in found else placeholder


def run(args: argparse.Namespace) -> int:
    import codecs

    if args.output is not None:
        _check_output(args.output, args.force)  # before the probes run: a refusal costs nothing
    document = take_snapshot(not args.no_frameworks, args.framework_timeout, args.redact)
    if args.output is None:
        encoding = getattr(sys.stdout, "encoding", None) or "ascii"
        sys.stdout.write(_serialize(document, None, unicode=codecs.lookup(encoding).name == "utf-8"))
        return 0
    _write_new(args.output, _serialize(document, args.output), args.force)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _check_output(output: Path, force: bool) -> None:
    if os.path.isdir(output) and not os.path.islink(output):
        raise UsageError(f"{output} is a folder; give a file name for the snapshot")
    if os.path.lexists(output) and not force:
        what = "a symbolic link" if os.path.islink(output) else "a file"
        raise UsageError(f"{output} is already there ({what}); pass --force to replace it")


def _write_new(output: Path, text: str, force: bool) -> None:
    """Write a temporary file beside `output`, then rename it over `output`: a link there is replaced, never written through."""
    import tempfile

    _check_output(output, force)
    folder = os.path.dirname(os.path.abspath(output))
    try:
        handle, temporary = tempfile.mkstemp(prefix=".snapshot-", suffix=".tmp", dir=folder)
    except OSError as error:
        raise InputError(f"cannot write {output}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # what a plain open() would have made, not mkstemp's 0600
        if not force and os.path.lexists(output):
            raise UsageError(f"{output} appeared while the snapshot was taken; pass --force to replace it")
        os.replace(temporary, output)
    except OSError as error:
        raise InputError(f"cannot write {output}: {error.strerror or error}") from None
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def _serialize(document: dict[str, Any], output: Optional[Path], unicode: bool = True) -> str:
    """YAML or JSON text of the document. Strings that came from undecodable bytes (surrogate escapes) are
    written as `\\udcXX` escapes, which both formats read back to the same string: nothing is lost."""
    if output is not None and output.suffix.lower() == ".json":
        return json.dumps(document, indent=2) + "\n"
    import yaml

    class _Dumper(yaml.SafeDumper):
        """No anchors or aliases in a snapshot: fixture loading refuses them (an alias bomb is a denial of service)."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=unicode, width=1000)
