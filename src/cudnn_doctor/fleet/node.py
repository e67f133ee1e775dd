"""What runs on a node: record its machine as a machine-fixture/1 document (the raw snapshot; the checks run on the
driver).

Test hooks (documented in the README): `CUDNN_DOCTOR_FLEET_FIXTURE` names a machine fixture that the
node reports instead of its live machine, and `CUDNN_DOCTOR_FLEET_DELAY` (seconds) makes the task
wait before it answers, so a test can make one node of a local cluster differ or time out.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, Optional

from cudnn_doctor.system.host import environment, variable

FIXTURE_VARIABLE = "CUDNN_DOCTOR_FLEET_FIXTURE"
DELAY_VARIABLE = "CUDNN_DOCTOR_FLEET_DELAY"


def snapshot_here(
    with_frameworks: bool = True, framework_timeout: float = 60.0, python: Optional[str] = None
) -> dict[str, Any]:
    """This node's snapshot: from the test hook's fixture, from `python` (another interpreter here), or live."""
    delay = variable(DELAY_VARIABLE)
    if delay:
        time.sleep(float(delay))
    fixture = variable(FIXTURE_VARIABLE)
    if fixture:
        from cudnn_doctor.system.fixture_format import load_fixture

        return load_fixture(Path(fixture))
    if python:
        return _snapshot_in(python, with_frameworks, framework_timeout)
    from cudnn_doctor.probes import run_probes
    from cudnn_doctor.system.live import LiveSystem
    from cudnn_doctor.system.recorder import RecordingSystem

    recorder = RecordingSystem(LiveSystem(limit=framework_timeout))
    run_probes(recorder, with_frameworks, framework_timeout)
    return recorder.document(f"snapshot-{platform.node() or 'machine'}", "Recorded by cudnn-doctor fleet.")


def _snapshot_in(python: str, with_frameworks: bool, framework_timeout: float) -> dict[str, Any]:
    """The snapshot as `python` sees the node: that interpreter imports cudnn_doctor and prints the document as JSON."""
    from cudnn_doctor.system.child import run_child

    code = (
        f"import json, sys; from cudnn_doctor.fleet.node import snapshot_here; "
        f"json.dump(snapshot_here({with_frameworks!r}, {framework_timeout!r}), sys.stdout)"
    )
    env = {k: v for k, v in environment().items() if k not in (FIXTURE_VARIABLE, DELAY_VARIABLE)}
    done = run_child(
        [python, "-c", code], timeout=framework_timeout * 6, env=env
    )  # the probes' own children are bounded by framework_timeout
    if done.timed_out:
        raise RuntimeError(f"{python}: the snapshot did not finish in {framework_timeout * 6:.0f} s")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise RuntimeError(f"{python}: {last}")
    return json.loads(done.stdout)


def main() -> None:
    """`python -m cudnn_doctor.fleet.node`: print this node's snapshot as JSON (for engines that run a command per
    node)."""
    json.dump(snapshot_here(), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
