"""CUDA_PATH / CUDA_HOME read as tools read them: one literal folder, no quotes stripped, no list split.

Build tools (CMake, setup.py, torch.utils.cpp_extension, MSBuild's CUDA props) take the value
verbatim and append `bin`, `include` or `lib64`; every malformed shape below makes them look in a
folder that does not exist, while the nvcc on PATH keeps working, so the mix only shows at build time.
"""

from __future__ import annotations

import shlex
from typing import Optional

from cudnn_doctor.facts import Facts
from cudnn_doctor.lazyre import regex
from cudnn_doctor.paths import PathRules

_WINDOWS_REFERENCE = regex(r"%[A-Za-z_][A-Za-z0-9_()]*%")
_POSIX_REFERENCE = regex(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
_NVCC = ("nvcc", "nvcc.exe")


def value_problems(name: str, value: str, os_name: str) -> tuple[list[str], Optional[str]]:
    """What is wrong with `value` as one toolkit folder, and the folder it was meant to be when that is unambiguous.

    The second item is None when the value holds several paths: picking one piece would accept a
    value that no tool reads that way.
    """
    rules, problems, text = PathRules(os_name), [], value
    if not text.strip():
        return ["is empty"], None
    if text != text.strip():
        problems.append("has spaces or tabs around the path, which tools keep as part of the folder name")
        text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        problems.append(
            "is wrapped in quotes, which become part of the folder name (quotes belong around the whole "
            "assignment, not inside the value)"
        )
        text = text[1:-1].strip()
    if any(q in text for q in "\"'"):
        problems.append("contains a stray quote, which becomes part of the folder name")
        text = text.replace('"', "").replace("'", "").strip()
    reference = (_WINDOWS_REFERENCE if rules.windows else _POSIX_REFERENCE).search(text)
    if reference or (not rules.windows and text.startswith("~")):
        shown = reference.group(0) if reference else "~"
        problems.append(
            f"holds {shown} unexpanded: nothing expands it in this variable, so tools look for a folder literally "
            f"named so"
        )
    separators = ";" if rules.windows else ";:"
    if any(s in text for s in separators):
        pieces = [p for p in text.replace(";", rules.list_sep).split(rules.list_sep) if p.strip()]
        joined = "', '".join(sorted({s for s in separators if s in text}))
        problems.append(
            f"holds {len(pieces)} path{'s' if len(pieces) != 1 else ''} joined with '{joined}' as if it were "
            f"PATH; it must name exactly one toolkit folder"
        )
        return problems, None
    if text.endswith(("\\", "/")) and len(rules.norm(text)) > 3:
        problems.append(
            "ends in a path separator"
            + (
                f', so a quoted "%{name}%" ends in \\" and the closing quote is read as part of the value'
                if rules.windows
                else ", so tools that compare it with the toolkit's own spelling see another folder"
            )
        )
        text = text.rstrip("\\/")
    if rules.name_key(rules.basename(text)) in _NVCC:
        problems.append(
            "names the compiler itself, not the toolkit folder that holds bin\\nvcc.exe"
            if rules.windows
            else "names the compiler itself, not the toolkit folder that holds bin/nvcc"
        )
        text = rules.dirname(text)
        if rules.name_key(rules.basename(text)) == "bin":
            text = rules.dirname(text)
    elif rules.name_key(rules.basename(text)) == "bin":
        problems.append("ends in the toolkit's bin folder; tools append bin, include and lib to it themselves")
        text = rules.dirname(text)
    if not reference and not rules.is_abs(text) and not text.startswith("~"):
        problems.append("is not an absolute path, so it means another folder in every working directory")
    return problems, text


def kind_problem(kind: str, windows: bool) -> str:
    """Why a well-formed value still names no toolkit, from what the probe found at that exact path."""
    if kind == "missing":
        return "names a folder that does not exist (a toolkit that was uninstalled or moved)"
    if kind == "file":
        return "names a file, not a toolkit folder"
    nvcc, header = ("bin\\nvcc.exe", "include\\cuda.h") if windows else ("bin/nvcc", "include/cuda.h")
    return (
        f"names a folder that holds no toolkit: no {nvcc}, version.json or {header} (what an uninstalled "
        f"toolkit leaves behind)"
    )


def set_command(facts: Facts, name: str, value: Optional[str]) -> str:
    """The command that gives `name` the value `value` (or removes it) in the user's OS and shell, for new terminals."""
    if facts.os == "windows":
        system_scope = any(
            name.upper() == n.upper() for n in ((facts.environment.persistent or {}).get("system") or {})
        )
        user_scope = any(name.upper() == n.upper() for n in ((facts.environment.persistent or {}).get("user") or {}))
        where = " /M" if system_scope and not user_scope else ""
        admin = " from a terminal run as Administrator" if where else ""
        if value is None:
            hive = (
                r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment" if where else r"HKCU\Environment"
            )
            return f'Remove {name}{admin}: `reg delete "{hive}" /v {name} /f`, then open a new terminal.'
        return f'Run `setx{where} {name} "{value}"`{admin}, then open a new terminal (setx changes only new ones).'
    if value is None:
        return f"Run `unset {name}` and delete the line that sets it (~/.bashrc, ~/.profile, /etc/environment)."
    return (
        f"Run `export {name}={shlex.quote(value)}` and put that line, corrected, where {name} is set "
        f"(~/.bashrc, ~/.profile, /etc/environment)."
    )
