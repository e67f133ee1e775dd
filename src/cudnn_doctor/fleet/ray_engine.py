"""`fleet --ray ADDRESS`: one task pinned to each alive node of a Ray cluster, each returning its node's snapshot.

Each task is placed with `NodeAffinitySchedulingStrategy(soft=False)`: it runs on that node or
not at all, never on a neighbour that would answer for it. Every task shares one deadline
(`--timeout`) through `ray.wait`; what is not back by then is `timeout` and is cancelled. A node
the cluster lists as dead, or one that dies while its task runs, is `dead`; a task that fails is
`error` with its last line. The checks run here, on the driver, on the snapshots that came back.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Optional

from cudnn_doctor.errors import UsageError
from cudnn_doctor.fleet.model import DEAD, ERROR, TIMEOUT, UNREACHABLE, NodeResult
from cudnn_doctor.fleet.nodes import Checker

INSTALL_HINT = "--ray needs Ray, which is not installed here: pip install cudnn-doctor[fleet]"


def require_ray() -> Any:
    """The `ray` module, or the one-line error naming the extra (exit 2)."""
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


def _run_on_node(with_frameworks: bool, framework_timeout: float, python: Optional[str]) -> dict[str, Any]:
    """The task body, imported by the node's worker: the raw snapshot of that node."""
    from cudnn_doctor.fleet.node import snapshot_here

    return snapshot_here(with_frameworks, framework_timeout, python)


def collect(
    address: str,
    timeout: float,
    checker: Checker,
    python: Optional[str] = None,
    with_frameworks: bool = True,
    framework_timeout: float = 60.0,
) -> list[NodeResult]:
    """Every node the cluster knows, as a result: ok with its findings, or why not."""
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    started_here = not ray.is_initialized()
    if started_here:
        _reachable(address)
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise UsageError(
                f"--ray {address}: cannot connect to the Ray cluster: "
                f"{str(error).splitlines()[0] if str(error) else error}"
            ) from None
    try:
        nodes = ray.nodes()
        names = _node_names(nodes)
        task = ray.remote(num_cpus=0, max_retries=0)(_run_on_node)
        results: dict[str, NodeResult] = {}
        refs: dict[Any, dict[str, Any]] = {}
        for node in nodes:
            if not node.get("Alive"):
                why = f" ({node['DeathReasonMessage']})" if node.get("DeathReasonMessage") else ""
                results[node["NodeID"]] = NodeResult(
                    names[node["NodeID"]], DEAD, error=f"the cluster lists this node as dead{why}", source=_where(node)
                )
                continue
            strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            refs[task.options(scheduling_strategy=strategy).remote(with_frameworks, framework_timeout, python)] = node
        pending = list(refs)
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=max(0.0, deadline - time.monotonic()))
        late = set(pending)
        alive_now = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        for ref, node in refs.items():
            node_id, name, where = node["NodeID"], names[node["NodeID"]], _where(node)
            if ref in late:
                _cancel(ray, ref)
                if (
                    node_id not in alive_now
                ):  # it went away while its task ran: the cluster noticed before the task failed
                    results[node_id] = NodeResult(name, DEAD, error="the node died while its task ran", source=where)
                else:
                    results[node_id] = NodeResult(name, TIMEOUT, error=f"no answer within {timeout:g} s", source=where)
                continue
            try:
                document = ray.get(ref, timeout=60)  # ready, and local (ray.wait fetched it): this returns at once
            except Exception as error:  # every failure of a task is a result of its node, never the end of the report
                results[node_id] = _failed(ray, name, where, error, node_id in alive_now)
                continue
            results[node_id] = checker.from_document(name, document, where)
        return [results[n["NodeID"]] for n in nodes]
    finally:
        if started_here:
            ray.shutdown()


def _reachable(address: str, wait: float = 5.0) -> None:
    """A `HOST:PORT` that does not answer is said in seconds: ray.init would retry it for minutes."""
    import socket

    host, colon, port = address.rpartition(":")
    if not colon or "://" in address or not port.isdigit() or not host:
        return  # `auto`, `ray://…` (Ray Client) and the like: Ray's own lookup answers quickly
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=wait).close()
    except OSError as error:
        raise UsageError(f"--ray {address}: cannot connect to the Ray cluster: {error.strerror or error}") from None


def _failed(ray: Any, name: str, where: str, error: BaseException, alive: bool) -> NodeResult:
    exceptions = ray.exceptions
    lost = (
        exceptions.NodeDiedError,
        exceptions.WorkerCrashedError,
        exceptions.LocalRayletDiedError,
        exceptions.ObjectLostError,
    )
    if not alive and isinstance(error, (*lost, exceptions.TaskUnschedulableError)):
        return NodeResult(name, DEAD, error=f"the node died while its task ran ({type(error).__name__})", source=where)
    if isinstance(error, exceptions.TaskUnschedulableError):
        return NodeResult(name, UNREACHABLE, error="its task could not be placed on the node", source=where)
    cause = getattr(error, "cause", None) or error
    text = str(cause).strip().splitlines()
    return NodeResult(
        name, ERROR, error=f"{type(cause).__name__}: {text[-1] if text else ''}".rstrip(": "), source=where
    )


def _cancel(ray: Any, ref: Any) -> None:
    try:
        ray.cancel(ref, force=True)
    except Exception:  # already finished or its node is gone: nothing left to stop
        pass


def _where(node: dict[str, Any]) -> str:
    return f"{node.get('NodeManagerAddress', '?')} node {node['NodeID']}"


def _node_names(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """Each node by its host name; where hosts repeat (several nodes on one machine), the name plus the node id's
    start."""
    hosts = [n.get("NodeManagerHostname") or n.get("NodeManagerAddress") or "node" for n in nodes]
    from collections import Counter

    repeated = {h for h, n in Counter(hosts).items() if n > 1}
    return {n["NodeID"]: (f"{h}-{n['NodeID'][:8]}" if h in repeated else h) for n, h in zip(nodes, hosts)}
