"""A GPU build the user can `pip install`, with the CUDA and cuDNN it needs or brings: what the planner searches
over."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, TypedDict

from cudnn_doctor.knowledge.records import VersionRange
from cudnn_doctor.record import Record


class Candidate(Record):
    framework: str  # torch | tensorflow | onnxruntime | paddle | jax | cupy | cuda (a toolkit and cuDNN alone)
    version: str  # the release planned, as pip pins it
    build: str  # cu121 | and-cuda | system | post117 | cu126 | pypi | cuda12 | cuda12-local | <feed>
    cuda: str  # the toolkit it is built for, "12.1"; a major alone ("12") when the build says only that
    cudnn: Optional[str]  # the cuDNN it needs or brings ("8.1", "9.8", "9", "9.1.0.70"); None: not published
    # series: a release of that X[.Y] | at-least: that release or newer of its major | bundled: what it brings
    # | none: needs none
    cudnn_rule: str
    python: Optional[VersionRange]  # the Pythons it has wheels for; None: not published
    cuda_from: str  # bundled (the wheels bring CUDA and cuDNN) | system (a toolkit and cuDNN to install)
    requirement: str  # what pip installs: "torch==2.1.2", "tensorflow[and-cuda]==2.15.1"
    pip_options: tuple[str, ...]  # index options of the pip line
    source: str  # the vendor page of the row this comes from
    conda: Optional[str] = None  # the conda line the vendor gives for it, when it gives one
    driver_floor: Optional[str] = None  # a driver the framework itself requires beyond its CUDA's (JAX's guide)
    note: Optional[str] = None  # what to do after installing (onnxruntime.preload_dlls())
    # for a build that names only its CUDA major: the oldest X.Y it runs with (JAX 0.4.17: 12.2)
    cuda_min: Optional[str] = None

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".")[0])

    @property
    def cudnn_major(self) -> Optional[int]:
        return int(self.cudnn.split(".")[0]) if self.cudnn else None

    def label(self) -> str:
        return f"{self.framework} {self.version} {self.build}"


if TYPE_CHECKING:  # for the checker only: nothing to build at run time

    class CommonFields(TypedDict):
        """The fields every build of one release shares (they go to `Candidate` as keywords)."""

        framework: str
        version: str
        cudnn: Optional[str]
        python: Optional[VersionRange]
        pip_options: tuple[str, ...]

    class TensorflowFields(CommonFields):
        cuda: str
