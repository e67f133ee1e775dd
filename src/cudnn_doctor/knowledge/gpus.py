"""GPUs: compute capability by name, datasheet peaks, verify's thresholds, and which CUDA releases build for and
run on which compute capability."""

from __future__ import annotations

from typing import Optional

from packaging.version import Version

from cudnn_doctor.knowledge import _lookup, records, table


@_lookup
def gpu_compute_capability(name: str) -> Optional[str]:
    """The compute capability of a GPU by the name its driver reports: the row of that name, else the
    longest row name that starts it up to a word boundary ("NVIDIA H100 80GB HBM3" -> "NVIDIA H100",
    not "NVIDIA A10" for "NVIDIA A100"); "GeForce" is optional on both sides ("GTX 780"). None when no
    row fits, or when the best-fitting rows disagree ("GeForce GT 640": NVIDIA lists a GDDR5 3.5 and a
    GDDR3 2.1 part), because a wrong capability is worse than none."""
    wanted = _gpu_name_key(name)
    best: tuple[bool, int] = (False, -1)
    found: set[str] = set()
    for row in table("gpus").gpus:
        for key in _gpu_row_keys(row.name):
            exact = wanted == key
            if not exact and not (wanted.startswith(key) and not wanted[len(key)].isalnum()):
                continue
            score = (exact, len(key))
            if score > best:
                best, found = score, {row.cc}
            elif score == best:
                found.add(row.cc)
    return next(iter(found)) if len(found) == 1 else None


def _gpu_name_key(name: str) -> str:
    """A name as compared, also without "GeForce ", which NVML and NVIDIA's pages print and users often omit."""
    from cudnn_doctor.knowledge import fields

    key = fields.gpu_key(name)
    return key[len("geforce ") :] if key.startswith("geforce ") else key


def _gpu_row_keys(name: str) -> tuple[str, ...]:
    """A row's name as compared, and without a trailing note in parentheses ("NVIDIA GB10 (DGX Spark)");
    a name listing models with "/" stands for each ("Tesla C2050/C2070": "c2050" and "c2070")."""
    key = _gpu_name_key(name)
    bare = key.split(" (", 1)[0] if key.endswith(")") else key
    keys = [key, bare] if bare != key else [key]
    if "/" in bare:
        first, *others = bare.split("/")
        stem = first.rsplit(" ", 1)[0] + " " if " " in first else ""
        keys += [first] + [stem + other for other in others]
    return tuple(keys)


@_lookup
def gpu_peak(name: str) -> Optional[records.GpuPeak]:
    """The datasheet peak rates of a GPU by the name NVML reports ("NVIDIA H100 80GB HBM3", "Tesla T4"),
    else by the table's model name ("H100 SXM5"); compared like `gpu_compute_capability` (case, spaces and
    the "NVIDIA "/"Tesla "/"GeForce " brand do not matter), but only whole names: "NVIDIA GeForce RTX 4090 D"
    is not an RTX 4090. None when no row or several rows fit, because a wrong peak makes a wrong verdict."""
    from cudnn_doctor.knowledge import fields

    wanted = fields.peak_name_key(name)
    rows = table("gpus").peaks
    for keys_of in (lambda row: row.names, lambda row: (row.model,)):
        found = [row for row in rows if wanted in {fields.peak_name_key(key) for key in keys_of(row)}]
        if found:
            return found[0] if len(found) == 1 else None
    return None


@_lookup
def verify_threshold(check: str) -> Optional[records.VerifyThreshold]:
    """The warn and fail thresholds of one `verify` check ("matmul-peak", "memory-bandwidth", ...)."""
    return next((row for row in table("gpus").verify_thresholds if row.check == check), None)


@_lookup
def cuda_architectures(cuda: Version) -> Optional[records.CudaArchitectures]:
    """The row of the compute capabilities a CUDA toolkit minor release builds for (None: no row for that minor)."""
    return next(
        (row for row in table("gpus").cuda_architectures if Version(row.cuda).release[:2] == cuda.release[:2]), None
    )


@_lookup
def cuda_supports_compute_capability(cuda: Version, cc: str) -> Optional[bool]:
    """Whether CUDA `cuda` can build native code (sm_XY) for compute capability `cc`: True or False from a
    complete row, True from a lower-bound row that lists it; False too when `cc` is newer than every capability
    a lower-bound row lists and first appears in a later release's row (sm_80 first in 11.0: CUDA 10.2 cannot),
    and for a release older than every row when `cc` is newer than all the oldest row lists (CUDA 9.2: no sm_80).
    None when the data cannot tell. Code built as PTX may still JIT-compile for newer GPUs."""
    wanted = Version(cc)
    row = cuda_architectures(cuda)
    if row is None:
        # Older than every row: the oldest row's capabilities bound what an older compiler could know.
        oldest = min(table("gpus").cuda_architectures, key=lambda r: Version(r.cuda))
        if cuda.release[:2] < Version(oldest.cuda).release[:2]:
            return _first_listed_later(cuda, wanted, oldest)
        return None
    if any(Version(value) == wanted for value in row.cc):
        return True
    if row.complete:
        return False
    return _first_listed_later(cuda, wanted, row)


def _first_listed_later(cuda: Version, wanted: Version, bound: records.CudaArchitectures) -> Optional[bool]:
    """False when `wanted` is newer than all `bound` lists and a release after `cuda` is the first to list it."""
    if wanted > max(Version(value) for value in bound.cc):
        first = _first_cuda_listing(str(wanted))
        if first is not None and first.release[:2] > cuda.release[:2]:
            return False
    return None


@_lookup
def _first_cuda_listing(cc: str) -> Optional[Version]:
    """The oldest CUDA release whose architecture row lists `cc`."""
    wanted = Version(cc)
    return min(
        (Version(r.cuda) for r in table("gpus").cuda_architectures if any(Version(v) == wanted for v in r.cc)),
        default=None,
    )


BINARY_COMPATIBILITY_SOURCE = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility "
    "(a cubin generated for compute capability X.y runs only on devices of compute capability X.z, z >= y)"
)


@_lookup
def _known_compute_capabilities() -> tuple[Version, ...]:
    """Every capability an architecture row lists, newest first (computed once per table load)."""
    values = {Version(value) for row in table("gpus").cuda_architectures for value in row.cc}
    return tuple(sorted(values, reverse=True))


@_lookup
def cuda_runs_on_compute_capability(cuda: Version, cc: str) -> Optional[bool]:
    """Whether some native code CUDA `cuda` builds runs on a GPU of `cc`: its own sm_XY, or an older minor of
    the same major (an RTX 4090, 8.9, runs sm_86 code from CUDA 11.7). None when the data cannot tell."""
    wanted = Version(cc)
    same_major = [v for v in _known_compute_capabilities() if v.major == wanted.major and v < wanted]
    answers = [cuda_supports_compute_capability(cuda, cc)]
    answers += [cuda_supports_compute_capability(cuda, f"{v.major}.{v.minor}") for v in same_major]
    if True in answers:
        return True
    return False if all(answer is False for answer in answers) else None


@_lookup
def cuda_min_compute_capability(cuda_major: int) -> Optional[tuple[Version, str]]:
    """The oldest compute capability every release of a CUDA major builds for, from its complete rows (None without
    one)."""
    rows = [row for row in table("gpus").cuda_architectures if row.complete and Version(row.cuda).major == cuda_major]
    if not rows:
        return None
    floors = [(min(Version(value) for value in row.cc), row.source) for row in rows]
    return max(floors, key=lambda floor: floor[0])
