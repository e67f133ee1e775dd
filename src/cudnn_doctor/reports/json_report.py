"""`--format json`: one versioned JSON object with the findings and the facts behind them."""

from __future__ import annotations

import json
from typing import Any, TextIO

from cudnn_doctor.diagnose import Diagnosis

REPORT_SCHEMA = "cudnn-doctor-report/1"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):  # a facts NamedTuple
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def render(diagnosis: Diagnosis, out: TextIO) -> None:
    from cudnn_doctor import __version__

    document = {
        "schema": REPORT_SCHEMA,
        "tool": {"name": "cudnn-doctor", "version": __version__},
        "exit_code": diagnosis.exit_code,
        "findings": [f.to_json() for f in diagnosis.findings],
        "facts": _plain(diagnosis.facts),
    }
    json.dump(document, out, indent=2, default=str)
    out.write("\n")
