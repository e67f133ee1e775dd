"""What the roots of native code outside the frameworks cost (issue 29): 5 environments × 200 packages.

It builds a fake conda installation (a base that can run the doctor, and 5 venvs under `envs/`), each
environment holding 200 packages with a small real ELF extension module (built once with the C
compiler, then copied), a pure-Python subfolder and a dist-info; every 50th package's extension
imports libcudart.so.12 (DT_NEEDED), so 4 per environment are roots (their cudart is missing: each
is a dependency-missing). Then it times, each cold (an empty state folder: no scan or native-names
cache; the OS page cache is warm) and warm (the same state folder again):

- the added work alone: `probes.native.probe_package_loads` over the 6 environments, in a fresh
  interpreter (walk, header reads or cache hits, and the resolution of the roots);
- a whole `check --format json` with and without the new roots (the probe replaced by one that
  finds nothing), and their ratio.

Targets (issue 29): the added work ≤ 0.5 s warm and ≤ 3 s cold.

usage: python benchmarks/native_roots.py [--envs 5] [--packages 200] [--repeat 3] [--keep DIR]
Linux only (it builds ELF files with `cc`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from envs_scale import make_conda  # noqa: E402  (the base that can run the doctor)

CUDA_EVERY = 50  # every 50th package's extension imports libcudart.so.12

ADDED_WORK = """
import json, sys, time
from cudnn_doctor.facts import PythonEnv
from cudnn_doctor.loader.resolve import Resolver
from cudnn_doctor.probes.native import probe_package_loads
from cudnn_doctor.system.live import LiveSystem
pythons = tuple(PythonEnv(p, v, "venv", i == 0) for i, (p, v) in enumerate(json.loads(sys.argv[1])))
system = LiveSystem()
start = time.perf_counter()
found = probe_package_loads(system, Resolver(system), pythons, [])
print(json.dumps({"seconds": time.perf_counter() - start, "loads": len(found), "packages": sorted({r.package for r in found}), "roots": sum(1 for r in found for s in r.steps if s.how == "root")}))
"""

WITHOUT = """
import runpy, sys
import cudnn_doctor.probes.resolution as resolution
if sys.argv[1] == "without":
    resolution.probe_package_loads = lambda *args, **kwargs: ()
sys.argv = ["cudnn-doctor", "check", "--format", "json", "--no-color"]
runpy.run_module("cudnn_doctor", run_name="__main__")
"""


def build_elves(folder: Path) -> tuple[Path, Path]:
    """(a plain extension, one that imports libcudart.so.12): small real ELF shared objects."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stub.c").write_text("int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n")
    (folder / "ext.c").write_text('int PyInit__core(void) { return 0; }\nconst char *greeting = "hello";\n')
    (folder / "cuda.c").write_text(
        "int cudaGetDeviceCount(int *n);\nint PyInit__core(void) { int n; return cudaGetDeviceCount(&n); }\n"
    )
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("native_roots.py needs a C compiler (cc) to build its ELF files")
    run = lambda *args: subprocess.run([cc, *args], cwd=folder, check=True)  # noqa: E731
    run("-shared", "-fPIC", "-o", "libcudart.so.12", "-Wl,-soname,libcudart.so.12", "stub.c")
    run("-shared", "-fPIC", "-o", "plain.so", "ext.c")
    run("-shared", "-fPIC", "-o", "cuda.so", "cuda.c", "-L.", "-l:libcudart.so.12")
    return folder / "plain.so", folder / "cuda.so"


def fill_env(prefix: Path, packages: int, plain: Path, cuda: Path) -> None:
    site = next(prefix.glob("lib/python*/site-packages"))
    tag = f"cpython-{sys.version_info.major}{sys.version_info.minor}-x86_64-linux-gnu"
    for index in range(packages):
        name = f"pkg{index:03d}"
        package = site / name
        (package / "sub").mkdir(parents=True)
        (package / "__init__.py").write_text("from ._core import *\n")
        for module in ("a", "b", "c"):
            (package / "sub" / f"{module}.py").write_text("VALUE = 1\n")
        shutil.copyfile(cuda if index % CUDA_EVERY == 0 else plain, package / f"_core.{tag}.so")
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")


def build(root: Path, envs: int, packages: int) -> Path:
    plain, cuda = build_elves(root / "elves")
    python = make_conda(root / "conda", 0)
    for index in range(envs):
        prefix = root / "conda" / "envs" / f"env{index:d}"
        venv.EnvBuilder(with_pip=False, symlinks=True).create(prefix)
        fill_env(prefix, packages, plain, cuda)
    return python


def added_work(python: Path, state: Path) -> dict:
    base = python.parent.parent
    executables = [base / "bin" / "python", *sorted((base / "envs").glob("*/bin/python"))]
    version = ".".join(map(str, sys.version_info[:3]))
    argument = json.dumps([[str(e), version] for e in executables])
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CUDNN_DOCTOR_STATE_DIR": str(state)}
    result = subprocess.run(
        [str(python), "-c", ADDED_WORK, argument], env=environment, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def check(python: Path, state: Path, how: str, workdir: Path) -> float:
    base = python.parent.parent
    environment = {
        **os.environ,
        "CONDA_PREFIX": str(base),
        "PYTHONPATH": str(ROOT / "src"),
        "CUDNN_DOCTOR_STATE_DIR": str(state),
        "PWD": str(workdir),
    }
    for name in ("CONDA_EXE", "VIRTUAL_ENV"):
        environment.pop(name, None)
    start = time.perf_counter()
    subprocess.run(
        [str(python), "-c", WITHOUT, how],
        env=environment,
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=5)
    parser.add_argument("--packages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="build the tree here and keep it")
    options = parser.parse_args()
    if os.name == "nt":
        sys.exit("native_roots.py builds ELF files: Linux only")
    root = Path(options.keep) if options.keep else Path(tempfile.mkdtemp(prefix="native-roots-"))
    try:
        started = time.perf_counter()
        python = build(root, options.envs, options.packages)
        print(
            f"tree: {options.envs} environments × {options.packages} packages (+ the base) in {time.perf_counter() - started:.1f} s, {root}"
        )
        states = root / "states"
        cold = [added_work(python, states / f"cold{i}") for i in range(options.repeat)]
        warm = [added_work(python, states / "cold0") for _ in range(options.repeat)]
        found = cold[0]
        print(f"roots: {found['roots']} files, {found['loads']} package loads ({len(found['packages'])} package names)")
        cold_s, warm_s = statistics.median(r["seconds"] for r in cold), statistics.median(r["seconds"] for r in warm)
        print(
            f"added work (probe_package_loads), median of {options.repeat}: cold {cold_s:.3f} s (target ≤ 3 s), warm {warm_s:.3f} s (target ≤ 0.5 s)"
        )
        workdir = root / "work"
        workdir.mkdir(exist_ok=True)
        figures = {}
        for how in ("without", "with"):
            colds = [check(python, states / f"check-{how}-{i}", how, workdir) for i in range(options.repeat)]
            warms = [check(python, states / f"check-{how}-0", how, workdir) for _ in range(options.repeat)]
            figures[how] = (statistics.median(colds), statistics.median(warms))
        for label, index in (("cold", 0), ("warm", 1)):
            without, with_ = figures["without"][index], figures["with"][index]
            print(
                f"check {label}: without the new roots {without:.2f} s, with {with_:.2f} s, +{with_ - without:.2f} s, ratio {with_ / without:.2f}"
            )
        ok = cold_s <= 3.0 and warm_s <= 0.5
        print("targets met" if ok else "TARGETS MISSED")
        return 0 if ok else 1
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
