"""Probes gather facts through a System and judge nothing.

`run_probes` runs each probe; one that raises becomes a `ProbeFailure` in the facts (and a
finding that names it), never a crash of the whole diagnosis.
"""

from __future__ import annotations

from typing import Callable, Optional, TypeVar

from cudnn_doctor.facts import (
    Confirmation,
    CudnnInstall,
    DriverFacts,
    DriverState,
    EnvironmentFacts,
    Facts,
    FrameworkBuild,
    InstalledWheel,
    PackageOwner,
    ProbeFailure,
    PythonEnv,
    ToolkitFacts,
)
from cudnn_doctor.loader.driver import driver_files as probe_driver_files
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.loads import Resolution
from cudnn_doctor.probes.builds import probe_builds
from cudnn_doctor.probes.confirm import probe_confirmations
from cudnn_doctor.probes.cudnn import probe_cudnn
from cudnn_doctor.probes.driver_state import probe_driver_state
from cudnn_doctor.probes.environment import probe_environment
from cudnn_doctor.probes.gpu import probe_driver
from cudnn_doctor.probes.pythons import probe_frameworks, probe_pythons
from cudnn_doctor.probes.resolution import probe_resolutions
from cudnn_doctor.probes.toolkit import probe_toolkits
from cudnn_doctor.probes.wheels import probe_wheels
from cudnn_doctor.probes.wsl import probe_linux_driver_in_wsl, probe_linux_driver_packages
from cudnn_doctor.system.interface import System

T = TypeVar("T")


def run_probes(
    system: System,
    with_frameworks: bool = True,
    framework_timeout: float = 60.0,
    while_waiting: Optional[Callable[[], None]] = None,
) -> Facts:
    """All facts about the machine. `while_waiting` runs in this thread while the frameworks are being imported."""
    failures: list[ProbeFailure] = []

    def guarded(name: str, probe: Callable[[], T], fallback: T) -> T:
        try:
            return probe()
        except Exception as error:  # a probe bug must not hide the other facts
            import traceback  # only when a probe failed

            last = traceback.extract_tb(error.__traceback__)[-1]
            failures.append(
                ProbeFailure(
                    name, f"{type(error).__name__}: {error} ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
                )
            )
            return fallback

    index = FolderIndex(system)
    index.prefetch()  # the loader cache (`ldconfig -p`) is read while the probes below run
    pythons: tuple[PythonEnv, ...] = guarded("pythons", lambda: probe_pythons(system), ())
    # the framework imports take seconds: they run in the background while everything else is probed
    pool = None
    if with_frameworks and pythons:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=1)
    reports = pool.submit(probe_frameworks, system, pythons, framework_timeout, True) if pool else None
    driver = guarded("driver", lambda: probe_driver(system), DriverFacts(None))
    toolkits = guarded("toolkits", lambda: probe_toolkits(system), ToolkitFacts())
    environment = guarded("environment", lambda: probe_environment(system), EnvironmentFacts())
    wsl_driver: tuple[str, ...] = guarded("wsl", lambda: probe_linux_driver_in_wsl(system), ())
    wsl_packages: tuple[PackageOwner, ...] = (
        guarded("wsl packages", lambda: probe_linux_driver_packages(system, wsl_driver), ()) if wsl_driver else ()
    )
    driver_files: tuple[str, ...] = guarded("driver files", lambda: probe_driver_files(system, index), ())
    driver_state = guarded("driver state", lambda: probe_driver_state(system, driver, driver_files), DriverState())
    cudnn: tuple[CudnnInstall, ...] = guarded("cudnn", lambda: probe_cudnn(system, toolkits, pythons, index), ())
    if reports is not None and pool is not None:
        if while_waiting is not None:
            while_waiting()
        pythons = guarded("frameworks", reports.result, pythons)
        pool.shutdown()
    builds: tuple[FrameworkBuild, ...] = guarded("builds", lambda: probe_builds(pythons, system.os, system), ())
    resolutions: tuple[Resolution, ...] = guarded(
        "loader", lambda: probe_resolutions(system, pythons, builds, toolkits, index, cudnn, driver_files), ()
    )
    wheels: tuple[InstalledWheel, ...] = guarded("wheels", lambda: probe_wheels(system, pythons), ())
    confirmations: tuple[Confirmation, ...] = (
        guarded("loader check", lambda: probe_confirmations(system, resolutions), ()) if with_frameworks else ()
    )
    return Facts(
        os=system.os,
        arch=system.arch,
        wsl=system.wsl,
        driver=driver,
        toolkits=toolkits,
        pythons=pythons,
        environment=environment,
        linux_driver_in_wsl=wsl_driver,
        failures=tuple(failures),
        cudnn=cudnn,
        resolutions=resolutions,
        confirmations=confirmations,
        builds=builds,
        linux_driver_packages=wsl_packages,
        driver_files=driver_files,
        wheels=wheels,
        driver_state=driver_state,
    )
