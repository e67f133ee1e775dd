"""A fleet's values and their aggregation: nodes grouped by identical stack, the majority the reference.

Every step is one pass over the nodes (a dict keyed by the stack, a counter per finding id), so a
fleet of 10,000 nodes costs ten times one of 1,000; no node is ever compared with another node,
only each minority group once with the reference.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Optional

from cudnn_doctor.facts import Facts, FrameworkBuild
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.record import Record
from cudnn_doctor.versions import cuda_text

OK = "ok"
UNREACHABLE = "unreachable"  # alive when asked, but its task could not be placed there
DEAD = "dead"  # the cluster says the node is gone (before or while its task ran)
TIMEOUT = "timeout"  # its task did not finish within --timeout
ERROR = "error"  # the task failed, or its snapshot could not be read
STATUSES = (OK, UNREACHABLE, DEAD, TIMEOUT, ERROR)

# The stack key's fields, in the order a report shows them.
STACK_FIELDS = ("os", "arch", "wsl", "driver", "driver_cuda", "gpus", "cuda_toolkits", "cudnn", "frameworks")
FIELD_TITLES = {
    "os": "OS",
    "arch": "architecture",
    "wsl": "WSL2",
    "driver": "NVIDIA driver",
    "driver_cuda": "driver's CUDA",
    "gpus": "GPUs",
    "cuda_toolkits": "CUDA toolkits",
    "cudnn": "cuDNN",
    "frameworks": "frameworks (builds)",
}
NONE = "none"


class NodeResult(Record):
    """One node: how its collection went, its snapshot (a machine-fixture/1 document) and what the checks found."""

    node: str
    status: str  # one of STATUSES
    snapshot: Optional[dict[str, Any]] = None
    findings: tuple[Finding, ...] = ()
    stack: Optional[dict[str, str]] = None  # STACK_FIELDS → text; None without a snapshot
    error: Optional[str] = None  # why a node is not ok, in one line
    source: Optional[str] = None  # the file it was read from, or the cluster's address of the node

    @property
    def healthy(self) -> bool:
        return self.status == OK and not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def worst(self) -> Optional[Severity]:
        return min((f.severity for f in self.findings), key=lambda s: s.rank, default=None)


class Drift(Record):
    field: str
    reference: str
    value: str


class Group(Record):
    """Nodes with one identical stack; the reference is the largest group, every other group drifts from it."""

    number: int  # 1 = the reference, then by size
    stack: dict[str, str]
    nodes: tuple[str, ...]
    reference: bool
    drift: tuple[Drift, ...] = ()


class FindingCount(Record):
    id: str
    severity: str  # the worst severity it was reported at
    title: str
    nodes: int


class FleetReport(Record):
    nodes: tuple[NodeResult, ...]
    groups: tuple[Group, ...]
    counts: tuple[FindingCount, ...]  # most nodes first
    statuses: dict[str, int]

    @property
    def healthy(self) -> tuple[NodeResult, ...]:
        return tuple(n for n in self.nodes if n.healthy)

    @property
    def drifted(self) -> bool:
        return len(self.groups) > 1

    @property
    def exit_code(self) -> int:
        """0 when every node is ok with no error finding and all share one stack, else 1."""
        return 0 if self.nodes and len(self.healthy) == len(self.nodes) and not self.drifted else 1

    def group_of(self) -> dict[str, int]:
        """node name → its group's number (nodes without a snapshot have none)."""
        return {name: g.number for g in self.groups for name in g.nodes}


# ---------------------------------------------------------------- the stack key


def stack_of(facts: Facts) -> dict[str, str]:
    """What makes two nodes the same GPU stack: driver, toolkits, cuDNN, framework builds, GPU models, OS.

    Versions only, never paths: two users' virtual environments with the same wheels are one stack.
    """
    gpus = Counter(g.name for g in facts.driver.gpus)
    return {
        "os": facts.os,
        "arch": facts.arch,
        "wsl": "yes" if facts.wsl else "no",
        "driver": facts.driver.version or NONE,
        "driver_cuda": facts.driver.cuda or NONE,
        "gpus": _joined(f"{count}× {name}" if count > 1 else name for name, count in gpus.items()),
        "cuda_toolkits": _joined(t.version or "unknown version" for t in facts.toolkits.toolkits),
        "cudnn": _joined(c.version or f"{c.major}.x" for c in facts.cudnn),
        "frameworks": _joined(_build_text(b) for b in facts.builds),
    }


def _build_text(build: FrameworkBuild) -> str:
    """`torch 2.4.0+cu121 (CUDA 12.1, cuDNN 9.1)`: the release and what it was built with."""
    cuda = build.cuda_version  # "64_112" (TensorFlow's Windows build_info) and "11.2" are one CUDA: 11.2
    parts = [
        f"CUDA {cuda_text(cuda) if cuda is not None else build.cuda.value}"
        if build.cuda
        else ("CPU build" if build.gpu_build is False else "")
    ]
    if build.cudnn:
        parts.append(f"cuDNN {build.cudnn.value}")
    inside = ", ".join(p for p in parts if p)
    return f"{build.name} {build.version or 'unknown version'}" + (f" ({inside})" if inside else "")


def _joined(values: Iterable[str]) -> str:
    unique = sorted(set(values))
    return ", ".join(unique) if unique else NONE


# ---------------------------------------------------------------- aggregation


def aggregate(nodes: Iterable[NodeResult]) -> FleetReport:
    """Group the nodes by stack, pick the reference, name each group's differing fields, count the findings."""
    results = tuple(nodes)
    members: dict[tuple[str, ...], list[str]] = {}
    severities: dict[str, Severity] = {}
    titles: dict[str, str] = {}
    counts: Counter[str] = Counter()
    statuses: Counter[str] = Counter({status: 0 for status in STATUSES})
    for result in results:
        statuses[result.status] += 1
        if result.stack is not None:
            members.setdefault(tuple(result.stack.get(f, NONE) for f in STACK_FIELDS), []).append(result.node)
        for finding_id in {f.id for f in result.findings}:
            counts[finding_id] += 1
        for found in result.findings:
            known = severities.get(found.id)
            if known is None or found.severity.rank < known.rank:
                severities[found.id] = found.severity
            titles.setdefault(found.id, found.title)
    # The largest group is the reference; equal sizes fall to the stack that sorts first, so a rerun agrees.
    ordered = sorted(members.items(), key=lambda item: (-len(item[1]), item[0]))
    groups = []
    for number, (key, names) in enumerate(ordered, start=1):
        stack = dict(zip(STACK_FIELDS, key))
        drift = () if number == 1 else _drift(dict(zip(STACK_FIELDS, ordered[0][0])), stack)
        groups.append(Group(number, stack, tuple(names), number == 1, drift))
    found_counts = sorted(
        (FindingCount(i, severities[i].value, titles[i], n) for i, n in counts.items()),
        key=lambda c: (-c.nodes, Severity(c.severity).rank, c.id),
    )
    return FleetReport(results, tuple(groups), tuple(found_counts), dict(statuses))


def _drift(reference: dict[str, str], stack: dict[str, str]) -> tuple[Drift, ...]:
    return tuple(Drift(f, reference[f], stack[f]) for f in STACK_FIELDS if stack[f] != reference[f])
