"""One problem, said once: findings that share a root cause become symptoms of the one that states it.

Two findings belong together when they name the same cause key ("cuda:11": the CUDA 11
runtime is what is missing; "cudnn:<folder>": that installation is incomplete), or when a
rule says another explains it (a CUDA build of torch that sees no GPU, under a driver that is
too old). In each group the finding no other one explains is the cause; the report prints
the others under it, and the JSON links them with `symptom_of`.
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
    return _explained_without_keys(linked, explained_by)


def _cause(members: list[int], findings: list[Finding], explained_by: dict[str, set[str]], order: dict[str, int]) -> int:
    ids = {findings[i].id for i in members}
    unexplained = [i for i in members if not (explained_by.get(findings[i].id, set()) & (ids - {findings[i].id}))]
    return min(unexplained or members, key=lambda i: (findings[i].severity.rank, order.get(findings[i].id, 0), i))


def _explained_without_keys(findings: list[Finding], explained_by: dict[str, set[str]]) -> list[Finding]:
    """A finding with no cause key is a symptom of the first present finding its rule names as an explanation."""
    linked = []
    for found in findings:
        causes = explained_by.get(found.id, set())
        if found.symptom_of is None and not found.causes and causes:
            present = [i for i, other in enumerate(findings) if other.id in causes and other.symptom_of is None and other.severity is not Severity.INFO]
            names = sorted({findings[i].id for i in present})
            note = f" Explained by: {', '.join(names)}." if names else " No other finding explains it; run the framework's own check for its message."
            found = found._replace(detail=found.detail + note, evidence={**found.evidence, "explained_by": names}, symptom_of=present[0] if present else None)
        linked.append(found)
    return linked
