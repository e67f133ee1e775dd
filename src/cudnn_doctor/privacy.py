"""What of the environment may leave the machine in a report or a snapshot.

Only variables the diagnosis reads are kept (an allow-list: the CUDA, cuDNN, NVIDIA, framework,
loader and Python ones, and the few Windows folders that `%VAR%` references and the probes
expand), and a kept variable whose name looks like a secret has its value replaced. A
`GITHUB_TOKEN` or `AWS_SECRET_ACCESS_KEY` in the shell never reaches a bug report.
"""

from __future__ import annotations

from typing import Mapping, Optional

from cudnn_doctor.lazyre import regex

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
_SECRET = regex(r"(?i)token|secret|passw|passphrase|credential|api_?key|access_?key|private_?key|auth|session|cookie|(^|_)(key|pat)$")


def diagnosed(name: str) -> bool:
    """The diagnosis reads this variable (or a near-miss of one it reads), so a report may carry it."""
    upper = name.upper()
    return upper in DIAGNOSED_NAMES or upper.startswith(DIAGNOSED_PREFIXES)


def looks_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def kept_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a report or snapshot may carry, secret-looking values (and PRESENCE_ONLY ones) replaced."""
    return {name: REDACTED if looks_secret(name) or name.upper() in PRESENCE_ONLY else value for name, value in env.items() if diagnosed(name)}


def kept_persistent(persistent: Optional[Mapping[str, Mapping[str, str]]]) -> Optional[dict[str, dict[str, str]]]:
    """The same for the Windows registry environment (user and system scopes)."""
    if persistent is None:
        return None
    return {scope: kept_environment(values) for scope, values in persistent.items()}
