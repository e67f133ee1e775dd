"""Peak memory and wall time of the hardened reader on hostile `--kb` and `--fixture` files (issue 28).

Each case runs `python -m cudnn_doctor check --no-frameworks` in a child with an address-space limit
(RLIMIT_AS, 2 GiB by default) and a deadline; its peak resident memory is the child's ru_maxrss
(os.wait4). The cases: a 1 kB YAML alias bomb (nine levels of nine aliases), a 100 MB file (real bytes:
YAML comment lines) a FIFO nobody writes to and /dev/zero, each as `--kb` and as `--fixture`, and a plain healthy
fixture as the floor. `--src DIR` runs another checkout's `src` (the code before issue 28, say) the same
way: what it did is the row's `exit` (`killed` when the deadline ended it, `MemoryError` when the limit did).

usage: python benchmarks/hostile_inputs.py [--src DIR] [--deadline S] [--memory MiB]   (POSIX)
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SMALL = """\
schema: machine-fixture/1
name: floor
os: linux
env: {PATH: /usr/bin}
files: {}
"""
BOMB_BODY = "# a billion laughs: nine levels of nine aliases, 9**9 values once expanded\n" * 6 + "".join(
    f"x{i}: &{chr(97 + i)} [{', '.join([f'*{chr(96 + i)}'] * 9 if i else ['lol'] * 9)}]\n" for i in range(9)
)


def cases(folder: Path) -> list[tuple[str, list[str]]]:
    small = folder / "small.yaml"
    small.write_text(SMALL, encoding="utf-8")
    bomb_kb = folder / "bomb-kb.yaml"
    bomb_kb.write_text(BOMB_BODY, encoding="utf-8")
    bomb_fixture = folder / "bomb-fixture.yaml"
    bomb_fixture.write_text(
        SMALL + "description: ok\nextra:\n" + "".join("  " + line + "\n" for line in BOMB_BODY.splitlines()),
        encoding="utf-8",
    )
    big = folder / "big.yaml"
    line = b"# " + b"x" * 97 + b"\n"
    with open(big, "wb") as handle:
        for _ in range(100):
            handle.write(line * 10_000)  # 1 MB each: 100 MB of real bytes
    fifo = folder / "fifo.yaml"
    os.mkfifo(fifo)
    check = ["check", "--no-frameworks", "--format", "json"]
    return [
        ("floor: healthy fixture", [*check, "--fixture", str(small)]),
        (f"--kb alias bomb ({bomb_kb.stat().st_size} B)", [*check, "--fixture", str(small), "--kb", str(bomb_kb)]),
        ("--kb 100 MB file", [*check, "--fixture", str(small), "--kb", str(big)]),
        ("--kb FIFO", [*check, "--fixture", str(small), "--kb", str(fifo)]),
        ("--kb /dev/zero", [*check, "--fixture", str(small), "--kb", "/dev/zero"]),
        (f"--fixture alias bomb ({bomb_fixture.stat().st_size} B)", [*check, "--fixture", str(bomb_fixture)]),
        ("--fixture 100 MB file", [*check, "--fixture", str(big)]),
        ("--fixture FIFO", [*check, "--fixture", str(fifo)]),
        ("--fixture /dev/zero", [*check, "--fixture", "/dev/zero"]),
    ]


def measure(src: Path, args: list[str], deadline: float, memory: int) -> tuple[str, float, float, str]:
    """(exit, seconds, peak MiB, last stderr line) of one child."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "cudnn_doctor", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            preexec_fn=limit,
            start_new_session=True,
        )
        killed = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                killed = True
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.01)
        elapsed = time.monotonic() - started
        process.returncode = 0  # reaped by wait4
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
    last = lines[-1] if lines else ""
    code = "killed" if killed else str(os.waitstatus_to_exitcode(status))
    if "MemoryError" in last:
        code += " MemoryError"
    elif any(line.startswith("Traceback") for line in lines):
        code += " traceback"
    peak = usage.ru_maxrss / 1024 if sys.platform != "darwin" else usage.ru_maxrss / (1 << 20)
    return code, elapsed, peak, last[:110]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--src", type=Path, default=HERE / "src", help="the `src` folder to run (default: this checkout's)"
    )
    parser.add_argument("--deadline", type=float, default=20.0, help="seconds before a case is killed (default 20)")
    parser.add_argument(
        "--memory", type=int, default=2048, help="the children's address-space limit in MiB (default 2048)"
    )
    args = parser.parse_args()
    if os.name != "posix":
        print("POSIX only (FIFOs, RLIMIT_AS, wait4)")
        return 0
    print(
        f"src: {args.src}  deadline {args.deadline:g} s  address space {args.memory} MiB  Python {sys.version.split()[0]}"
    )
    print(f"{'case':<34} {'exit':<16} {'seconds':>8} {'peak MiB':>9}  stderr")
    with tempfile.TemporaryDirectory() as folder:
        for name, command in cases(Path(folder)):
            code, elapsed, peak, last = measure(args.src, command, args.deadline, args.memory << 20)
            print(f"{name:<34} {code:<16} {elapsed:>8.2f} {peak:>9.1f}  {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
