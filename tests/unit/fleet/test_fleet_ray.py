"""`cudnn-doctor fleet --ray` on a local Ray cluster (`ray.cluster_utils.Cluster`): five nodes on this machine.

Each node's raylet gets its own environment, so its task reports another machine fixture
(CUDNN_DOCTOR_FLEET_FIXTURE) or waits (CUDNN_DOCTOR_FLEET_DELAY): two nodes share the healthy
machine, one carries a driver too old for its torch (drift with an error), one waits past
--timeout, and one is removed from the cluster while its task runs. Skipped without Ray.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.fleet.node import DELAY_VARIABLE, FIXTURE_VARIABLE
from tests.fleet_gen import HEALTHY, OLD_DRIVER
from tests.unit.fleet.test_fleet import validate

ray = pytest.importorskip("ray", reason="no Ray (pip install cudnn-doctor[fleet])")
cluster_utils = pytest.importorskip("ray.cluster_utils")

SRC = str(Path(__file__).resolve().parents[3] / "src")
TIMEOUT = 25  # seconds; the slow node waits 600


def _env(fixture: Path, delay: int = 0) -> dict[str, str]:
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])),
        FIXTURE_VARIABLE: str(fixture),
    }
    if delay:
        env[DELAY_VARIABLE] = str(delay)
    return env


def _node(num_cpus: int = 1, **env: object) -> dict[str, object]:
    return {"num_cpus": num_cpus, "env_vars": env, "include_dashboard": False}


@pytest.fixture
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    made = cluster_utils.Cluster(initialize_head=True, head_node_args=_node(**_env(HEALTHY)))
    try:
        yield made
    finally:
        if ray.is_initialized():
            ray.shutdown()
        made.shutdown()


@pytest.mark.live
def test_a_local_cluster_with_drift_a_dead_node_and_a_slow_one(cluster, capsys):
    second = cluster.add_node(**_node(**_env(HEALTHY)))
    drifting = cluster.add_node(**_node(**_env(OLD_DRIVER)))
    slow = cluster.add_node(**_node(**_env(HEALTHY, delay=600)))
    doomed = cluster.add_node(**_node(**_env(HEALTHY, delay=600)))
    cluster.wait_for_nodes()
    host = socket.gethostname()
    name = {node: f"{host}-{node.node_id[:8]}" for node in (cluster.head_node, second, drifting, slow, doomed)}

    # Removed while its task sleeps: long after the tasks were sent, long before the deadline.
    killer = threading.Timer(10, cluster.remove_node, args=(doomed,))
    killer.start()
    try:
        code = main(["fleet", "--ray", cluster.address, "--timeout", str(TIMEOUT), "--format", "json"])
    finally:
        killer.join()
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    validate(document)
    assert code == 1, captured.err
    nodes = {n["node"]: n for n in document["nodes"]}
    assert set(nodes) == set(name.values())
    status = {node: nodes[name[node]]["status"] for node in name}
    assert status == {cluster.head_node: "ok", second: "ok", drifting: "ok", slow: "timeout", doomed: "dead"}, {
        name[k]: v for k, v in status.items()
    }
    assert nodes[name[slow]]["error"] == f"no answer within {TIMEOUT} s"

    reference, minority = document["groups"]
    assert (
        sorted(reference["nodes"]) == sorted([name[cluster.head_node], name[second]])
        and reference["stack"]["driver"] == "550.54.15"
    )
    assert minority["nodes"] == [name[drifting]]
    drift = {d["field"]: (d["reference"], d["value"]) for d in minority["drift"]}
    assert drift["driver"] == ("550.54.15", "470.223.02") and drift["gpus"] == ("NVIDIA GeForce RTX 4090", "Tesla T4")
    assert set(drift) == {"driver", "driver_cuda", "gpus", "cudnn", "frameworks"}
    assert "driver-too-old" in {f["id"] for f in nodes[name[drifting]]["findings"]}
    assert nodes[name[drifting]]["healthy"] is False and nodes[name[second]]["healthy"] is True
    assert document["summary"]["statuses"] == {"ok": 3, "unreachable": 0, "dead": 1, "timeout": 1, "error": 0}
    assert next(c for c in document["findings"] if c["id"] == "driver-too-old")["nodes"] == 1


@pytest.mark.parametrize(
    ("error", "alive", "status"),
    [
        (lambda e: e.TaskUnschedulableError("no node"), True, "unreachable"),
        (lambda e: e.TaskUnschedulableError("no node"), False, "dead"),
        (lambda e: e.NodeDiedError("gone"), False, "dead"),
        (lambda e: e.WorkerCrashedError(), True, "error"),
        (lambda e: RuntimeError("snapshot failed\nlast line"), True, "error"),
    ],
)
def test_how_a_failed_task_is_named(error, alive, status):
    from cudnn_doctor.fleet.ray_engine import _failed

    result = _failed(ray, "n", "here", error(ray.exceptions), alive)
    assert (result.node, result.status) == ("n", status) and result.error
    if status == "error" and isinstance(error(ray.exceptions), RuntimeError):
        assert result.error == "RuntimeError: last line"


def test_a_checker_refuses_what_is_no_machine_fixture():
    from cudnn_doctor.fleet.nodes import Checker

    result = Checker().from_document("n", {"schema": "machine-fixture/1", "name": "x"})
    assert result.status == "error" and result.error.startswith("the node's snapshot is not a machine fixture")


def test_an_address_that_does_not_answer_is_one_line_in_seconds(capsys):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["fleet", "--ray", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"cudnn-doctor: error: --ray 127.0.0.1:{port}: cannot connect to the Ray cluster:")
        and err.count("\n") == 1
    )
