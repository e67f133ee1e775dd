"""The Linux loader emulation against the real one: generated layouts, real shared objects, glibc's verdict.

Each layout builds small libraries with gcc — libdoca.so (needs libdocb.so) and copies of
libdocb.so (good, 0 bytes, another machine) in several folders — and an executable with
DT_RPATH or DT_RUNPATH, libdoca.so with its own RPATH / RUNPATH / $ORIGIN, and an
LD_LIBRARY_PATH. `ldd` says which file ld.so takes or why it fails; the emulation must agree.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.loader.resolve import Resolver
from cudnn_doctor.system.live import LiveSystem

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        sys.platform != "linux" or shutil.which("gcc") is None or shutil.which("ldd") is None,
        reason="needs Linux with gcc and ldd",
    ),
]
LAYOUTS = 60
DIRS = ("d0", "d1", "d2", "d3")


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    """Compiled once: the object files every layout links."""
    root = tmp_path_factory.mktemp("objects")
    (root / "b.c").write_text("int b_value(void) { return 2; }\n")
    (root / "a.c").write_text("int b_value(void);\nint a_value(void) { return b_value() + 1; }\n")
    (root / "main.c").write_text("int a_value(void);\nint main(void) { return a_value() == 3 ? 0 : 1; }\n")
    for name in ("a", "b"):
        subprocess.run(["gcc", "-c", "-fPIC", "-o", str(root / f"{name}.o"), str(root / f"{name}.c")], check=True)
    subprocess.run(["gcc", "-c", "-o", str(root / "main.o"), str(root / "main.c")], check=True)
    good_b = root / "libdocb.so"
    subprocess.run(["gcc", "-shared", "-o", str(good_b), "-Wl,-soname,libdocb.so", str(root / "b.o")], check=True)
    foreign = bytearray(good_b.read_bytes())
    foreign[18:20] = (183).to_bytes(2, "little")  # e_machine = EM_AARCH64
    (root / "foreign.so").write_bytes(bytes(foreign))
    return root


def _dynamic_flags(kind: str, paths: list[str]) -> list[str]:
    if kind == "none" or not paths:
        return []
    tags = "--disable-new-dtags" if kind == "rpath" else "--enable-new-dtags"
    return [f"-Wl,{tags},-rpath,{':'.join(paths)}"]


def _layout(seed: int, objects: Path, base: Path) -> tuple[Path, str, dict]:
    rng = random.Random(seed)
    for folder in (*DIRS, "a", "bin"):
        (base / folder).mkdir(parents=True)
    copies = {}
    for folder in DIRS:
        kind = rng.choices(["none", "good", "zero", "foreign"], weights=[45, 35, 10, 10])[0]
        copies[folder] = kind
        target = base / folder / "libdocb.so"
        if kind == "good":
            shutil.copy(objects / "libdocb.so", target)
        elif kind == "zero":
            target.write_bytes(b"")
        elif kind == "foreign":
            shutil.copy(objects / "foreign.so", target)
    link_b = base / "link" / "libdocb.so"
    link_b.parent.mkdir()
    shutil.copy(objects / "libdocb.so", link_b)
    a_kind = rng.choice(["none", "rpath", "runpath"])
    a_paths = [rng.choice([str(base / d), f"$ORIGIN/../{d}"]) for d in rng.sample(DIRS, rng.randint(1, 2))]
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-o",
            str(base / "a" / "libdoca.so"),
            "-Wl,-soname,libdoca.so",
            str(objects / "a.o"),
            f"-L{link_b.parent}",
            "-ldocb",
            *_dynamic_flags(a_kind, a_paths),
        ],
        check=True,
    )
    main_kind = rng.choice(["rpath", "runpath", "none"])
    main_paths = [str(base / "a")] + [str(base / d) for d in rng.sample(DIRS, rng.randint(0, 2))]
    executable = base / "bin" / "main"
    subprocess.run(
        [
            "gcc",
            "-o",
            str(executable),
            str(objects / "main.o"),
            f"-L{base / 'a'}",
            "-ldoca",
            f"-L{link_b.parent}",
            "-Wl,--allow-shlib-undefined",
            *_dynamic_flags(main_kind, main_paths),
        ],
        check=True,
    )
    shutil.rmtree(link_b.parent)
    ld_path = [str(base / d) for d in rng.sample([*DIRS, "a"], rng.randint(0, 3))]
    if main_kind == "none" and str(base / "a") not in ld_path:
        ld_path.append(str(base / "a"))
    return (
        executable,
        ":".join(ld_path),
        {"copies": copies, "a": (a_kind, a_paths), "main": (main_kind, main_paths), "LD_LIBRARY_PATH": ld_path},
    )


def _ldd(executable: Path, ld_path: str) -> dict[str, str]:
    """name → path | 'not found' | 'error: <path>' as glibc reports it."""
    done = subprocess.run(
        ["ldd", str(executable)],
        capture_output=True,
        text=True,
        env={"LD_LIBRARY_PATH": ld_path, "PATH": "/usr/bin:/bin"},
    )
    result = {}
    for line in done.stdout.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow and name.startswith("libdoc"):
            result[name] = "not found" if rest.startswith("not found") else rest.split(" (")[0]
    output = done.stdout + done.stderr  # ldd prints the loader's fatal error on stdout
    if "error while loading shared libraries" in output:
        failing = output.split("shared libraries: ", 1)[1].split(":", 1)[0]
        result["libdocb.so" if failing.endswith("libdocb.so") else "libdoca.so"] = f"error: {failing}"
    return result


def _emulate(executable: Path) -> dict[str, str]:
    system = LiveSystem()
    roots = system.binary(str(executable)).imports
    resolution = Resolver(system).resolve("test", str(executable), roots)
    result = {}
    for step in resolution.steps:
        if not step.name.startswith("libdoc") or step.reused:
            continue
        if step.winner:
            result[step.name] = step.winner
        elif step.blocked_by:
            result[step.name] = f"error: {step.blocked_by}"
        else:
            result[step.name] = "not found"
    return result


@pytest.mark.parametrize("seed", range(LAYOUTS))
def test_emulation_matches_ld_so(seed, objects, tmp_path, monkeypatch):
    executable, ld_path, layout = _layout(seed, objects, tmp_path)
    monkeypatch.setenv("LD_LIBRARY_PATH", ld_path)
    real = _ldd(executable, ld_path)
    emulated = _emulate(executable)
    assert set(real) == {"libdoca.so", "libdocb.so"} or any(v.startswith("error") for v in real.values()), real
    for name, verdict in real.items():
        assert _normal(emulated.get(name)) == _normal(verdict), (layout, real, emulated)


def _normal(verdict):
    """ld.so prints $ORIGIN paths unnormalized (a/../d1); compare the files, not the spelling."""
    if verdict is None or verdict == "not found":
        return verdict
    prefix, _, path = verdict.rpartition(" ")
    return f"{prefix} {os.path.normpath(path)}".strip()
