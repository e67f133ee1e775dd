"""Snapshots in, node results out: the checks run on each snapshot through a FixtureSystem, never on this machine.

Nodes of one fleet mostly carry the same stack, so the diagnosis is kept per distinct snapshot
(its content without what cannot change a finding: its name, description, host-specific GPU
UUIDs and the variables the diagnosis never reads). A thousand identical nodes cost one diagnosis.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator, Optional

from cudnn_doctor.errors import InputError, UsageError
from cudnn_doctor.fleet.model import ERROR, OK, NodeResult, stack_of
from cudnn_doctor.privacy import diagnosed
from cudnn_doctor.system.host import lexists

SNAPSHOT_SUFFIXES = (".json", ".yaml", ".yml")


def snapshot_files(arguments: Iterable[Path]) -> list[Path]:
    """Each FILE as given and each DIR's snapshot files (sorted, not recursive); a missing path or nothing found is
    exit 2.

    Everything with a snapshot's name but a folder is kept, whatever it is: a FIFO, a link to a device or a dangling
    link becomes that node's `error` when it is read (the hardened reader opens regular files only), never a node
    that silently went missing."""
    found: list[Path] = []
    for argument in arguments:
        if argument.is_dir():
            found.extend(
                sorted(p for p in argument.iterdir() if p.suffix.lower() in SNAPSHOT_SUFFIXES and not p.is_dir())
            )
        elif lexists(argument):
            found.append(argument)
        else:
            raise UsageError(f"--from {argument}: no such file or folder")
    if not found:
        raise InputError("--from: no snapshot files (.json, .yaml, .yml) in " + ", ".join(str(a) for a in arguments))
    return found


def node_names(paths: list[Path]) -> list[str]:
    """A node is named by its file's stem (`srun … -o snaps/%N.json` names files by host); the path where stems
    repeat."""
    stems = [p.stem for p in paths]
    seen: dict[str, int] = {}
    for stem in stems:
        seen[stem] = seen.get(stem, 0) + 1
    return [stem if seen[stem] == 1 else str(path) for stem, path in zip(stems, paths)]


class Checker:
    """Runs the checks on snapshots, once per distinct snapshot."""

    def __init__(self, ignore: Collection[str] = (), framework_timeout: float = 60.0) -> None:
        self.ignore = set(ignore)
        self.framework_timeout = framework_timeout
        self._known: dict[str, tuple[tuple[Any, ...], dict[str, str]]] = {}
        self.diagnosed = 0  # how many diagnoses actually ran (the rest came from the cache)

    def result(
        self, node: str, document: dict[str, Any], source: Optional[str] = None, origin: Optional[Path] = None
    ) -> NodeResult:
        """The node's findings and stack; a snapshot the checks cannot replay is an `error` node, not a crash."""
        key = _content_key(document, origin)
        known = self._known.get(key)
        if known is None:
            try:
                known = self._diagnose(document, origin)
            except InputError as error:
                return NodeResult(node, ERROR, document, error=str(error), source=source)
            self._known[key] = known
        findings, stack = known
        return NodeResult(node, OK, document, tuple(findings), dict(stack), source=source)

    def _diagnose(self, document: dict[str, Any], origin: Optional[Path]) -> tuple[tuple[Any, ...], dict[str, str]]:
        from cudnn_doctor.diagnose import diagnose
        from cudnn_doctor.system.fixture import FixtureSystem

        self.diagnosed += 1
        diagnosis = diagnose(
            FixtureSystem(document, origin=origin), framework_timeout=self.framework_timeout, ignore=self.ignore
        )
        return tuple(diagnosis.findings), stack_of(diagnosis.facts)

    def from_files(self, paths: list[Path]) -> Iterator[NodeResult]:
        """One result per file; an unreadable or invalid file is that node's `error`."""
        from cudnn_doctor.system.fixture_format import load_fixture

        for name, path in zip(node_names(paths), paths):
            try:
                document = load_fixture(path)
            except InputError as error:
                yield NodeResult(name, ERROR, error=str(error), source=str(path))
                continue
            yield self.result(name, document, str(path), origin=path)

    def from_document(self, node: str, document: Any, source: Optional[str] = None) -> NodeResult:
        """A snapshot that came over the wire (a Ray task's return): validated like a file before it is replayed."""
        from cudnn_doctor.system.fixture_format import validate

        try:
            checked = validate(document)
        except InputError as error:
            return NodeResult(
                node, ERROR, error=f"the node's snapshot is not a machine fixture: {error}", source=source
            )
        return self.result(node, checked, source)


def _content_key(document: dict[str, Any], origin: Optional[Path] = None) -> str:
    """A digest of what the diagnosis reads: the same key means the same findings and stack."""
    kept = {k: v for k, v in document.items() if k not in ("name", "description", "expect")}
    files = document.get("files")
    if (
        origin is not None
        and isinstance(files, dict)
        and any(isinstance(e, dict) and "source" in e for e in files.values())
    ):
        kept["origin"] = str(
            origin.resolve().parent
        )  # `source` names bytes beside the file: another folder, other bytes
    env = kept.get("env")
    if isinstance(env, dict):
        kept["env"] = {k: v for k, v in env.items() if diagnosed(k)}
    nvml = kept.get("nvml")
    if isinstance(nvml, dict) and isinstance(nvml.get("gpus"), list):
        kept["nvml"] = {
            **nvml,
            "gpus": [{k: v for k, v in g.items() if k != "uuid"} if isinstance(g, dict) else g for g in nvml["gpus"]],
        }
    text = json.dumps(kept, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
