"""How a full `check` scales with the number of Python environments (issue 15, part 2).

It builds a fake conda installation: a base environment and N environments under `envs/`, each
a venv (no system site-packages) holding a small fake `tensorflow` package whose import sleeps
~0.2 s and allocates ~20 MB, with a `tensorflow-2.15.0.dist-info` the probes recognise and a build
report (CUDA 12.2, cuDNN 8) that makes the doctor confirm the libraries TensorFlow would load by
name. Then it times `check --format json` with CONDA_PREFIX pointing at the base, per size, and
prints: wall time, the ratio to the previous size, the target (N / cores) × slowest import + 0.5 s
and the ratio to it, how much faster than the target the time grew from the previous size, and the
peak of the summed memory (RSS, from /proc or psutil) of the doctor's children against the bound:
pool size × (one import's peak + a bare interpreter, the fork a framework child may take for the
loader check). Memory and time come from two runs of each size: watching the memory reads /proc every
20 ms, which on a 2-core machine takes CPU from the children being timed (~0.2 s of 6.5 s at 50).

usage: python benchmarks/envs_scale.py [--sizes 1,10,50] [--src DIR] [--busy] [--quick]
`--busy`: the fake import spins the CPU for its 0.2 s instead of sleeping, as a real import does
(a sleeping import lets unbounded children overlap for free; a working one does not).
`--quick`: sizes 1 and 10; exit 1 only when the largest size takes more than 2× its target (a guard
against a regression such as serial children or all-pairs work, not a timing test; the smaller
size is mostly the cost of a check with no environment, benchmarks/check_speed.py's figure).
`--src`: the doctor's source folder (default: this checkout's src), to measure another version
against the same environments.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import venv
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
IMPORT_SECONDS = 0.2
FAKE_INIT = f'''"""A stand-in for a GPU framework: slow to import, some memory, a build report."""
import os as _os
import time as _time

_ballast = bytearray(20 << 20)  # touched below, so it counts in the child's memory
for _i in range(0, len(_ballast), 4096):
    _ballast[_i] = 1
if _os.environ.get("ENVS_SCALE_BUSY"):  # a real import works the CPU: spin instead of sleeping
    _end = _time.process_time() + {IMPORT_SECONDS}
    while _time.process_time() < _end:
        pass
else:
    _time.sleep({IMPORT_SECONDS})
__version__ = "2.15.0"


class _Test:
    @staticmethod
    def is_built_with_cuda():
        return True


class _Sysconfig:
    @staticmethod
    def get_build_info():
        return {{"cuda_version": "12.2", "cudnn_version": "8", "is_cuda_build": True}}


class _Config:
    @staticmethod
    def list_physical_devices(kind):
        return []


test, sysconfig, config = _Test(), _Sysconfig(), _Config()
'''
METADATA = "Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.15.0\n"


def make_env(prefix: Path) -> Path:
    """A venv with the fake framework; its interpreter."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False, symlinks=os.name != "nt").create(prefix)
    python = prefix / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = next(prefix.glob("lib/python*/site-packages")) if os.name != "nt" else prefix / "Lib" / "site-packages"
    (site / "tensorflow").mkdir()
    (site / "tensorflow" / "__init__.py").write_text(FAKE_INIT, encoding="utf-8")
    info = site / "tensorflow-2.15.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(METADATA, encoding="utf-8")
    return python


# what the doctor imports, made visible in the base environment without their dist-info (so the
# interpreter the doctor runs in has no framework: the one running this script may have torch)
DOCTOR_MODULES = (
    "yaml",
    "_yaml",
    "elftools",
    "pefile",
    "peutils",
    "ordlookup",
    "rich",
    "pygments",
    "markdown_it",
    "mdurl",
)
DOCTOR_MODULES += ("pynvml", "packaging", "platformdirs", "filelock", "typing_extensions")


def make_conda(root: Path, count: int) -> Path:
    """A base that can run the doctor, with `count` environments in envs/; the base's interpreter."""
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(root)
    site = next(root.glob("lib/python*/site-packages")) if os.name != "nt" else root / "Lib" / "site-packages"
    for name in DOCTOR_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        source = origin.parent if spec.submodule_search_locations else origin
        if os.name == "nt":
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, site / source.name)
        else:
            (site / source.name).symlink_to(source)
    for index in range(count):
        make_env(root / "envs" / f"env{index:03d}")
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


class ChildMemory:
    """Samples the summed RSS of every descendant of one process until stopped; keeps the peak."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.most = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            sizes = _descendant_rss(self.pid)
            self.peak = max(self.peak, sum(sizes))
            self.most = max(self.most, len(sizes))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _descendant_rss(pid: int) -> list[int]:
    """RSS in bytes of each process below `pid`."""
    try:
        import psutil  # type: ignore[import-not-found]

        try:
            return [c.memory_info().rss for c in psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            return []
    except ImportError:
        pass
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    below, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return [rss[p] for p in below if rss.get(p, 0) > 0]


def run_check(python: Path, src: Path, workdir: Path, sample: bool = True) -> tuple[float, int, int, int]:
    """Wall seconds, exit code, peak summed child RSS, most children at once of one `check` run by the base's `python`.
    Without `sample` the memory is not watched (0, 0): its /proc scan every 20 ms takes CPU from the children."""
    base = python.parent.parent
    environment = {**os.environ, "CONDA_PREFIX": str(base), "PYTHONPATH": str(src), "PWD": str(workdir)}
    for name in ("CONDA_EXE", "VIRTUAL_ENV"):
        environment.pop(name, None)
    argv = [str(python), "-m", "cudnn_doctor", "check", "--format", "json", "--no-color"]
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=environment, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    memory = ChildMemory(process.pid) if sample else None
    code = process.wait()
    wall = time.perf_counter() - start
    if memory is None:
        return wall, code, 0, 0
    memory.stop()
    return wall, code, memory.peak, memory.most


def slowest_import(python: Path) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of one fake framework import in a fresh interpreter (best of 3)."""
    return _best_of(python, "import tensorflow")


def bare_interpreter(python: Path) -> int:
    """Peak RSS (bytes) of an interpreter that imports nothing: a framework child's fork for the loader check is one."""
    return _best_of(python, "pass")[1]


def _best_of(python: Path, statement: str) -> tuple[float, int]:
    script = (
        f"import resource; {statement}; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
        if os.name != "nt"
        else f"{statement}; print(0)"
    )
    best, peak = float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        out = subprocess.run([str(python), "-c", script], capture_output=True, text=True, check=True).stdout
        best = min(best, time.perf_counter() - start)
        peak = max(peak, int(out.strip() or 0) * 1024)
    return best, peak


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,50")
    parser.add_argument("--src", default=str(ROOT / "src"))
    parser.add_argument(
        "--busy",
        action="store_true",
        help="the fake import spins the CPU for its 0.2 s instead of sleeping, as a real import does",
    )
    parser.add_argument(
        "--quick", action="store_true", help="1 and 10 environments; exit 1 only on a >2x regression against the target"
    )
    args = parser.parse_args(argv)
    sizes = [1, 10] if args.quick else [int(s) for s in args.sizes.split(",")]
    cores = os.cpu_count() or 1
    if args.busy:
        os.environ["ENVS_SCALE_BUSY"] = "1"  # inherited by the doctor, and by its children through it
    out = sys.stdout
    mode = "spins the CPU" if args.busy else "sleeps"
    out.write(
        f"machine: {platform.platform()}, {cores} cores, Python {platform.python_version()}; doctor from {args.src}; the fake import {mode}\n"
    )
    scratch = Path(tempfile.mkdtemp(prefix="envs-scale-"))
    worst = 0.0
    try:
        single = make_env(scratch / "single")
        seconds, child_peak = slowest_import(single)
        fork_peak = bare_interpreter(single)
        bound = cores * (child_peak + fork_peak)
        out.write(
            f"one fake framework import (interpreter start included): {seconds:.3f} s, {child_peak / 2**20:.0f} MiB; a bare interpreter {fork_peak / 2**20:.0f} MiB\n"
        )
        out.write(
            f"target: envs / {cores} cores x {seconds:.3f} s + 0.5 s; child memory bound: {cores} x ({child_peak / 2**20:.0f} + {fork_peak / 2**20:.0f}) MiB\n"
        )
        out.write(
            f"{'envs':>5} {'wall s':>8} {'x prev':>7} {'target s':>9} {'/target':>8} {'growth/target':>14} {'children':>9} {'child MiB':>10} {'bound MiB':>10}\n"
        )
        previous: Optional[tuple[float, float]] = None
        for size in sizes:
            base = scratch / f"conda{size}"
            python = make_conda(base, size)
            _, _, peak, most = run_check(python, Path(args.src).resolve(), scratch)  # memory, watched from /proc
            wall, code, _, _ = run_check(python, Path(args.src).resolve(), scratch, sample=False)  # time, unwatched
            target = size / cores * seconds + 0.5
            step = drift = "-"
            if previous is not None:  # how much faster than the target the cost grew from the previous size
                growth = (wall / previous[0]) / (target / previous[1])
                step, drift = f"{wall / previous[0]:.2f}", f"{growth:.2f}"
            worst = wall / target  # the largest size's, in the end
            row = f"{size:>5} {wall:>8.2f} {step:>7} {target:>9.2f} {wall / target:>8.2f} {drift:>14} {most:>9} {peak / 2**20:>10.0f} {bound / 2**20:>10.0f}"
            out.write(f"{row}  (exit {code})\n")
            out.flush()
            previous = (wall, target)
            shutil.rmtree(base, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.quick and worst > 2.0:
        out.write(f"REGRESSION: {sizes[-1]} environments took {worst:.2f}x their target (limit 2x)\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
