"""Data flows one way: system → probes → facts → checks → findings → reports. Imports must agree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "cudnn_doctor"
FORBIDDEN = {
    "checks": ("cudnn_doctor.system", "cudnn_doctor.probes", "cudnn_doctor.reports", "cudnn_doctor.cli", "cudnn_doctor.loader"),
    "probes": ("cudnn_doctor.system.live", "cudnn_doctor.system.fixture", "cudnn_doctor.checks", "cudnn_doctor.reports", "cudnn_doctor.cli"),
    "loader": ("cudnn_doctor.system.live", "cudnn_doctor.probes", "cudnn_doctor.checks", "cudnn_doctor.reports", "cudnn_doctor.cli"),
    "knowledge": ("cudnn_doctor.system", "cudnn_doctor.probes", "cudnn_doctor.checks", "cudnn_doctor.reports", "cudnn_doctor.cli"),
    "reports": ("cudnn_doctor.system", "cudnn_doctor.probes", "cudnn_doctor.cli"),
    "system": ("cudnn_doctor.probes", "cudnn_doctor.checks", "cudnn_doctor.reports", "cudnn_doctor.cli"),
    "install": ("cudnn_doctor.system.live", "cudnn_doctor.probes", "cudnn_doctor.checks", "cudnn_doctor.reports", "cudnn_doctor.cli"),
    "binaries": ("cudnn_doctor.system", "cudnn_doctor.probes", "cudnn_doctor.checks", "cudnn_doctor.loader", "cudnn_doctor.reports", "cudnn_doctor.cli"),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer):
    for path in (PACKAGE / layer).rglob("*.py"):
        bad = {name for name in _imports(path) if name.startswith(FORBIDDEN[layer])}
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_only_live_system_touches_subprocess_and_the_registry():
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "system" or path.parent.name == "cli":
            continue
        touched = _imports(path) & {"subprocess", "winreg", "ctypes", "pynvml"}
        assert not touched, f"{path.relative_to(PACKAGE)} imports {touched}"
