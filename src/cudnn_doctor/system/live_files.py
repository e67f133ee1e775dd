"""The live system's files: stat, listing, reading, the binaries' headers, and every write the installer makes
(through temporary files, fsynced), the state folder's lock and the files another program holds (Windows)."""

from __future__ import annotations

import os
import shutil
import stat
from typing import BinaryIO, Collection, ContextManager, Optional, Sequence

from cudnn_doctor.binaries import BinaryInfo
from cudnn_doctor.system import lockfile
from cudnn_doctor.system.binaries import read_binary
from cudnn_doctor.system.interface import (
    NATIVE_DEPTH,
    FileInfo,
    System,
    is_native_name,
    skipped_folder,
)
from cudnn_doctor.system.regular import open_regular, read_regular


class LiveFiles(System):
    """Mixed into LiveSystem, which sets these in its __init__."""

    _binaries: dict[str, BinaryInfo]

    def stat(self, path: str) -> Optional[FileInfo]:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return None  # a FIFO, socket or device is no library, header or program: the doctor never opens one
        link = None
        if os.path.islink(path):
            try:
                link = os.readlink(path)
            except OSError:
                link = None
        is_dir = os.path.isdir(path)
        readable = os.access(path, os.R_OK)
        return FileInfo(path, is_dir, 0 if is_dir else st.st_size, link, readable)

    def list_dir(self, path: str, sizes: bool = True) -> Optional[list[FileInfo]]:
        try:
            entries = list(os.scandir(path))
        except (OSError, ValueError):
            return None
        listing = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                if not is_dir and not entry.is_file():
                    continue  # FIFOs, sockets, devices, dangling links: nothing the doctor reads
                size = entry.stat().st_size if sizes and not is_dir else 0
            except OSError:
                continue
            link = os.readlink(entry.path) if sizes and entry.is_symlink() else None
            listing.append(FileInfo(entry.path, is_dir, size, link))
        return sorted(listing, key=lambda info: info.path)

    def read_text(self, path: str, limit: int = 1 << 20) -> Optional[str]:
        try:  # `limit` counts characters: read up to 4 bytes each, then cut
            return read_regular(path, 4 * limit).decode("utf-8", errors="replace")[:limit]
        except (OSError, ValueError):
            return None

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def binary(self, path: str) -> Optional[BinaryInfo]:
        if not os.path.isfile(path):
            return None
        real = os.path.realpath(path)
        if real not in self._binaries:
            self._binaries[real] = read_binary(real)
        return self._binaries[real]

    def native_files(self, folder: str, skip: Collection[str] = ()) -> list[str]:
        """As System.native_files, with os.scandir: no FileInfo, no stat of files that are not native."""
        windows = self.os == "windows"
        found: list[str] = []
        pending = [(folder, 0)]
        while pending:
            current, depth = pending.pop()
            try:
                entries = list(os.scandir(current))
            except (OSError, ValueError):
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if (
                            depth < NATIVE_DEPTH
                            and not skipped_folder(entry.name)
                            and not (depth == 0 and entry.name in skip)
                        ):
                            pending.append((entry.path, depth + 1))
                    elif is_native_name(entry.name, windows) and entry.is_file():
                        found.append(entry.path)
                except OSError:
                    continue
        return sorted(found)

    def cuda_names(self, path: str) -> tuple[str, ...]:
        from cudnn_doctor.system.native_cache import NATIVE_NAMES

        return NATIVE_NAMES.names(path, super().cuda_names)

    def in_use(self, path: str) -> Optional[list[str]]:
        if self.os != "windows" or not os.path.isfile(path):
            return None
        from cudnn_doctor.system import winfiles

        if not winfiles.sharing_violation(path):
            return None
        return winfiles.holders([path])

    def open_read(self, path: str) -> BinaryIO:
        return open_regular(path)

    def open_write(self, path: str) -> BinaryIO:
        return _DurableFile(path)  # type: ignore[return-value]

    def make_dirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def replace(self, source: str, target: str) -> None:
        os.replace(source, target)

    def remove(self, path: str) -> None:
        os.unlink(path)

    def symlink(self, target: str, path: str) -> None:
        os.symlink(target, path)

    def link_target(self, path: str) -> Optional[str]:
        return os.readlink(path) if os.path.islink(path) else None

    def append(self, path: str, data: bytes) -> None:
        with open(path, "ab") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def remove_dir(self, path: str) -> bool:
        try:
            os.rmdir(path)
        except OSError:
            return False
        return True

    def free_bytes(self, path: str) -> Optional[int]:
        folder = os.path.abspath(path)
        while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
            folder = os.path.dirname(folder)
        try:
            return shutil.disk_usage(folder).free
        except OSError:
            return None

    def lock(self, path: str) -> ContextManager[None]:
        return lockfile.hold(path)

    def device_files(self, paths: Sequence[str]) -> tuple[str, ...]:
        found = []
        for path in paths:
            try:
                mode = os.stat(path).st_mode
            except (OSError, ValueError):
                continue
            if stat.S_ISCHR(mode) or stat.S_ISREG(mode):  # only looked at, never opened
                found.append(path)
        return tuple(found)


class _DurableFile:
    """A file opened for writing whose close() also flushes it to the disk (fsync)."""

    def __init__(self, path: str) -> None:
        self._handle = open(path, "wb")  # noqa: SIM115 - closed by close()

    def write(self, data: bytes) -> int:
        return self._handle.write(data)

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()

    def __enter__(self) -> _DurableFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
