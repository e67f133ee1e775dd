"""Issue 32: `System` is the narrow protocols together (files, environment, registry, processes, GPU), each method in
exactly one of them, so a part of the doctor can ask for the one it needs (`probes.cudnn_versions` takes `Files`) and
mypy holds it to that."""

from __future__ import annotations

import inspect

from cudnn_doctor.system.interface import Environment, Files, Gpu, Machine, Processes, Registry, System

PARTS = (Files, Environment, Registry, Processes, Gpu)


def _methods(part: type) -> set[str]:
    return {name for name, value in vars(part).items() if not name.startswith("_") and inspect.isfunction(value)}


def test_the_system_is_the_protocols_together():
    assert System.__bases__ == PARTS and all(issubclass(part, Machine) for part in PARTS)
    for index, part in enumerate(PARTS):
        for other in PARTS[index + 1 :]:
            assert not _methods(part) & _methods(other), (part.__name__, other.__name__)
    assert _methods(System) == {"state_dir"}  # the one question of files and environment together


def test_a_narrow_protocol_is_used():
    from cudnn_doctor.probes import cudnn_versions

    assert inspect.signature(cudnn_versions.distribution).parameters["system"].annotation in ("Files", Files)
