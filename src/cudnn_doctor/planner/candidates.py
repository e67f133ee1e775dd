"""Every GPU build the knowledge holds for one framework on one OS, as `Candidate`s ordered newest first.

A candidate is a release the user can `pip install` and the CUDA / cuDNN it needs or brings. Nothing
here judges a candidate against the machine: that is `constraints`. Where a framework's build names
only a CUDA major and takes CUDA from the system (onnxruntime-gpu "CUDA 12.x"), one candidate is made
per toolkit minor of that major, so that choosing the toolkit is part of the search.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Sequence

from packaging.version import InvalidVersion, Version

from cudnn_doctor import knowledge
from cudnn_doctor.knowledge.records import VersionRange
from cudnn_doctor.planner.candidate import Candidate

if TYPE_CHECKING:
    from cudnn_doctor.planner.candidate import CommonFields, TensorflowFields
from cudnn_doctor.planner.request import Wanted
from cudnn_doctor.versions import cuda_tag

V = lru_cache(maxsize=None)(Version)


def candidates(wanted: Wanted, os_name: str, arch: str = "x86_64") -> list[Candidate]:
    """The builds of `wanted.name` on `os_name` (windows | linux) and `arch` whose release the specifier accepts, newest
    first."""
    found: Iterable[Candidate] = _BUILDERS[wanted.name](os_name)
    if arch == "aarch64":
        from cudnn_doctor.planner.arch import on_aarch64

        found = on_aarch64(found)
    return [c for c in found if wanted.accepts(V(c.version)) and _extras_fit(wanted, c)]


def all_candidates(name: str, os_name: str) -> list[Candidate]:
    return list(_BUILDERS[name](os_name))


def toolkit_candidates(os_name: str) -> list[Candidate]:
    """A CUDA toolkit alone (no framework): the newest update of every minor from 10.0, newest first."""
    return list(_toolkits(os_name))


def _extras_fit(wanted: Wanted, candidate: Candidate) -> bool:
    """`tensorflow[and-cuda]` or `jax[cuda12-local]` asks for that build only."""
    if not wanted.extras:
        return True
    return candidate.build in wanted.extras


def _series(first: str, newest: Optional[str]) -> list[str]:
    """The patch releases from `first` to `newest` of one minor ("2.1.0".."2.1.2"), newest first."""
    start = V(first)
    if not newest or V(newest) <= start:
        return [first]
    end = V(newest)
    major, minor = start.release[0], start.release[1]
    patches = range(start.release[2] if len(start.release) > 2 else 0, end.release[2] + 1)
    return [f"{major}.{minor}.{p}" for p in reversed(patches)]


# torch ---------------------------------------------------------------------------------------------


def _torch(os_name: str) -> Iterator[Candidate]:
    table = knowledge.table("torch")
    for row in table.releases:
        versions = _series(f"{row.version}.0", row.patch)
        for version in versions:
            for cuda in sorted(row.cuda_on(os_name), key=V, reverse=True):
                tag = cuda_tag(cuda)  # 12.1 -> 121, as PyTorch names the build (versions.CUDA_TAG_SHAPES)
                yield Candidate(
                    framework="torch",
                    version=version,
                    build=f"cu{tag}",
                    cuda=cuda,
                    cudnn=row.cudnn_of(cuda),
                    cudnn_rule="bundled",
                    python=row.python_on(os_name),
                    cuda_from="bundled",
                    requirement=_torch_requirement(version, tag, row, cuda, os_name),
                    pip_options=_torch_index(version, tag, row, cuda, os_name),
                    source=row.source,
                    conda=_torch_conda(row, version, cuda),
                )


def _torch_is_pypi_default(row: knowledge.framework_records.TorchRelease, cuda: str, os_name: str) -> bool:
    """`pip install torch` alone gets this variant (PyPI's Linux wheel; PyPI's Windows wheels are CPU-only)."""
    return os_name == "linux" and row.pypi_cuda == cuda


def _torch_requirement(
    version: str, tag: str, row: knowledge.framework_records.TorchRelease, cuda: str, os_name: str
) -> str:
    if V(version) < V("1.11") and not _torch_is_pypi_default(row, cuda, os_name):
        return f"torch=={version}+cu{tag}"  # the find-links page holds every variant under its local version
    return f"torch=={version}"


def _torch_index(
    version: str, tag: str, row: knowledge.framework_records.TorchRelease, cuda: str, os_name: str
) -> tuple[str, ...]:
    if _torch_is_pypi_default(row, cuda, os_name):
        return ()
    if V(version) < V("1.11"):
        find_links = getattr(
            knowledge.table("torch"), "find_links", None
        )  # a table that names the page; the shipped one does not
        return (
            ("-f", find_links.url)
            if find_links is not None
            else ("-f", "https://download.pytorch.org/whl/torch_stable.html")
        )
    return ("--index-url", knowledge.torch_index_url(V(cuda)))


def _torch_conda(row: knowledge.framework_records.TorchRelease, version: str, cuda: str) -> Optional[str]:
    return row.conda_command(cuda)


# tensorflow ----------------------------------------------------------------------------------------


def _tensorflow(os_name: str) -> Iterator[Candidate]:
    table = knowledge.table("tensorflow")
    for row in sorted((r for r in table.tested_builds if r.os == os_name), key=lambda r: V(r.version), reverse=True):
        for version in _series(row.version, row.patch):
            package = _tensorflow_package(V(version))
            common: TensorflowFields = dict(
                framework="tensorflow",
                version=version,
                cuda=row.cuda,
                cudnn=row.cudnn,
                python=row.python,
                pip_options=(),
            )
            source = _and_cuda_source(package, version) if os_name == "linux" else None
            if source is not None:  # the pip route first: the wheels bring CUDA and cuDNN
                yield Candidate(
                    **common,
                    build="and-cuda",
                    cudnn_rule="bundled",
                    cuda_from="bundled",
                    requirement=f"{package}[and-cuda]=={version}",
                    source=source,
                )
            yield Candidate(
                **common,
                build="system",
                cudnn_rule="series",
                cuda_from="system",
                requirement=f"{package}=={version}",
                source=row.source,
                conda=_tensorflow_conda(row, os_name),
            )


def _and_cuda_source(package: str, version: str) -> Optional[str]:
    """Where it is said that the release has an `[and-cuda]` extra: the hand-kept row, else its own METADATA
    (recorded)."""
    row = knowledge.tensorflow_and_cuda(V(version))
    if row is not None:
        return row.source
    extra = knowledge.published_extra(package, version, "and-cuda")
    return f"{extra.source} ({package} {version} METADATA: Provides-Extra: and-cuda)" if extra is not None else None


def _tensorflow_package(version: Version) -> str:
    row = knowledge.tensorflow_package(version)
    return row.name if row else "tensorflow"


def _tensorflow_conda(row: knowledge.framework_records.TensorflowBuild, os_name: str) -> Optional[str]:
    conda = knowledge.tensorflow_windows_conda(V(row.version)) if os_name == "windows" else None
    return conda.command if conda else None


# onnxruntime ---------------------------------------------------------------------------------------


def _onnxruntime(os_name: str) -> Iterator[Candidate]:
    for version in _releases("onnxruntime-gpu"):
        for row in knowledge.onnxruntime_builds(V(version)):
            if row.feed != "pypi" and not row.index_url:
                continue  # a side feed whose pip index the vendor does not publish: no command could reach it
            reach = knowledge.wheel_reach("onnxruntime", os_name, V(version)) if row.feed == "pypi" else None
            feed_options = (
                ("--extra-index-url", row.index_url) if row.feed != "pypi" and row.index_url else ()
            )  # a side feed has one (above)
            wheels = _pypi_wheels("onnxruntime-gpu", version, os_name) if row.feed == "pypi" else None
            if wheels is not None and not wheels[0]:
                continue  # PyPI has no wheel of that release for this OS
            python = wheels[1] if wheels else None  # the Pythons PyPI's wheels of that release serve
            if reach is not None and reach.extras:
                yield Candidate(
                    framework="onnxruntime",
                    version=version,
                    build=f"pypi[{reach.extras}]",
                    cuda=row.cuda,
                    cudnn=row.cudnn,
                    cudnn_rule="bundled",
                    python=python,
                    cuda_from="bundled",
                    requirement=f"onnxruntime-gpu[{reach.extras}]=={version}",
                    pip_options=(),
                    source=reach.source,
                    note="call onnxruntime.preload_dlls() before creating a session: it loads CUDA and cuDNN from "
                    "the nvidia-* wheels",
                )
            for cuda in _system_toolkits(row.cuda, os_name):
                yield Candidate(
                    framework="onnxruntime",
                    version=version,
                    build=row.feed if row.feed == "pypi" else f"feed:{row.feed}",
                    cuda=cuda,
                    cudnn=row.cudnn,
                    cudnn_rule="series",
                    python=python,
                    cuda_from="system",
                    requirement=f"onnxruntime-gpu=={version}",
                    pip_options=feed_options,
                    source=row.source,
                )


# paddle --------------------------------------------------------------------------------------------


def _paddle(os_name: str) -> Iterator[Candidate]:
    rows = [row for row in knowledge.table("frameworks").paddle_builds if row.os == os_name]
    for version in _releases("paddlepaddle-gpu"):
        parsed = V(version)
        bundled = knowledge.pip_brings_cuda("paddle", parsed, os_name) is not None
        for row in sorted(
            (r for r in rows if r.versions is None or r.versions.contains(parsed, prereleases=True)),
            key=lambda r: V(r.cuda),
            reverse=True,
        ):
            requirement, options = _paddle_pip(version, row)
            cudas = [row.cuda] if bundled else _system_toolkits(row.cuda, os_name)
            # A release is built for one set of Pythons: its PyPI wheels say which, for the builds on Paddle's index
            # too.
            wheels = _pypi_wheels("paddlepaddle-gpu", version, os_name)
            if wheels is not None and wheels[0] is False and row.tag == "pypi":
                continue  # PyPI has no wheel of that release for this OS
            for cuda in cudas:
                yield Candidate(
                    framework="paddle",
                    version=version,
                    build=row.tag,
                    cuda=cuda,
                    cudnn=_series_of(row.cudnn),
                    cudnn_rule="bundled" if bundled else "series",
                    python=wheels[1] if wheels else None,
                    cuda_from="bundled" if bundled else "system",
                    requirement=requirement,
                    pip_options=options,
                    source=row.source,
                )


def _pypi_wheels(distribution: str, version: str, os_name: str) -> Optional[tuple[bool, Optional[VersionRange]]]:
    """(whether PyPI has a wheel of that release for the OS, the Pythons its wheels serve) from the recorded index; None
    when the release is not recorded (another index serves it)."""
    release = next((r for r in knowledge.published(distribution) if r.version == version), None)
    if release is None:
        return None
    tags = release.windows if os_name == "windows" else release.linux
    return bool(tags), python_range(release.requires_python, tags)


def _series_of(cudnn: Optional[str]) -> Optional[str]:
    """Paddle's pages pair a build with "cuDNN v8.4.0": the 8.4 series."""
    if cudnn is None:
        return None
    return ".".join(cudnn.split(".")[:2])


def _paddle_pip(version: str, row: knowledge.framework_records.PaddleBuild) -> tuple[str, tuple[str, ...]]:
    if row.tag.startswith("post"):
        requirement = f"paddlepaddle-gpu=={version}.{row.tag}"
    else:
        requirement = f"paddlepaddle-gpu=={version}"
    if not row.index_url:
        return requirement, ()
    flag = "-f" if row.index_url.endswith(".html") else "-i"
    return requirement, (flag, row.index_url)


# jax -----------------------------------------------------------------------------------------------


# jaxlib's CUDA wheels before the plugins (0.4.25 and older) are not on PyPI: JAX's install guide of those releases
# takes them from this page (https://github.com/jax-ml/jax/blob/jax-v0.4.20/README.md:
# pip install --upgrade "jax[cuda12_pip]"
# -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html)
JAX_CUDA_RELEASES = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"


def _jax(os_name: str) -> Iterator[Candidate]:
    if os_name != "linux":
        return
    for version in _releases("jax"):
        for row in knowledge.jax_builds(V(version)):
            installs, python = _jax_installs(version, row.extra)
            if not installs:
                continue  # the release has no such extra, or what it pins was never published (jax[cuda13]==0.7.0)
            options = () if row.distribution.startswith("jax-cuda") else ("-f", JAX_CUDA_RELEASES)
            system = row.loads_cuda == "system"
            cudas = (
                [c for c in _system_toolkits(row.cuda, os_name) if not row.cuda_min or V(c) >= V(row.cuda_min)]
                if system
                else [row.cuda]
            )
            for cuda in cudas:
                yield Candidate(
                    framework="jax",
                    version=version,
                    build=row.extra,
                    cuda=cuda,
                    cudnn=row.cudnn,
                    cudnn_rule="at-least",
                    python=python,
                    cuda_from=row.loads_cuda,
                    requirement=f"jax[{row.extra}]=={version}",
                    pip_options=options,
                    source=row.source,
                    driver_floor=row.driver_linux,
                    cuda_min=row.cuda_min if not system else None,
                )


def _jax_installs(version: str, extra: str) -> tuple[bool, Optional[VersionRange]]:
    """Whether `jax[extra]==version` installs, per the recorded package index: the release provides the extra and each
    recorded distribution it pins has a release that fits; and the Pythons it installs on (jax's Requires-Python and the
    CPython tags of the newest fitting plugin). (True, None) where that release's extras were not recorded."""
    if not knowledge.extras_recorded("jax", version):
        return True, None
    adds = knowledge.published_extra("jax", version, extra)
    if adds is None:
        return False, None
    from packaging.requirements import Requirement  # only a JAX plan reads requirements: not on `check`'s path

    tags: tuple[str, ...] = ()
    for text in adds.requires:
        requirement = Requirement(text)
        releases = knowledge.published(requirement.name)
        if not releases:
            continue  # not recorded (jaxlib, the nvidia-* wheels): not judged here
        fitting = [r for r in releases if r.linux and requirement.specifier.contains(r.version)]
        if not fitting:
            return False, None
        tags = tags or fitting[0].linux
    jax = next((r for r in knowledge.published("jax") if r.version == version), None)
    return True, python_range(jax.requires_python if jax else None, tags)


def python_range(requires: Optional[VersionRange], tags: Sequence[str]) -> Optional[VersionRange]:
    """The Pythons a release installs on: its Requires-Python and the CPython minors its wheels are tagged for
    ("cp310"…"cp313": >=3.10,<3.14); None when neither says."""
    minors = sorted(int(tag[3:]) for tag in tags if tag.startswith("cp3") and tag[3:].isdigit())
    tagged = f">=3.{minors[0]},<3.{minors[-1] + 1}" if minors else None
    if requires is None or (minors and all(requires.contains(f"3.{minor}") for minor in minors)):
        return VersionRange(tagged) if tagged else None  # Requires-Python says nothing the tags do not
    return VersionRange(f"{requires},{tagged}" if tagged else str(requires))


# cupy ----------------------------------------------------------------------------------------------

CUPY_SOURCE = "https://docs.cupy.dev/en/stable/install.html"


def _cupy(os_name: str) -> Iterator[Candidate]:
    """One wheel per CUDA major (cupy-cuda11x, -12x, -13x), from the recorded index. A release whose METADATA offers the
    `ctk` extra takes CUDA from NVIDIA's wheels (`cupy-cuda12x[ctk]`); otherwise it loads a system toolkit of its major
    (any minor). CuPy needs no cuDNN: v14 removed cupy.cudnn, v13 uses it only when present."""
    releases = [
        (row, int(row.distribution[len("cupy-cuda") : -1]))
        for distribution in ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x")
        for row in knowledge.published(distribution)
    ]
    for row, major in sorted(releases, key=lambda item: (V(item[0].version), item[1]), reverse=True):
        tags = row.windows if os_name == "windows" else row.linux
        if V(row.version).is_prerelease or not tags:
            continue
        common: CommonFields = dict(
            framework="cupy",
            version=row.version,
            cudnn=None,
            python=python_range(row.requires_python, tags),
            pip_options=(),
        )
        ctk = knowledge.published_extra(row.distribution, row.version, "ctk")
        if ctk is not None:
            requirement = f"{row.distribution}[ctk]=={row.version}"
            source = (
                f"{row.source} ({row.distribution} {row.version} METADATA: Provides-Extra: ctk, "
                f"{'; '.join(ctk.requires)})"
            )
            yield Candidate(
                **common,
                build="ctk",
                cuda=str(major),
                cudnn_rule="none",
                cuda_from="bundled",
                requirement=requirement,
                source=source,
            )
        for cuda in _system_toolkits(str(major), os_name):
            yield Candidate(
                **common,
                build="system",
                cuda=cuda,
                cudnn_rule="none",
                cuda_from="system",
                requirement=f"{row.distribution}=={row.version}",
                source=f"{row.source}; {CUPY_SOURCE} (the CUDA Toolkit is required unless CUDA itself comes from PyPI)",
            )


# the toolkit alone ---------------------------------------------------------------------------------


def _toolkits(os_name: str) -> Iterator[Candidate]:
    for full in _newest_updates():
        release = knowledge.toolkit_release(V(full))
        if release is None:  # never: each is a row of the same table
            continue
        yield Candidate(
            framework="cuda",
            version=full,
            build="toolkit",
            cuda=".".join(full.split(".")[:2]),
            cudnn=None,
            cudnn_rule="newest",
            python=None,
            cuda_from="system",
            requirement="",
            pip_options=(),
            source=release.source,
        )


@cache
def _newest_updates() -> tuple[str, ...]:
    """The newest release of every CUDA minor NVIDIA's Table 3 lists (8.0 on), newest first ("12.9.1", "12.8.1",
    ...)."""
    newest: dict[tuple[int, ...], str] = {}
    for row in knowledge.table("cuda_driver").toolkits:
        version = V(row.cuda)
        if version.release[:2] not in newest or version > V(newest[version.release[:2]]):
            newest[version.release[:2]] = row.cuda
    return tuple(sorted(newest.values(), key=V, reverse=True))


def newest_update(cuda: str) -> Optional[str]:
    """The newest release of a CUDA minor ("11.2" -> "11.2.2"), None for a minor NVIDIA lists no release of."""
    wanted = V(cuda).release[:2]
    return next((full for full in _newest_updates() if V(full).release[:2] == wanted), None)


def _system_toolkits(cuda: str, os_name: str) -> list[str]:
    """The toolkit minors a system-CUDA build can use: that minor ("11.8"), or every minor of a major ("12")."""
    if "." in cuda and not cuda.endswith(".x"):
        return [".".join(cuda.split(".")[:2])]
    major = int(cuda.split(".")[0])
    return [".".join(full.split(".")[:2]) for full in _newest_updates() if V(full).major == major]


def _releases(distribution: str) -> list[str]:
    """The final releases of a distribution, newest first (knowledge `framework_releases`)."""
    out = []
    for value in knowledge.framework_releases(distribution):
        try:
            if V(value).is_prerelease:
                continue
        except InvalidVersion:
            continue
        out.append(value)
    return sorted(out, key=V, reverse=True)


_BUILDERS = {
    "torch": _torch,
    "tensorflow": _tensorflow,
    "onnxruntime": _onnxruntime,
    "paddle": _paddle,
    "jax": _jax,
    "cupy": _cupy,
    "cuda": _toolkits,
}
