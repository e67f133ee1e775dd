"""Generated fleets for the fleet tests and benchmarks/fleet_scale.py: many nodes from a few gallery machines.

Most nodes carry the healthy machine; a share gets another driver (drift that is healthy), a share
the machine whose driver is too old for its torch (drift with an error), and a few nodes are not
reached at all (dead, timed out). Node documents share their nested parts, as a real fleet's many
identical snapshots would diagnose alike; each still has its own name and GPU UUID.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator

from cudnn_doctor.fleet.model import DEAD, TIMEOUT, NodeResult
from cudnn_doctor.fleet.nodes import Checker
from cudnn_doctor.system.fixture_format import load_fixture

GALLERY = Path(__file__).resolve().parents[1] / "examples" / "machines"
HEALTHY = GALLERY / "linux-healthy-torch241-pip-nvidia-wheels.yaml"
OLD_DRIVER = GALLERY / "linux-driver470-torch231-cu121.yaml"
OTHER_DRIVER = "550.127.05"  # the healthy machine with a newer driver of the same branch: drift, no error


def with_driver(document: dict[str, Any], version: str) -> dict[str, Any]:
    """The same machine with another driver version (NVML's answer, which the probes read first)."""
    changed = copy.deepcopy(document)
    changed["nvml"]["driver_version"] = version
    return changed


def node_documents(count: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, snapshot) per node: 90 % healthy, 6 % another driver, 4 % the old driver; every 250th node is missing."""
    healthy = load_fixture(HEALTHY)
    other = with_driver(healthy, OTHER_DRIVER)
    old = load_fixture(OLD_DRIVER)
    for index in range(count):
        base = old if index % 25 == 7 else other if index % 50 in (3, 13, 23) else healthy
        document = dict(base)
        document["name"] = f"snapshot-gpu{index:05d}"
        nvml = dict(base["nvml"])
        nvml["gpus"] = [{**g, "uuid": f"GPU-{index:08x}-0000-0000-0000-000000000000"} for g in base["nvml"]["gpus"]]
        document["nvml"] = nvml
        yield f"gpu{index:05d}", document


def generated_results(count: int, checker: Checker) -> list[NodeResult]:
    """The node results of a generated fleet of `count` nodes, checked through `checker`."""
    results = []
    for index, (name, document) in enumerate(node_documents(count)):
        if index % 250 == 249:
            status = DEAD if index % 500 == 249 else TIMEOUT
            results.append(NodeResult(name, status, error="generated: not reached"))
        else:
            results.append(checker.result(name, document, source=f"generated/{name}"))
    return results
