"""Joining what a failing program said and what its loader did with what `check` found on the machine.

Pure: the program's exit code and stderr, the loader's traces and the findings in; one `Explanation` out.
"""

from __future__ import annotations

import json
from typing import Iterable, Optional, Sequence

from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record
from cudnn_doctor.run import errors, trace

# The libraries of the GPU stack, by file name (Linux and Windows spellings).
GPU_LIBRARY = regex(
    r"(?i)(cudnn|cublas|cudart|cufft|curand|cusolver|cusparse|nvrtc|nvjitlink|nccl|zlibwapi|nvcuda|libcuda\.so"
    r"|nvidia-ml|libnvml)"
)
_AREA_OF = (
    ("cudnn", "cudnn"),
    ("zlibwapi", "cudnn"),
    ("libcuda.so", "driver"),
    ("nvcuda", "driver"),
    ("nvidia-ml", "driver"),
)


class Explanation(Record):
    returncode: int
    errors: tuple[errors.Match, ...]  # known GPU-stack errors in the program's output
    failed: tuple[trace.Search, ...]  # the loader's searches that found nothing (GPU libraries, or named by an error)
    findings: tuple[Finding, ...]  # `check`'s findings that bear on them

    @property
    def about_frameworks(self) -> bool:
        """An error of a framework's build (a CPU build, no code for the GPU): `check` then needs the frameworks'
        reports."""
        return any("frameworks" in m.areas for m in self.errors)

    @property
    def worth_telling(self) -> bool:
        """A failure or a known error: the wrapper says nothing after a clean run."""
        return bool(self.errors or self.failed) or (self.returncode != 0 and bool(self.findings))


def area_of(library: Optional[str]) -> Optional[str]:
    if not library:
        return None
    lowered = library.lower()
    for marker, area in _AREA_OF:
        if marker in lowered:
            return area
    return "toolkit" if GPU_LIBRARY.search(lowered) else None


def explain(returncode: int, stderr: str, traces: Sequence[str], findings: Iterable[Finding]) -> Explanation:
    matches = tuple(errors.scan(stderr))
    named = {m.library.rsplit("/", 1)[-1].lower() for m in matches if m.library}
    failed = tuple(
        search
        for text in traces
        for search in trace.failures(trace.parse(text))
        if GPU_LIBRARY.search(search.name) or search.name.rsplit("/", 1)[-1].lower() in named
    )
    if returncode == 0 and not matches:
        return Explanation(
            returncode, (), (), ()
        )  # a clean run: searches a program tries and survives are its business
    names = named | {s.name.rsplit("/", 1)[-1].lower() for s in failed}
    areas = (
        {a for m in matches for a in m.areas}
        | {area_of(s.name) for s in failed}
        | {area_of(m.library) for m in matches}
    )
    return Explanation(returncode, matches, failed, tuple(_bearing(findings, names, areas - {None})))


def _bearing(findings: Iterable[Finding], names: set[str], areas: set[Optional[str]]) -> list[Finding]:
    """The errors and warnings that name one of the libraries, then those of the same part of the stack."""
    naming, same_area = [], []
    for finding in findings:
        if finding.severity == Severity.INFO or finding.symptom_of is not None:
            continue
        text = (finding.title + " " + finding.detail + " " + json.dumps(finding.evidence_json(), default=str)).lower()
        if any(name in text for name in names):
            naming.append(finding)
        elif finding.area.value in areas:
            same_area.append(finding)
    return naming + same_area
