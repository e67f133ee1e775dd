"""`verify`: run the worker for each framework in the target interpreter, then judge its figures.

The worker (the package cudnn_doctor_verify in system/scripts, one backend module per framework)
runs in the interpreter from its files, with that interpreter's frameworks; the GPU's datasheet peak and the thresholds
come from the knowledge,
its clocks and power from NVML in this process.
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Callable, Optional, Sequence

from cudnn_doctor import __version__
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import System
from cudnn_doctor.verify import judge

MARKER = "@@cudnn-doctor-verify@@"
FRAMEWORKS = ("torch", "tensorflow", "paddle", "jax", "onnxruntime")
DISTRIBUTIONS = {  # what `all` looks for in the interpreter
    "torch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tf-nightly"),
    "paddle": ("paddlepaddle-gpu", "paddlepaddle"),
    "jax": ("jax",),
    "onnxruntime": ("onnxruntime-gpu", "onnxruntime"),
}


WORKER = "cudnn_doctor_verify.main"  # the worker's entry, in system/scripts: it runs in the target interpreter


def installed(system: System, executable: str) -> list[str]:
    """The frameworks `all` means: those with a distribution installed in the interpreter."""
    info = system.python_info(executable)
    names = {name.lower().replace("_", "-") for name in (info.packages if info else {})}
    return [framework for framework, dists in DISTRIBUTIONS.items() if names & set(dists)]


def run(
    system: System,
    executable: str,
    frameworks: Sequence[str],
    quick: bool,
    progress: Optional[Callable[[str], Callable[[str], None]]] = None,
    cpu_only: bool = False,
) -> dict[str, Any]:
    """The verify result (reports/verify.schema.json) for `frameworks` in `executable`; `progress(name)` gives
    the callback for one framework's progress lines."""
    nvml = system.nvml() or {}
    gpus = nvml.get("gpus") or []
    reports = [
        _run_worker(system, executable, name, quick, progress(name) if progress else None, cpu_only)
        for name in frameworks
    ]
    ran_on = next((r.device_name for r in reports if r.device_name), None)
    gpu = (
        _gpu(gpus, ran_on, nvml.get("driver_version"), system.gpu_state())
        if (gpus or ran_on) and not cpu_only
        else None
    )
    peak = judge.peak_of(gpu["name"]) if gpu else None
    if gpu is not None:
        gpu["peak"] = _peak_json(peak)
    limits = judge.thresholds()
    out = []
    for report in reports:
        framework = {
            "framework": report.framework,
            "version": report.version,
            "cuda": report.cuda,
            "cudnn": report.cudnn,
            "status": report.status,
            "message": report.message,
            **{
                key: value
                for key, value in (("import_s", report.import_s), ("total_s", report.total_s))
                if value is not None
            },
            "notes": list(report.notes),
            "smoke": list(report.smoke),
            "benchmarks": judge.rates(list(report.benchmarks), peak),
        }
        framework["verdicts"] = judge.verdicts(framework, peak, limits, gpu, cpu_only)
        out.append(framework)
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return {
        "schema": "cudnn-doctor-verify/1",
        "tool": {"name": "cudnn-doctor", "version": __version__},
        "time": now.isoformat().replace("+00:00", "Z"),
        "python": executable,
        "quick": quick,
        "cpu_only": cpu_only,
        "exit_code": judge.exit_code(out, gpu, cpu_only),
        "gpu": gpu,
        "frameworks": out,
        "compare": None,
    }


class WorkerReport(Record):
    """What the worker printed for one framework, read field by field; a field of the wrong type is left out."""

    framework: str
    status: str = "error"
    message: Optional[str] = None
    version: Optional[str] = None
    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    device_name: Optional[str] = None
    import_s: Optional[float] = None
    total_s: Optional[float] = None
    notes: tuple[str, ...] = ()
    smoke: tuple[dict[str, Any], ...] = ()
    benchmarks: tuple[dict[str, Any], ...] = ()

    @classmethod
    def read(cls, framework: str, document: Any) -> WorkerReport:
        """The report of the worker's JSON object (`framework` when it names none)."""
        if not isinstance(document, dict):
            return cls(framework, message=f"the {framework} worker printed no report object")

        def text(key: str) -> Optional[str]:
            value = document.get(key)
            return value if isinstance(value, str) else None

        def seconds(key: str) -> Optional[float]:
            value = document.get(key)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        def objects(key: str) -> tuple[dict[str, Any], ...]:
            return tuple(item for item in document.get(key) or () if isinstance(item, dict))

        return cls(
            framework=text("framework") or framework,
            status=text("status") or "error",
            message=text("message"),
            version=text("version"),
            cuda=text("cuda"),
            cudnn=text("cudnn"),
            device_name=text("device_name"),
            import_s=seconds("import_s"),
            total_s=seconds("total_s"),
            notes=tuple(str(note) for note in document.get("notes") or ()),
            smoke=objects("smoke"),
            benchmarks=objects("benchmarks"),
        )


def _run_worker(
    system: System, executable: str, name: str, quick: bool, progress: Optional[Callable[[str], None]], cpu_only: bool
) -> WorkerReport:
    """One framework's raw figures; a worker that dies or hangs becomes a report with status "error"."""
    config = json.dumps({"framework": name, "quick": quick, "cpu_only": cpu_only})
    timeout = 120.0 if quick else 900.0
    try:
        done = system.run_worker(executable, WORKER, [config], timeout, progress)
    except OSError as error:
        return WorkerReport(name, message=f"cannot start {executable}: {error}")
    if done.timed_out:
        return WorkerReport(name, message=f"the {name} benchmarks took longer than {timeout:g} s")
    report = done.report_after(MARKER)
    if report is None:
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return WorkerReport(name, message=f"the {name} worker failed: {last[:300]}")
    return WorkerReport.read(name, report)


def _gpu(
    gpus: list[dict[str, Any]], ran_on: Optional[str], driver: Optional[str], states: Optional[list[dict[str, Any]]]
) -> dict[str, Any]:
    """The NVML GPU the framework ran on (by name; the first one when the name is not known)."""
    index = next((i for i, g in enumerate(gpus) if ran_on and g.get("name") == ran_on), 0)
    nvml = gpus[index] if gpus else {"name": ran_on}
    state = (states or [])[index] if states and index < len(states) else {}
    return {
        "name": nvml.get("name") or ran_on or "unknown GPU",
        "compute_capability": nvml.get("compute_capability"),
        "driver": driver,
        "memory_mib": nvml.get("memory_total_mib"),
        "clocks_mhz": state.get("clocks_mhz") or {},
        "power_w": state.get("power_w") or {},
        "throttle_reasons": state.get("throttle_reasons") or [],
    }


def _peak_json(peak: Optional[judge.Peak]) -> Optional[dict[str, Any]]:
    if peak is None:
        return None
    return {
        "model": peak.model,
        **peak.rates,
        "memory_gbs": peak.memory_gbs,
        "host_link_gbs": peak.host_link_gbs,
        "source": peak.source,
    }
