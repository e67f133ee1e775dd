"""Builders of cuDNN archives in NVIDIA's real layouts, with small fake libraries and a real cudnn_version.h."""

from __future__ import annotations

import io
import os
import struct
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Optional

PARTS8 = ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")


def version_header(version: str) -> str:
    major, minor, patch = version.split(".")[:3]
    formula = (
        "CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL"
        if int(major) >= 9
        else "CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL"
    )
    return (
        f"/* cudnn_version.h */\n#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n\n#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n"
        f"#define CUDNN_PATCHLEVEL {patch}\n\n#define CUDNN_VERSION ({formula})\n\n#endif\n"
    )


def fake_library(name: str, size: int = 4096) -> bytes:
    """The file's magic (MZ for a .dll, ELF for a .so) and random bytes: too short to parse, so the machine stays unknown."""
    return (b"MZ" if name.endswith(".dll") else b"\x7fELF") + name.encode() + os.urandom(size)


def pe_image(machine: int = 0x8664) -> bytes:
    """The smallest PE32+ header pefile reads (0x8664 = x64, 0xAA64 = arm64), then random filler."""
    dos = bytearray(0x40)
    dos[:2], dos[0x3C:0x40] = b"MZ", struct.pack("<I", 0x40)
    optional = bytearray(240)
    optional[:2] = struct.pack("<H", 0x20B)
    optional[32:40] = struct.pack("<II", 0x1000, 0x200)  # section and file alignment
    optional[56:64] = struct.pack("<II", 0x1000, 0x200)  # size of image and of headers
    optional[108:112] = struct.pack("<I", 16)  # data directories
    header = struct.pack("<HHIIIHH", machine, 0, 0, 0, 0, len(optional), 0x2022)
    return bytes(dos) + b"PE\0\0" + header + bytes(optional) + os.urandom(512)


def windows_members(version: str = "8.5.0.96", cuda: int = 11, layout: str = "archive") -> dict[str, bytes]:
    """{member name: bytes} for the 8.x `cuda/` zip, the 8.3+ `_archive` zip, or the 9.x layout."""
    major = int(version.split(".")[0])
    parts = (
        PARTS8
        if major == 8
        else ("graph", "ops", "cnn", "adv", "engines_precompiled", "engines_runtime_compiled", "heuristic")
    )
    top = {
        "cuda": "cuda",
        "archive": f"cudnn-windows-x86_64-{version}_cuda{cuda}-archive",
        "v9": f"cudnn-windows-x86_64-{version}_cuda{cuda}-archive",
    }[layout]
    bin_dir, include, lib = (
        ("bin", "include", "lib/x64") if layout != "v9" else (f"bin/{cuda}.x", f"include/{cuda}.x", f"lib/{cuda}.x/x64")
    )
    members = {f"{top}/{bin_dir}/cudnn64_{major}.dll": fake_library(f"cudnn64_{major}.dll")}
    for part in parts:
        members[f"{top}/{bin_dir}/cudnn_{part}64_{major}.dll"] = fake_library(f"cudnn_{part}64_{major}.dll")
        members[f"{top}/{lib}/cudnn_{part}64_{major}.lib"] = b"lib" + part.encode()
    members[f"{top}/{lib}/cudnn.lib"] = b"lib"
    members[f"{top}/{include}/cudnn.h"] = b'#include "cudnn_version.h"\n'
    members[f"{top}/{include}/cudnn_version.h"] = version_header(version).encode()
    members[f"{top}/LICENSE"] = b"license text"
    return members


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def native_archive(folder: Path, version: str = "8.9.7.29", cuda: int = 12) -> Path:
    """The archive a user of this OS downloads: the Windows zip on Windows, the Linux .tar.xz elsewhere."""
    if sys.platform == "win32":
        return write_zip(
            folder / f"cudnn-windows-x86_64-{version}_cuda{cuda}-archive.zip", windows_members(version, cuda)
        )
    return linux_tar(folder / f"cudnn-linux-x86_64-{version}_cuda{cuda}-archive.tar.xz", version, cuda)


def linux_tar(path: Path, version: str = "8.9.7.29", cuda: int = 12) -> Path:
    """The Linux `.tar.xz` layout: include/ and lib/ with the real symlink chains."""
    major = version.split(".")[0]
    short = ".".join(version.split(".")[:3])
    top = f"cudnn-linux-x86_64-{version}_cuda{cuda}-archive"
    with tarfile.open(path, "w:xz") as archive:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))

        def link(name: str, target: str) -> None:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)

        add("include/cudnn_version.h", version_header(version).encode())
        add("include/cudnn.h", b'#include "cudnn_version.h"\n')
        for part in ("",) + tuple(f"_{p}" for p in PARTS8):
            real = f"libcudnn{part}.so.{short}"
            add(f"lib/{real}", fake_library(real))
            link(f"lib/libcudnn{part}.so.{major}", real)
            link(f"lib/libcudnn{part}.so", f"libcudnn{part}.so.{major}")
        add("LICENSE", b"license")
    return path


def toolkit(root: Path, version: str = "12.6", windows: Optional[bool] = None) -> Path:
    """A CUDA toolkit folder the probes recognise, laid out for this OS unless `windows` says which."""
    windows = sys.platform == "win32" if windows is None else windows
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / ("lib/x64" if windows else "lib64")).mkdir(parents=True)
    (root / "bin" / ("nvcc.exe" if windows else "nvcc")).write_bytes(b"nvcc")
    (root / "include" / "cuda.h").write_text(
        f"#define CUDA_VERSION {int(version.split('.')[0]) * 1000 + int(version.split('.')[1]) * 10}\n"
    )
    (root / "version.json").write_text('{"cuda": {"version": "%s"}}' % version)
    return root


def tree(root: Path) -> dict[str, object]:
    """Every file and link below root with its bytes or link target: equality means byte-identical."""
    state: dict[str, object] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            state[rel] = ("link", os.readlink(path)) if path.is_symlink() else path.read_bytes()
    return state


def wheel(folder: Path, version: str = "9.1.0.70", cuda: int = 12, windows: Optional[bool] = None) -> Path:
    """NVIDIA's pip wheel of cuDNN as pip downloads it (`nvidia_cudnn_cu12-9.1.0.70-py3-none-….whl`): the package
    nvidia/cudnn/ with its Python files beside include/ and lib/ (Linux) or bin/ and lib/x64 (Windows), and dist-info."""
    windows = sys.platform == "win32" if windows is None else windows
    tag = "win_amd64" if windows else "manylinux2014_x86_64"
    major = version.split(".")[0]
    dist = f"nvidia_cudnn_cu{cuda}-{version}.dist-info"
    members = {
        "nvidia/__init__.py": b"",
        "nvidia/cudnn/__init__.py": b"",
        "nvidia/cudnn/include/__init__.py": b"",
        "nvidia/cudnn/include/cudnn.h": b'#include "cudnn_version.h"\n',
        "nvidia/cudnn/include/cudnn_version.h": version_header(version).encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: nvidia-cudnn-cu{cuda}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-" + tag.encode() + b"\n",
        f"{dist}/RECORD": b"",
    }
    parts = ("graph", "ops", "cnn", "adv", "engines_precompiled", "engines_runtime_compiled", "heuristic")
    for part in ("",) + tuple(f"_{p}" for p in parts):
        if windows:
            name = f"cudnn{part}64_{major}.dll"
            members[f"nvidia/cudnn/bin/{name}"] = fake_library(name)
            members[f"nvidia/cudnn/lib/x64/cudnn{part}.lib"] = b"lib"
        else:
            name = f"libcudnn{part}.so.{major}"
            members[f"nvidia/cudnn/lib/{name}"] = fake_library(name)
    members["nvidia/cudnn/lib/__init__.py"] = b""
    return write_zip(folder / f"nvidia_cudnn_cu{cuda}-{version}-py3-none-{tag}.whl", members)
