"""Wall time of `cudnn-doctor check` on this machine, against its peers in the same run.

Prints, for N runs each (median): `check --no-frameworks`, `check` (frameworks imported in
child interpreters, concurrently), the slowest single framework import on its own, and
PyTorch's `python -m torch.utils.collect_env` when torch is installed. Ratios are printed
against the peer each target is defined by: --no-frameworks against 0.2 s, the full check
against (slowest single import + 0.3 s), collect_env against the full check.

It then times `check --no-frameworks` on a synthetic machine: PATH and LD_LIBRARY_PATH of
50, 100 and 200 folders (10 files each) and a virtual environment whose site-packages holds
50,000 files (TensorFlow's metadata among them, so the loader searches every folder for the
CUDA runtime and cuDNN). Target: under 1 s at 200 folders, growing no worse than linearly.

usage: python benchmarks/check_speed.py [--runs N] [--skip-synthetic]
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
    parser.add_argument("--skip-synthetic", action="store_true")
    args = parser.parse_args()
    runs = args.runs
    script = Path(sys.executable).with_name("cudnn-doctor.exe" if sys.platform == "win32" else "cudnn-doctor")
    doctor = [str(script) if script.exists() else sys.executable, *([] if script.exists() else ["-m", "cudnn_doctor"]), "check"]
    python_alone = timed([sys.executable, "-c", "pass"], runs)
    quick = timed([*doctor, "--no-frameworks"], runs)
    print(f"python -c pass                     {python_alone:6.3f} s")
    print(f"check --no-frameworks              {quick:6.3f} s   target 0.200 s  ratio {quick / 0.2:4.2f}")
    if not args.skip_synthetic:
        synthetic(doctor, runs)
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


def synthetic(doctor: list[str], runs: int) -> None:
    """check --no-frameworks against long library paths and a 50,000-file site-packages."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cudnn-doctor-bench-") as root:
        base = Path(root)
        site = base / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        site.mkdir(parents=True)
        (base / "venv" / "bin").mkdir()
        (base / "venv" / "bin" / "python").symlink_to(sys.executable)
        (base / "venv" / "pyvenv.cfg").write_text(f"version = {sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}\n")
        for name in ("tensorflow-2.10.0", "numpy-1.26.4"):
            (site / f"{name}.dist-info").mkdir()
        files = 0
        for package in range(500):
            folder = site / f"pkg{package}"
            folder.mkdir()
            for module in range(99):
                (folder / f"m{module}.py").write_text("")
            files += 100
        (site / "extra").mkdir()
        for extra in range(50_000 - files):
            (site / "extra" / f"x{extra}.py").write_text("")
        folders = []
        for index in range(200):
            folder = base / "path" / f"dir{index:03d}"
            folder.mkdir(parents=True)
            for file in range(10):
                (folder / f"lib{file}.so.1").write_text("")
            folders.append(str(folder))
        print("synthetic machine (site-packages: 50,000 files):")
        previous = None
        for count in (50, 100, 200):
            env = dict(
                os.environ,
                PATH=":".join(folders[:count] + [os.environ.get("PATH", "")]),
                LD_LIBRARY_PATH=":".join(folders[:count]),
                VIRTUAL_ENV=str(base / "venv"),
            )
            seconds = timed_env([*doctor, "--no-frameworks"], runs, env)
            growth = f"  x{seconds / previous[1]:4.2f} for x{count / previous[0]:.0f} folders" if previous else ""
            print(f"  {count:3d} folders on PATH and LD_LIBRARY_PATH  {seconds:6.3f} s{growth}")
            previous = (count, seconds)
        print(f"  target: under 1 s at 200 folders  ratio {previous[1] / 1.0:4.2f}")


def timed_env(command: list[str], runs: int, env: dict) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


if __name__ == "__main__":
    main()
