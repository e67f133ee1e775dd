"""Wall time of `cudnn-doctor check` on this machine, against its peers in the same run.

Prints, for N runs each (median): `check --no-frameworks`, `check` (frameworks imported in
child interpreters, concurrently), the slowest single framework import on its own, and
PyTorch's `python -m torch.utils.collect_env` when torch is installed. Ratios are printed
against the peer each target is defined by: --no-frameworks against 0.2 s, the full check
against (slowest single import + 0.3 s), collect_env against the full check.

usage: python benchmarks/check_speed.py [--runs N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    script = Path(sys.executable).with_name("cudnn-doctor.exe" if sys.platform == "win32" else "cudnn-doctor")
    doctor = [str(script) if script.exists() else sys.executable, *([] if script.exists() else ["-m", "cudnn_doctor"]), "check"]
    python_alone = timed([sys.executable, "-c", "pass"], runs)
    quick = timed([*doctor, "--no-frameworks"], runs)
    print(f"python -c pass                     {python_alone:6.3f} s")
    print(f"check --no-frameworks              {quick:6.3f} s   target 0.200 s  ratio {quick / 0.2:4.2f}")
    installed = [m for m in ("torch", "tensorflow", "paddle", "jax", "onnxruntime") if importlib.util.find_spec(m)]
    if not installed:
        print("no GPU framework installed: the full check equals --no-frameworks here")
        return
    imports = {m: timed([sys.executable, "-c", f"import {m}"], runs) for m in installed}
    slowest = max(imports.values())
    full = timed(doctor, runs)
    for module, seconds in imports.items():
        print(f"python -c 'import {module}'{' ' * (14 - len(module))}{seconds:6.3f} s")
    print(f"check (with framework probes)      {full:6.3f} s   target {slowest + 0.3:5.3f} s  ratio {full / (slowest + 0.3):4.2f}")
    if "torch" in installed:
        collect = timed([sys.executable, "-m", "torch.utils.collect_env"], runs)
        print(f"python -m torch.utils.collect_env  {collect:6.3f} s   check is {collect / full:4.2f}x faster")


if __name__ == "__main__":
    main()
