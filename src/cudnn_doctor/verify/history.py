"""The local record of verify runs, so that `verify --compare` shows what changed since the last one
(a driver update that halved the matrix-product rate). One JSON line per run, in the doctor's state
folder; only figures and versions are kept (no paths, no environment)."""

from __future__ import annotations

import json
from typing import Any, Optional

import cudnn_doctor.system.untrusted as untrusted
from cudnn_doctor.errors import InputError
from cudnn_doctor.system.interface import System

FILE = "verify-history.jsonl"
KEEP = 4 << 20  # bytes of the file read back: the newest few hundred runs


def path(system: System) -> str:
    return system.paths.join(system.state_dir(), FILE)


def entry(result: dict[str, Any]) -> dict[str, Any]:
    """What a run leaves in the history: when, the GPU and driver, and each framework's medians."""
    gpu = result.get("gpu") or {}
    return {
        "time": result["time"],
        "gpu": gpu.get("name"),
        "driver": gpu.get("driver"),
        "frameworks": {
            f["framework"]: {
                "version": f.get("version"),
                "cudnn": f.get("cudnn"),
                "medians": {_key(b): b["median_s"] for b in f["benchmarks"]},
            }
            for f in result["frameworks"]
            if f["benchmarks"]
        },
    }


def _key(bench: dict[str, Any]) -> str:
    return f"{bench['id']}@{bench['device']}"


def append(system: System, result: dict[str, Any]) -> None:
    system.make_dirs(system.state_dir())
    system.append(path(system), (json.dumps(entry(result), sort_keys=True) + "\n").encode("utf-8"))


def last(system: System, gpu: Optional[str]) -> Optional[dict[str, Any]]:
    """The newest earlier run on the same GPU model; a torn or foreign line is skipped."""
    text = system.read_text(path(system), limit=KEEP) or ""
    for line in reversed(text.splitlines()):
        try:  # the hardened reader: a line nested 100,000 deep or with a huge integer is skipped, not a traceback
            run = untrusted.parse(line, FILE, json_text=True)
        except InputError:
            continue
        if isinstance(run, dict) and run.get("gpu") == gpu and isinstance(run.get("frameworks"), dict):
            return run
    return None


def compare(result: dict[str, Any], before: Optional[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each benchmark timed in both runs: before / after (above 1: faster now)."""
    if before is None:
        return []
    rows = []
    for framework in result["frameworks"]:
        medians = (before["frameworks"].get(framework["framework"]) or {}).get("medians") or {}
        for bench in framework["benchmarks"]:
            old = medians.get(_key(bench))
            if isinstance(old, (int, float)) and old > 0 and bench["median_s"] > 0:
                rows.append(
                    {
                        "framework": framework["framework"],
                        "id": _key(bench),
                        "before_s": old,
                        "after_s": bench["median_s"],
                        "ratio": old / bench["median_s"],
                        "before_time": before.get("time"),
                    }
                )
    return rows
