"""Driver and GPU facts: NVML when it loads, else `nvidia-smi`, else nothing."""

from __future__ import annotations

from typing import Optional

from cudnn_doctor import knowledge
from cudnn_doctor.facts import SMI_NOT_UNDERSTOOD, DriverFacts, Gpu
from cudnn_doctor.lazyre import regex
from cudnn_doctor.system.interface import System
from cudnn_doctor.versions import major_minor, parse_cuda_version, parse_version

_CAPABILITY = regex(r"^[0-9]{1,3}\.[0-9]{1,3}$")


def probe_driver(system: System) -> DriverFacts:
    nvml = system.nvml()
    if nvml is not None:
        gpus = tuple(_nvml_gpu(g) for g in nvml.get("gpus") or [])
        cuda = parse_cuda_version(nvml.get("cuda_driver_version"))
        facts = DriverFacts(
            source="nvml",
            version=nvml.get("driver_version"),
            cuda=major_minor(cuda) if cuda else None,
            cuda_source="nvml" if cuda else None,
            gpus=gpus,
        )
    else:
        from cudnn_doctor.probes import nvidia_smi  # only machines without NVML need the parser

        smi = system.run(["nvidia-smi"], timeout=15)
        if not smi.ok:
            reason = (
                "not found" if smi.not_found else "timed out" if smi.timed_out else (smi.stderr or smi.stdout).strip()
            )
            return DriverFacts(None, smi_error=f"nvidia-smi: {reason or f'exit code {smi.returncode}'}")
        table = nvidia_smi.parse_table(smi.stdout)
        if (
            table.driver_version is None
        ):  # exit code 0 is not a driver: say what it printed instead of reporting "driver None"
            first = next((line.strip() for line in smi.stdout.splitlines() if line.strip()), "")
            said = f": {first[:200]!r}" if first else " (it printed nothing)"
            return DriverFacts(None, smi_error=f"{SMI_NOT_UNDERSTOOD}{said}")
        by_index = {g.index: g for g in table.gpus}
        query = system.run(["nvidia-smi", *nvidia_smi.QUERY_ARGS], timeout=15)
        if query.ok:
            for gpu in nvidia_smi.parse_query(query.stdout):
                by_index[gpu.index] = gpu
        gpus = tuple(
            Gpu(
                name=g.name,
                compute_capability=_capability(g.compute_capability),
                memory_mib=g.memory_mib,
                capability_source="nvidia-smi" if _capability(g.compute_capability) else None,
            )
            for g in sorted(by_index.values(), key=lambda g: g.index)
        )
        facts = DriverFacts(
            source="nvidia-smi",
            version=table.driver_version,
            cuda=table.cuda_version,
            cuda_source="nvidia-smi" if table.cuda_version else None,
            gpus=gpus,
        )
    return _complete(facts, system.os)


def _nvml_gpu(gpu: dict) -> Gpu:
    """One GPU as NVML described it; a fixture may leave out any field."""
    capability = _capability(gpu.get("compute_capability"))
    return Gpu(
        name=gpu.get("name") or "NVIDIA GPU (no name reported)",
        compute_capability=capability,
        memory_mib=gpu.get("memory_total_mib"),
        capability_source="nvml" if capability else None,
    )


def _capability(value: object) -> Optional[str]:
    """The compute capability as drivers write it ("8.6"); anything else ("", "x", "-1.0") is none, and the name table
    may know better."""
    return value if isinstance(value, str) and _CAPABILITY.match(value) else None


def _complete(facts: DriverFacts, os_name: str) -> DriverFacts:
    """Fill what the driver did not say from the knowledge tables (marked as such)."""
    gpus = tuple(
        g
        if g.compute_capability
        else Gpu(
            name=g.name,
            compute_capability=knowledge.gpu_compute_capability(g.name),
            memory_mib=g.memory_mib,
            capability_source="name-table" if knowledge.gpu_compute_capability(g.name) else None,
        )
        for g in facts.gpus
    )
    cuda, cuda_source = facts.cuda, facts.cuda_source
    driver = parse_version(facts.version)
    if cuda is None and driver is not None:
        found = knowledge.max_cuda_for_driver(driver, os_name)
        if found:
            cuda, cuda_source = major_minor(found[0]), "driver-table"
    return DriverFacts(
        source=facts.source,
        version=facts.version,
        cuda=cuda,
        cuda_source=cuda_source,
        gpus=gpus,
        smi_error=facts.smi_error,
    )
