"""Rooms of a readable size (issue 32): modules of at most ~500 lines of at most 120 characters, 95 % of functions with a
cyclomatic complexity of at most 10."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "cudnn_doctor"
MAX_LINES = 500
MAX_LINE = 120  # characters
MAX_COMPLEXITY = 10
SHARE_SIMPLE = 0.95


def test_no_module_grows_past_its_size():
    sizes = {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    too_large = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert not too_large, f"modules over {MAX_LINES} lines (split them): {too_large}"


def test_no_line_is_longer_than_the_limit():
    long = [
        f"{path.relative_to(PACKAGE).as_posix()}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > MAX_LINE
    ]
    assert not long, f"lines over {MAX_LINE} characters: {long[:20]}"


@pytest.mark.live
def test_most_functions_are_simple():
    """ruff's mccabe counts each function's complexity; at most 5 % may exceed 10."""
    pytest.importorskip("ruff")
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901", "--output-format", "json"]
    done = subprocess.run(
        [*command, "--config", f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", str(PACKAGE)],
        capture_output=True,
        text=True,
        check=False,
    )
    complex_ones = json.loads(done.stdout or "[]")
    trees = (ast.parse(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py"))
    functions = sum(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for tree in trees for node in ast.walk(tree)
    )
    assert functions > 1000 and done.returncode in (0, 1), done.stderr
    assert len(complex_ones) <= (1 - SHARE_SIMPLE) * functions, [c["message"] for c in complex_ones]
