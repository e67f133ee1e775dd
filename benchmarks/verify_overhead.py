"""How much of `verify --quick` is harness rather than the kernels it times.

One run of `cudnn-doctor verify --quick --format json` (the framework chosen with --framework, torch by
default; on a machine without a GPU, the CPU baseline), then from its JSON:
- kernels: the sum of every timed run of every case (what the figures are made of);
- cases: the wall time of every case (setup, tensors, warm-up and the timed runs), as the worker measured it;
- worker: the worker from the framework import to its last case, and the import alone;
- command: the whole command, interpreter start and NVML included.
The harness overhead is (cases - kernels) / cases: what timing costs beyond the kernels it timed. Target: under 30 %.
The other shares are printed beside it, each as a ratio of the command's time.

usage: python benchmarks/verify_overhead.py [--framework NAME] [--cpu-only]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--cpu-only", action="store_true")
    args = parser.parse_args()
    command = [
        sys.executable,
        "-m",
        "cudnn_doctor",
        "verify",
        "--quick",
        "--format",
        "json",
        "--no-history",
        "--framework",
        args.framework,
    ]
    if args.cpu_only:
        command.append("--cpu-only")
    with tempfile.TemporaryDirectory() as state:
        environment = {**os.environ, "CUDNN_DOCTOR_STATE_DIR": state}
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
        wall = time.perf_counter() - start
    result = json.loads(done.stdout)
    framework = result["frameworks"][0]
    if framework["status"] not in ("ok", "no-gpu"):
        sys.exit(f"verify did not run {args.framework}: {framework['status']}: {framework.get('message')}")
    kernels = sum(sum(b["runs_s"]) for b in framework["benchmarks"])
    cases = sum(b["elapsed_s"] for b in framework["benchmarks"])
    gpu = result["gpu"]["name"] if result["gpu"] else "no GPU (CPU baseline only)"
    print(
        f"machine: {gpu}; {os.cpu_count()} CPUs; python {sys.version.split()[0]}; {framework['framework']} {framework.get('version')}"
    )
    print(f"command (verify --quick)      {wall:7.2f} s")
    print(
        f"worker, import to last case   {framework['total_s']:7.2f} s   {framework['total_s'] / wall:5.2f} of the command"
    )
    print(
        f"framework import              {framework['import_s']:7.2f} s   {framework['import_s'] / wall:5.2f} of the command"
    )
    print(f"cases (setup, warm-up, runs)  {cases:7.2f} s   {cases / wall:5.2f} of the command")
    print(f"kernels timed                 {kernels:7.2f} s   {kernels / wall:5.2f} of the command")
    overhead = (cases - kernels) / cases
    print(
        f"harness overhead {overhead * 100:.1f} % of the cases' time: {'within' if overhead < 0.30 else 'OVER'} the 30 % target (ratio {overhead / 0.30:.2f})"
    )


if __name__ == "__main__":
    main()
