"""`cudnn-doctor install` of a real cuDNN tarball against `tar` on the same archive, in one run.

The archive is NVIDIA's Linux tarball layout, `cudnn-linux-x86_64-<version>_cuda12-archive.tar.xz`
(include/, lib/ with the link chains libcudnn_X.so → .so.9 → .so.9.x.y, LICENSE), built from the
`nvidia-cudnn-cu12` wheel the tests download into ~/.cache/cudnn-doctor-tests (downloaded here if
absent) and kept there, so only the first run pays for the xz compression. Printed, one run each:

    tar -tvf                 the listing (one decompression)
    tar -xOf > /dev/null     one full decompression of every member
    install --dry-run        floor: tar -tvf + tar -xOf, target within 1.5x
    tar -xf + sync           floor of the install
    install --yes            the CLI, journaled, verified and checked; target within 1.2x

`--quick` does the same, best of 2, on a small synthetic archive (38 MB, seconds) and exits 1 only
when a ratio is more than 2x the one recorded here (QUICK_REFERENCE; on a few MB, starting Python
weighs too much for the real targets): a guard against a regression (say, the archive read three
times again), not a timing test.

usage: python benchmarks/install_speed.py [--quick] [--archive PATH] [--src OTHER_CHECKOUT/src]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from machine import describe as machine  # noqa: E402  (benchmarks/machine.py: this folder is sys.path[0])

import archives  # noqa: E402

CACHE = Path(os.environ.get("CUDNN_DOCTOR_TEST_CACHE") or Path.home() / ".cache" / "cudnn-doctor-tests")
WHEELS = CACHE / "wheels" / "manylinux_2_28_x86_64" / "nvidia-cudnn-cu12"
DRY_RUN_TARGET, INSTALL_TARGET = 1.5, 1.2
QUICK_REFERENCE = (
    0.6,
    1.4,
)  # --quick's (dry run, install) ratios, best of 2, after the one-pass install (a loaded 2-core EPYC)


def wheel() -> Path:
    """The nvidia-cudnn-cu12 wheel in the tests' cache, downloaded once."""
    found = sorted(WHEELS.glob("nvidia_cudnn_cu12-*.whl"))
    if found:
        return found[-1]
    WHEELS.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.11",
        "-d",
        str(WHEELS),
    ]
    for tag in ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64"):
        command += ["--platform", tag]
    subprocess.run([*command, "nvidia-cudnn-cu12"], check=True)
    return sorted(WHEELS.glob("nvidia_cudnn_cu12-*.whl"))[-1]


def _link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
    tar.addfile(info)


def _add(
    tar: tarfile.TarFile, name: str, size: int, stream: io.RawIOBase | io.BufferedIOBase, mode: int = 0o644
) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, mode, 1_700_000_000
    tar.addfile(info, stream)


def build_real(path: Path, source: Path) -> None:
    """NVIDIA's tarball from the wheel: headers, each library as .so.X.Y.Z with its .so.X and .so links, the license."""
    version = source.name.split("-")[1]  # 9.5.1.17
    release = ".".join(version.split(".")[:3])
    top = path.name[: -len(".tar.xz")]
    partial = path.with_suffix(".partial")
    with zipfile.ZipFile(source) as wheel_zip, open(partial, "wb") as out:
        xz = subprocess.Popen(["xz", "-T0", "-6", "-c"], stdin=subprocess.PIPE, stdout=out)
        assert xz.stdin is not None
        with tarfile.open(fileobj=xz.stdin, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            infos = wheel_zip.infolist()
            for info in infos:
                if info.filename.startswith("nvidia/cudnn/include/") and info.filename.endswith(".h"):
                    with wheel_zip.open(info) as stream:
                        _add(tar, f"{top}/include/{Path(info.filename).name}", info.file_size, stream)
            for info in infos:
                name = Path(info.filename).name
                if info.filename.startswith("nvidia/cudnn/lib/") and ".so." in name:
                    base, major = name.split(".so.")
                    with wheel_zip.open(info) as stream:
                        _add(tar, f"{top}/lib/{base}.so.{release}", info.file_size, stream, 0o755)
                    _link(tar, f"{top}/lib/{base}.so.{major}", f"{base}.so.{release}")
                    _link(tar, f"{top}/lib/{base}.so", f"{base}.so.{major}")
            license_text = next((wheel_zip.read(i) for i in infos if i.filename.endswith("License.txt")), b"LICENSE\n")
            _add(tar, f"{top}/LICENSE", len(license_text), io.BytesIO(license_text))
        xz.stdin.close()
        if xz.wait() != 0:
            sys.exit("xz failed")
    partial.rename(path)


_NIBBLES = bytes(b & 0x0F for b in range(256))


def build_quick(path: Path) -> None:
    """A small synthetic tarball in the same layout (8 libraries of 8 MB that xz must really decode, the link chains), for the guard."""
    top = path.name[: -len(".tar.xz")]
    header = archives.version_header("9.5.1.17").encode()
    with tarfile.open(path, "w:xz", preset=0) as tar:
        _add(tar, f"{top}/include/cudnn_version.h", len(header), io.BytesIO(header))
        for part in (
            "",
            "_graph",
            "_ops",
            "_cnn",
            "_adv",
            "_engines_precompiled",
            "_engines_runtime_compiled",
            "_heuristic",
        ):
            data = archives.fake_library(f"cudnn{part}") + os.urandom(8 << 20).translate(
                _NIBBLES
            )  # compresses 2x, as a library does
            _add(tar, f"{top}/lib/libcudnn{part}.so.9.5.1", len(data), io.BytesIO(data), 0o755)
            _link(tar, f"{top}/lib/libcudnn{part}.so.9", f"libcudnn{part}.so.9.5.1")
            _link(tar, f"{top}/lib/libcudnn{part}.so", f"libcudnn{part}.so.9")


def timed(command: list[str], env: Optional[dict[str, str]] = None, shell: bool = False) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        command if not shell else " ".join(command),
        shell=shell,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return time.perf_counter() - started


def measure(archive: Path, source: Path = REPO / "src", runs: int = 1) -> dict[str, float]:
    """Each figure the best of `runs` (one for the real tarball), the floors first (they warm the page cache alike)."""
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="cudnn-doctor-install-bench-") as root:
        for run in range(runs):
            for label, seconds in _one_run(archive, source, Path(root) / str(run)).items():
                figures.setdefault(label, []).append(seconds)
    return {label: min(samples) for label, samples in figures.items()}


def _one_run(archive: Path, source: Path, base: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    doctor = [sys.executable, "-m", "cudnn_doctor"]
    env = dict(os.environ, CUDNN_DOCTOR_STATE_DIR=str(base / "state"), PYTHONPATH=str(source))
    figures["tar -tvf"] = timed(["tar", "-tvf", str(archive)])
    figures["tar -xOf"] = timed(["tar", "-xOf", str(archive), ">", "/dev/null"], shell=True)
    dry = archives.toolkit(base / "dry" / "cuda-12.6", "12.6")
    figures["install --dry-run"] = timed([*doctor, "install", str(archive), "--into", str(dry), "--dry-run"], env=env)
    (base / "tar").mkdir()
    started = time.perf_counter()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(base / "tar")], check=True)
    subprocess.run(["sync"], check=True)
    figures["tar -xf + sync"] = time.perf_counter() - started
    shutil.rmtree(base / "tar")
    subprocess.run(["sync"], check=True)
    target = archives.toolkit(base / "doctor" / "cuda-12.6", "12.6")
    started = time.perf_counter()
    done = subprocess.run(
        [*doctor, "install", str(archive), "--into", str(target), "--yes"], env=env, capture_output=True, text=True
    )
    figures["install"] = time.perf_counter() - started
    if done.returncode not in (
        0,
        1,
    ):  # 1: the checks afterwards found something (no driver here), the install itself is done
        sys.exit(f"install failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    if not (target / "lib64").is_dir() or not any((target / "lib64").iterdir()):
        sys.exit("the install wrote nothing: the comparison is void")
    shutil.rmtree(base)
    return figures


def report(figures: dict[str, float]) -> tuple[float, float]:
    """Print every figure and the two ratios against their floors."""
    for label, seconds in figures.items():
        print(f"  {label:22} {seconds:7.2f} s")
    dry = figures["install --dry-run"] / (figures["tar -tvf"] + figures["tar -xOf"])
    inst = figures["install"] / figures["tar -xf + sync"]
    print(f"  install --dry-run / (tar -tvf + tar -xOf) = {dry:5.2f}  (target {DRY_RUN_TARGET} on a real tarball)")
    print(f"  install / (tar -xf + sync)                = {inst:5.2f}  (target {INSTALL_TARGET} on a real tarball)")
    return dry, inst


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--quick", action="store_true", help="a small synthetic archive; exit 1 only on a >2x regression"
    )
    parser.add_argument("--archive", type=Path, help="time this cuDNN tarball instead of building one")
    parser.add_argument(
        "--src",
        type=Path,
        default=REPO / "src",
        help="the cudnn_doctor sources to time (another checkout's, for before/after)",
    )
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.quick:
        with tempfile.TemporaryDirectory(prefix="cudnn-doctor-install-quick-") as root:
            archive = Path(root) / "cudnn-linux-x86_64-9.5.1.17_cuda12-archive.tar.xz"
            build_quick(archive)
            print(f"archive: {archive.name}, {archive.stat().st_size / 1e6:,.1f} MB (synthetic)")
            ratios = report(measure(archive, args.src, runs=2))
        # On a few MB, starting Python dominates: the guard compares with the ratios this archive gave when the
        # install was made one pass, not with the targets, and fails only past twice those.
        over = [ratio / reference for ratio, reference in zip(ratios, QUICK_REFERENCE)]
        if max(over) > 2:
            print(f"regression: a ratio is {max(over):.1f}x what it was (the guard allows 2x)")
            return 1
        print(f"  within the guard: {max(over):.2f}x the reference ratios {QUICK_REFERENCE}")
        return 0
    archive = args.archive
    if archive is None:
        source = wheel()
        archive = CACHE / "archives" / f"cudnn-linux-x86_64-{source.name.split('-')[1]}_cuda12-archive.tar.xz"
        if not archive.exists():
            archive.parent.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            build_real(archive, source)
            print(f"built {archive} from {source.name} in {time.perf_counter() - started:.0f} s")
    print(f"archive: {archive.name}, {archive.stat().st_size / 1e6:,.1f} MB")
    report(measure(archive, args.src))
    return 0


if __name__ == "__main__":
    sys.exit(main())
