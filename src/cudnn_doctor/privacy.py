"""What of the environment may leave the machine in a report or a snapshot.

Only variables the diagnosis reads are kept (an allow-list: the CUDA, cuDNN, NVIDIA, framework,
loader and Python ones, and the few Windows folders that `%VAR%` references and the probes
expand), and a kept variable whose name looks like a secret has its value replaced. A
`GITHUB_TOKEN` or `AWS_SECRET_ACCESS_KEY` in the shell never reaches a bug report.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional, Union

from cudnn_doctor.lazyre import LazyPattern, regex

REDACTED = "<redacted>"
# Prefixes of the variables that CUDA, cuDNN, the frameworks, the loader and Python environments read.
DIAGNOSED_PREFIXES = (
    "CUDA",
    "CUDNN",
    "NVIDIA",
    "NV_",
    "LD_",
    "DYLD_",
    "TF_",
    "XLA_",
    "TORCH",
    "PYTORCH",
    "JAX",
    "ORT_",
    "ONNX",
    "PADDLE",
    "FLAGS_",
    "CUPY",
    "TENSORRT",
    "TRT_",
    "CONDA",
    "PYTHON",
    "VIRTUAL_ENV",
    "WSL",
)
DIAGNOSED_NAMES = frozenset(
    {
        "PATH",
        "PATHEXT",
        "PWD",
        "SUDO_USER",  # sudo drops the PATH of the user's shell: nvcc-not-on-path says so
        "CONTAINER",  # Podman, systemd-nspawn and LXC say so: gpu-not-passed-to-container
        "KUBERNETES_SERVICE_HOST",  # a Kubernetes pod (kept as set, never its address: PRESENCE_ONLY)
        "HOME",
        "USERPROFILE",
        "SYSTEMROOT",
        "WINDIR",
        "SYSTEMDRIVE",
        "PROGRAMFILES",
        "PROGRAMFILES(X86)",
        "PROGRAMW6432",
        "PROGRAMDATA",
        "LOCALAPPDATA",
        "APPDATA",
        "OS",
        "PROCESSOR_ARCHITECTURE",
    }
)
# Variables whose being set is the evidence: a report keeps that they are set, never their value (a cluster address).
PRESENCE_ONLY = frozenset({"KUBERNETES_SERVICE_HOST"})
_SECRET = regex(
    r"(?i)token|secret|passw|passphrase|credential|api_?key|access_?key|private_?key|auth|session|cookie"
    r"|(^|_)(key|pat)$"
)


def diagnosed(name: str) -> bool:
    """The diagnosis reads this variable (or a near-miss of one it reads), so a report may carry it."""
    upper = name.upper()
    return upper in DIAGNOSED_NAMES or upper.startswith(DIAGNOSED_PREFIXES)


def looks_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def kept_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a report or snapshot may carry, secret-looking values (and PRESENCE_ONLY ones) replaced."""
    return {
        name: REDACTED if looks_secret(name) or name.upper() in PRESENCE_ONLY else value
        for name, value in env.items()
        if diagnosed(name)
    }


def kept_persistent(persistent: Optional[Mapping[str, Mapping[str, str]]]) -> Optional[dict[str, dict[str, str]]]:
    """The same for the Windows registry environment (user and system scopes)."""
    if persistent is None:
        return None
    return {scope: kept_environment(values) for scope, values in persistent.items()}


def user_names(env: Mapping[str, str], home: str, login: bool = True) -> list[str]:
    """Every name this user goes by: USERNAME (Windows), USER and LOGNAME (POSIX), the login (`login`: this process's,
    for a live machine only), and the last part of each home folder, which can differ from all of them
    (`C:\\Users\\dev.CORP` for USERNAME `dev`)."""
    names = [env.get(key, "") for key in ("USERNAME", "USER", "LOGNAME")]
    if login:
        import getpass

        try:
            names.append(getpass.getuser())
        except (
            KeyError,
            OSError,
            ImportError,
        ):  # no name for this uid (a container): the variables above are all there is
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
    rules: list[tuple[Union[re.Pattern[str], LazyPattern[str]], Any]] = []
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
        # whole values only (the snapshot's name, HOSTNAME, COMPUTERNAME, LOGONSERVER's \\\\HOST): a host called "cuda"
        # must not rewrite paths
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


def redact_text(text: str, variables: Mapping[str, str], host: Optional[str] = None) -> str:
    """A report's text with the diagnosed machine's home folder, user names, host and GPU UUIDs replaced (the rules of
    `snapshot --redact`, read from that machine's own variables: a replayed fixture is redacted for its user)."""
    home = variables.get("USERPROFILE") or variables.get("HOME") or ""
    return str(redact_document(text, home, user_names(variables, home, login=False), host or ""))
