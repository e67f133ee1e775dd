"""Plans for Linux aarch64 (issue 30): SBSA servers (Grace Hopper, Grace Blackwell) take PyPI's aarch64 wheels and
NVIDIA's `linux-sbsa` archives; a Jetson board takes neither.

A build is kept on aarch64 only where the recorded package index says its release has an aarch64 wheel, and, for a
framework whose aarch64 wheels are CPU builds (the vendor says so: `Framework.aarch64_cpu_only`), not at all. torch's
aarch64 wheel is judged from its own Requires-Dist: a CUDA build pins CUDA wheels (from 2.11), a CPU build pins none.
Only PyPI's own wheels are planned: the aarch64 variants of another index are not recorded.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.knowledge.framework_records import PublishedRelease
from cudnn_doctor.planner.candidate import Candidate
from cudnn_doctor.planner.candidates import V, python_range
from cudnn_doctor.versions import canonical_name

# A Jetson before Thor runs JetPack's own CUDA, for which PyPI has no wheel: NVIDIA serves them from its Jetson index.
JETSON_INDEX = "https://pypi.jetson-ai-lab.dev/jp6/cu126"
JETSON_SOURCE = (
    "https://github.com/pytorch/TensorRT/pull/3453 ('Jetson now distribute wheels on "
    "https://pypi.jetson-ai-lab.dev/ jetpack6.2 "
    "wheels: https://pypi.jetson-ai-lab.dev/jp6/cu126'); "
    "https://developer.nvidia.com/embedded/jetpack/downloads/archive-7.1.md "
    "(JetPack 7, Jetson Thor: one CUDA 13.0 for every Arm target, as on SBSA servers)"
)
_SBSA_JETSONS_FROM = "10.0"  # Thor (compute capability 11.0, JetPack 7) installs the SBSA builds


def archive_arch(arch: str) -> str:
    """NVIDIA's archive name of the architecture: `cudnn-linux-sbsa-…` for aarch64 servers."""
    return "sbsa" if arch == "aarch64" else arch


def jetson(compute_capability: Optional[str]) -> bool:
    """A Jetson board that runs JetPack's own CUDA: every GPU of that compute capability is a Jetson, before Thor."""
    if not compute_capability or V(compute_capability) >= V(_SBSA_JETSONS_FROM):
        return False
    names = [row.name for row in knowledge.table("gpus").gpus if row.cc == compute_capability]
    return bool(names) and all(name.startswith("Jetson") for name in names)


def on_aarch64(found: Iterable[Candidate]) -> Iterator[Candidate]:
    """The builds of `found` (planned for Linux x86_64) that exist for Linux aarch64, restated for it."""
    for candidate in found:
        if candidate.framework == "cuda":
            yield candidate
            continue
        if cpu_only_reason(candidate.framework) is not None:
            continue
        release = _release(candidate)
        if release is None or not release.aarch64 or candidate.pip_options:
            continue
        if candidate.framework == "torch":
            cuda = cuda_of(release.requires_aarch64)
            if cuda is None or not candidate.build.startswith("cu"):
                continue  # a CPU build on aarch64 (torch before 2.11): no GPU build to plan
            candidate = candidate._replace(
                cuda=cuda,
                build=f"cu{cuda.replace('.', '')}",
                cudnn=_cudnn_of(release.requires_aarch64) or candidate.cudnn,
            )
        yield candidate._replace(python=python_range(release.requires_python, release.aarch64) or candidate.python)


def cpu_only_reason(name: str) -> Optional[tuple[str, str]]:
    """(why, source) where the vendor says a framework's Linux aarch64 wheels have no GPU support."""
    said = knowledge.framework(name).aarch64_cpu_only
    return ("has no GPU build for Linux aarch64", said) if said else None


def _release(candidate: Candidate) -> Optional[PublishedRelease]:
    """The recorded index row of the distribution the candidate's pip line installs at its version: for JAX, the CUDA
    plugin (jax itself is a pure wheel)."""
    name = canonical_name(candidate.requirement.split("==")[0].split("[")[0])
    if candidate.framework == "jax":
        name = f"jax-{candidate.build.split('-')[0]}-plugin"  # cuda12, cuda12-local -> jax-cuda12-plugin
        rows = [r for r in knowledge.published(name) if V(r.version).release[:3] == V(candidate.version).release[:3]]
        return max(rows, key=lambda r: V(r.version)) if rows else None
    return next((r for r in knowledge.published(name) if V(r.version) == V(candidate.version)), None)


def cuda_of(requires: Iterable[str]) -> Optional[str]:
    """The CUDA X.Y a wheel's pins name: `cuda-toolkit==13.0.2`, `nvidia-cuda-runtime-cu12==12.8.90`,
    `nvidia-cuda-runtime==13.0.96`; None when it pins no CUDA runtime (a CPU build)."""
    for text in requires:
        name, _, version = text.partition("==")
        base = name.split("[")[0]
        if version and (base == "cuda-toolkit" or base.startswith("nvidia-cuda-runtime")):
            return ".".join(version.split(".")[:2])
    return None


def _cudnn_of(requires: Iterable[str]) -> Optional[str]:
    return next(
        (text.partition("==")[2] for text in requires if text.startswith("nvidia-cudnn-cu") and "==" in text), None
    )
