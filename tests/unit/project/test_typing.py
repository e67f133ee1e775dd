"""mypy, run as pyproject.toml configures it ([tool.mypy]: the whole package, the checks, facts, findings and knowledge
held to --strict), reports no error. Skipped where mypy is not installed (the Windows lane's interpreters)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
OLDEST = "1.17"  # the oldest mypy whose inference and stubs pass this code (the test extra asks for it)


def test_mypy_reports_no_error(monkeypatch):
    pytest.importorskip("mypy")
    from mypy import api
    from mypy.version import __version__
    from packaging.version import Version

    if Version(__version__) < Version(OLDEST):
        pytest.skip(f"mypy {__version__} is older than {OLDEST}, whose checks the code is held to")
    monkeypatch.chdir(ROOT)  # mypy reads the configuration and `files` from the repository root
    out, err, status = api.run([])
    assert status == 0, f"mypy found errors:\n{out}{err}"
    assert out.startswith("Success: no issues found"), out
