"""What `run` (and the Python hook) prints after a failing program's own output: the error it printed, the
loader's searches that found nothing, and what `check` knows about them. Written to stderr."""

from __future__ import annotations

from typing import Sequence, TextIO

from cudnn_doctor.reports.encoding import Fitter
from cudnn_doctor.run.explain import Explanation
from cudnn_doctor.run.trace import Search

SHOWN_FOLDERS = 6


def lines(explanation: Explanation, command: Sequence[str], hook: bool = False) -> list[str]:
    shown = " ".join(command)[:120]
    if hook:
        out = [f"cudnn-doctor hook: `{shown}` raised a GPU-stack error."]
    elif explanation.returncode < 0:
        out = [
            f"cudnn-doctor run: `{shown}` was killed by signal "
            f"{-explanation.returncode}{_signal_name(-explanation.returncode)}."
        ]
    elif explanation.returncode:
        out = [f"cudnn-doctor run: `{shown}` exited with {explanation.returncode}."]
    else:
        out = [f"cudnn-doctor run: `{shown}` printed a GPU-stack error."]
    for match in explanation.errors:
        out.append(f"  ✗ {match.says}: {match.text}")
        out.append(f"    → {match.next_step}")
    for search in explanation.failed:
        out += _search_lines(search)
    if explanation.findings:
        out.append("  What `cudnn-doctor check` finds on this machine about it:")
        for finding in explanation.findings:
            out.append(f"    {'✗' if finding.severity.value == 'error' else '!'} {finding.id}: {finding.title}")
            out += [f"      → {step}" for step in finding.fix[:3]]
    elif explanation.errors or explanation.failed:
        out.append("  `cudnn-doctor check` finds nothing more about it on this machine.")
    return out


def _signal_name(number: int) -> str:
    import signal

    try:
        return f" ({signal.Signals(number).name})"
    except ValueError:
        return ""


def _search_lines(search: Search) -> list[str]:
    asked = f"needed by {search.requester}" if search.how == "needed" else f"loaded with dlopen by {search.requester}"
    out = [f"  The loader (process {search.pid}) found no {search.name} ({asked}). It searched, in order:"]
    for place in search.places:
        folders = _plain(place.folders)
        more = f" and {len(folders) - SHOWN_FOLDERS} more" if len(folders) > SHOWN_FOLDERS else ""
        out.append(f"    {place.source}: {', '.join(folders[:SHOWN_FOLDERS])}{more}")
    out.append(f"    {len(search.tried)} files tried, none of them there or loadable.")
    return out


_VARIANTS = ("glibc-hwcaps", "tls", "x86_64", "aarch64", "haswell")  # CPU-feature subfolders glibc tries in each folder


def _plain(folders: Sequence[str]) -> list[str]:
    """The folders without the CPU-feature subfolders glibc also tries in each (glibc-hwcaps/x86-64-v3, tls, x86_64)."""
    listed = set(folders)

    def variant(folder: str) -> bool:
        parts = folder.split("/")
        return any(parts[i] in _VARIANTS and "/".join(parts[:i]) in listed for i in range(1, len(parts)))

    return list(dict.fromkeys(f for f in folders if not variant(f)))


def render(explanation: Explanation, command: Sequence[str], stream: TextIO, hook: bool = False) -> None:
    fit = Fitter(stream)
    for line in lines(explanation, command, hook):
        stream.write(fit(line) + "\n")
    stream.flush()
