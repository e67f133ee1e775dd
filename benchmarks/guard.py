"""CI's benchmark guard: each benchmark's quick mode, one after another, failing only on a gross regression.

Every quick mode prints its figures as ratios against a floor measured in the same run and exits 1 only
when a ratio is beyond twice what it records (issue 15): a guard against a slow module imported again on
the common path or a quadratic loop come back, never a timing test. This script runs them all, prints
their output, and exits 1 when any of them did.

usage: python benchmarks/guard.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK = [
    ["check_speed.py", "--quick"],
    ["envs_scale.py", "--quick"],
    ["install_speed.py", "--quick"],
]


def main() -> int:
    failed = []
    for script, *args in QUICK:
        print(f"== benchmarks/{script} {' '.join(args)}", flush=True)
        started = time.monotonic()
        done = subprocess.run([sys.executable, str(HERE / script), *args])
        print(f"   ({time.monotonic() - started:.1f} s, exit {done.returncode})", flush=True)
        if done.returncode != 0:
            failed.append(script)
    if failed:
        print(f"benchmark guard: a gross regression in {', '.join(failed)}")
        return 1
    print("benchmark guard: no ratio beyond twice its recorded value")
    return 0


if __name__ == "__main__":
    sys.exit(main())
