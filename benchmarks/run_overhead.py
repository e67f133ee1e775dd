"""What `cudnn-doctor run --` adds to a program that does not fail.

The program: a Python process that imports a few native extension modules (each a dlopen the loader
traces) and computes for about a second, or `--program "…"`. Timed directly and under `run` in
alternation (median of N runs each), with the loader traced as `run` always does. Target: `run` adds
under 5 % to the program's wall time; printed as a ratio to 5 %.

usage: python benchmarks/run_overhead.py [--runs N] [--program "python3 -c ..."]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time

PROGRAM = [
    sys.executable,
    "-c",
    "import ctypes, json, sqlite3, ssl, decimal, hashlib; print(sum(i * i for i in range(12_000_000)))",
]


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--program", help="the program, as a shell would split it")
    args = parser.parse_args()
    program = shlex.split(args.program) if args.program else PROGRAM
    wrapped = [sys.executable, "-m", "cudnn_doctor", "run", "--", *program]
    environment_note = (
        "bytecode cached" if not os.environ.get("PYTHONDONTWRITEBYTECODE") else "PYTHONDONTWRITEBYTECODE set"
    )
    timed(program), timed(wrapped)  # warm the file cache and .pyc files
    alone, under = [], []
    for _ in range(args.runs):
        alone.append(timed(program))
        under.append(timed(wrapped))
    a, u = statistics.median(alone), statistics.median(under)
    added = (u - a) / a
    print(
        f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]} ({environment_note}); {args.runs} runs each, alternating"
    )
    print(f"program alone          {a:7.3f} s")
    print(f"under cudnn-doctor run {u:7.3f} s")
    print(
        f"added {added * 100:.1f} % ({(u - a) * 1000:.0f} ms): ratio to the 5 % target {added / 0.05:.2f}: {'within' if added < 0.05 else 'OVER'}"
    )


if __name__ == "__main__":
    main()
