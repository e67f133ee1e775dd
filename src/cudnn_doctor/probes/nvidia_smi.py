"""Parsing `nvidia-smi` output: the plain table users paste into bug reports, and the CSV query.

The table's layout changed over the years (R384 with no "CUDA Version", R418-R470 with
`TCC/WDDM` and `Persistence-M` columns, R525+ with wider cells and `Driver-Model`), and GPU
names are cut to fit the cell ("NVIDIA GeForce ..."). These parsers accept every layout.
"""

from __future__ import annotations

import re
from typing import Optional

from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record

_DRIVER = regex(r"Driver Version:\s*([0-9][0-9.]*)")
_CUDA = regex(r"CUDA Version:\s*([0-9][0-9.]*)")
# "|   0  NVIDIA GeForce RTX 3060      WDDM  |" / "|   0  GeForce GTX 1080 Ti  Off  |"
_GPU_ROW = regex(r"^\|\s+(\d+)\s+(.+?)\s+(WDDM|TCC|MCDM|On|Off|N/A)\s*\|")
_MEMORY = regex(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")


class SmiGpu(Record):
    # a field named like tuple.index, which it hides on purpose (as typing.NamedTuple allows)
    index: int  # type: ignore[assignment]
    name: str
    memory_mib: Optional[int] = None
    compute_capability: Optional[str] = None

    @property
    def truncated(self) -> bool:
        return self.name.endswith("...")


class SmiReport(Record):
    driver_version: Optional[str]
    cuda_version: Optional[str]
    gpus: tuple[SmiGpu, ...]


def parse_table(text: str) -> SmiReport:
    """The plain `nvidia-smi` table (Windows and Linux, old and new layouts)."""
    driver = _DRIVER.search(text)
    cuda = _CUDA.search(text)
    gpus: list[SmiGpu] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if "Processes:" in line:
            break
        row = _GPU_ROW.match(line)
        if not row:
            continue
        memory = None
        if number + 1 < len(lines):
            found = _MEMORY.search(lines[number + 1])
            memory = int(found.group(2)) if found else None
        gpus.append(SmiGpu(int(row.group(1)), row.group(2).strip(), memory))
    return SmiReport(driver.group(1) if driver else None, cuda.group(1) if cuda else None, tuple(gpus))


QUERY_ARGS = ("--query-gpu=name,compute_cap,driver_version,memory.total", "--format=csv,noheader")


def parse_query(text: str) -> list[SmiGpu]:
    """`nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader`."""
    gpus = []
    for index, line in enumerate(row for row in text.splitlines() if row.strip()):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 4 or not re.match(r"^\d+\.\d+$", fields[1]):
            continue
        memory = re.match(r"(\d+)", fields[3])
        gpus.append(SmiGpu(index, fields[0], int(memory.group(1)) if memory else None, fields[1]))
    return gpus
