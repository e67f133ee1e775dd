"""Live only: load each framework's root libraries for real and compare with the emulation.

Only roots loaded by name (the CUDA runtime and cuDNN that TensorFlow, PaddlePaddle and ONNX
Runtime ask for) are loaded: they are small front libraries, and loading them in a child of
the framework's interpreter shows exactly which file that process gets. On Windows only names
searched the standard way can be loaded alike; a name ONNX Runtime's provider imports is
searched from the provider's folder (LOAD_WITH_ALTERED_SEARCH_PATH), which a load by name
cannot repeat.
"""

from __future__ import annotations

from cudnn_doctor.facts import Confirmation, Resolution
from cudnn_doctor.loader import windows
from cudnn_doctor.system.interface import System


def probe_confirmations(system: System, resolutions: tuple[Resolution, ...]) -> tuple[Confirmation, ...]:
    confirmations = []
    for resolution in resolutions:
        roots = [s for s in resolution.steps if s.how == "root" and not system.paths.is_abs(s.name) and s.search in (None, windows.STANDARD)]
        if not roots:
            continue
        real = system.mapped_libraries(resolution.executable, [s.name for s in roots])
        if real is None:
            continue
        for step in roots:
            emulated = system.realpath(step.winner) if step.winner else None
            mapped = real.get("loaded", {}).get(step.name)
            confirmations.append(Confirmation(resolution.executable, step.name, emulated, mapped, real.get("errors", {}).get(step.name)))
    return tuple(confirmations)
