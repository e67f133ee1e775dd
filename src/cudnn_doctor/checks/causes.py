"""One problem, said once: findings that share a root cause become symptoms of the one that states it.

Two findings belong together when they name the same cause key ("cuda:11": the CUDA 11
runtime is what is missing; "cudnn:<folder>": that installation is incomplete), or when a
rule says another explains it (a CUDA build of torch that sees no GPU, under a driver that is
too old). In each group the finding no other one explains is the cause; the report prints
the others under it, and the JSON links them with `symptom_of`. A symptom always hangs under a
cause (never under another symptom), and a cause is as bad as the worst thing it causes (a
stale terminal that hides cuDNN is an error): its finding carries that severity, so the text,
JSON and HTML reports say the same.
"""

from __future__ import annotations

from cudnn_doctor.checks.registry import Rule, explanations
from cudnn_doctor.findings import Finding, Severity


def link_causes(findings: list[Finding], rules: dict[str, Rule]) -> list[Finding]:
    explained_by = explanations(rules)
    order = {i: n for n, i in enumerate(rules)}
    parent = list(range(len(findings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for index, found in enumerate(findings):
        for key in found.causes:
            if key in owner:
                parent[root(index)] = root(owner[key])
            else:
                owner[key] = index
    groups: dict[int, list[int]] = {}
    for index in range(len(findings)):
        groups.setdefault(root(index), []).append(index)
    linked = list(findings)
    for members in groups.values():
        if len(members) > 1:
            cause = _cause(members, findings, explained_by, order)
            for index in members:
                if index != cause:
                    linked[index] = findings[index]._replace(symptom_of=cause)
    return _worst_of_group(_flattened(_explained_without_keys(linked, explained_by)))


def _flattened(findings: list[Finding]) -> list[Finding]:
    """A symptom of a symptom is a symptom of that one's cause: every report lists symptoms under causes only."""

    def cause_of(index: int) -> int:
        seen: set[int] = set()
        cause = findings[index].symptom_of
        while cause is not None and index not in seen:
            seen.add(index)
            index = cause
            cause = findings[index].symptom_of
        return index

    return [
        f
        if f.symptom_of is None
        else f._replace(symptom_of=cause_of(i))
        if cause_of(i) != i
        else f._replace(symptom_of=None)
        for i, f in enumerate(findings)
    ]


def _worst_of_group(findings: list[Finding]) -> list[Finding]:
    """A cause takes the severity of its worst symptom (each report shows the finding's own severity)."""
    worst: dict[int, Severity] = {}
    for found in findings:
        if found.symptom_of is not None:
            current = worst.get(found.symptom_of, findings[found.symptom_of].severity)
            worst[found.symptom_of] = min(current, found.severity, key=lambda s: s.rank)
    return [
        f._replace(severity=worst[i]) if i in worst and worst[i] is not f.severity else f
        for i, f in enumerate(findings)
    ]


def _cause(
    members: list[int], findings: list[Finding], explained_by: dict[str, set[str]], order: dict[str, int]
) -> int:
    ids = {findings[i].id for i in members}
    unexplained = [i for i in members if not (explained_by.get(findings[i].id, set()) & (ids - {findings[i].id}))]
    return min(unexplained or members, key=lambda i: (findings[i].severity.rank, order.get(findings[i].id, 0), i))


def _explained_without_keys(findings: list[Finding], explained_by: dict[str, set[str]]) -> list[Finding]:
    """A finding with no cause key is a symptom of the first present finding its rule names as an explanation."""
    linked = []
    for found in findings:
        causes = explained_by.get(found.id, set())
        if found.symptom_of is None and not found.causes and causes:
            present = [
                i
                for i, other in enumerate(findings)
                if other.id in causes and other.symptom_of is None and other.severity is not Severity.INFO
            ]
            names = sorted({findings[i].id for i in present})
            note = (
                f" Explained by: {', '.join(names)}."
                if names
                else " No other finding explains it; run the framework's own check for its message."
            )
            found = found._replace(
                detail=found.detail + note, explained_by=tuple(names), symptom_of=present[0] if present else None
            )
        linked.append(found)
    return linked
