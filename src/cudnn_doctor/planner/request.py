"""What a plan is asked for: frameworks with PEP 440 specifiers, OS, Python, GPU, driver and CUDA, each
with where it came from (an option, or the machine the plan is for)."""

from __future__ import annotations

from typing import Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudnn_doctor.errors import UsageError
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record
from cudnn_doctor.versions import canonical_name as canonicalize_name

OSES = ("windows", "linux", "wsl")
ARCHES = ("x86_64", "aarch64")

# the names people use for each framework -> the knowledge's framework name
_ALIASES = {
    "torch": "torch",
    "pytorch": "torch",
    "tensorflow": "tensorflow",
    "tensorflow-gpu": "tensorflow",
    "tf": "tensorflow",
    "onnxruntime": "onnxruntime",
    "onnxruntime-gpu": "onnxruntime",
    "ort": "onnxruntime",
    "paddle": "paddle",
    "paddlepaddle": "paddle",
    "paddlepaddle-gpu": "paddle",
    "jax": "jax",
    "jaxlib": "jax",
    "cupy": "cupy",
    "cupy-cuda11x": "cupy",
    "cupy-cuda12x": "cupy",
    "cupy-cuda13x": "cupy",
}
FRAMEWORKS = ("torch", "tensorflow", "onnxruntime", "paddle", "jax", "cupy")


class Wanted(Record):
    """One framework the environment must have, and the releases the user accepts."""

    name: str  # the knowledge's name: torch | tensorflow | onnxruntime | paddle | jax | cupy
    specifier: SpecifierSet
    text: str  # as the user wrote it
    extras: frozenset[str] = frozenset()  # tensorflow[and-cuda], jax[cuda12]: restricts the build

    def accepts(self, version: Version) -> bool:
        return self.specifier.contains(version, prereleases=True)


class Given(Record):
    """An input value and its origin: "option" (the command line) or "machine" (read from the machine planned for)."""

    text: str
    origin: str


class Request(Record):
    frameworks: tuple[Wanted, ...]
    os: str  # windows | linux | wsl
    python: Optional[Given] = None
    gpu: Optional[Given] = None  # the GPU's name
    compute_capability: Optional[str] = None
    driver: Optional[Given] = None
    cuda: Optional[Given] = None
    arch: str = "x86_64"  # x86_64 | aarch64 (Linux only: SBSA servers, Jetson boards)

    @property
    def package_os(self) -> str:
        """The OS whose wheels and builds apply: WSL2 runs Linux builds."""
        return "linux" if self.os == "wsl" else self.os

    @property
    def driver_os(self) -> str:
        """The OS whose driver column applies: under WSL2 the GPU is driven by the Windows driver."""
        return "windows" if self.os == "wsl" else self.os

    def version(self, given: Optional[Given]) -> Optional[Version]:
        return Version(given.text) if given is not None else None


# PEP 508's name, optional [extras], then version specifiers: all a --framework may hold. Parsed here, not by
# packaging.requirements, whose import (markers, tokenizer, tags) is a large part of plan's start (docs/speed.md);
# tests/unit/planner/test_plan_request.py pins this to packaging.requirements on every shape.
_REQUIREMENT = regex(
    r"^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?:\[(?P<extras>\s*(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\s*"
    r"(?:,\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\s*)*)?)\])?"
    r"\s*(?P<specifier>(?:\(\s*)?[<>=!~][^;@()]*?(?:\s*\))?)?\s*$"
)


def parse_framework(text: str) -> Wanted:
    """`torch`, `torch==2.1`, `tensorflow[and-cuda]>=2.15,<2.17`, `onnxruntime-gpu~=1.18` -> Wanted (a bad one:
    UsageError)."""
    match = _REQUIREMENT.match(text)
    specifier_text = (match.group("specifier") or "").strip().lstrip("(").rstrip(")").strip() if match else ""
    try:
        specifier = SpecifierSet(specifier_text)
    except InvalidSpecifier:
        match = None
    if match is None:
        raise UsageError(
            f"--framework {text!r}: not a name with PEP 440 version specifiers, such as torch==2.1 or "
            f"'tensorflow>=2.15,<2.17'"
        )
    name = _ALIASES.get(canonicalize_name(match.group("name")))
    if name is None:
        raise UsageError(f"--framework {text!r}: unknown framework (known: {', '.join(FRAMEWORKS)})")
    extras = frozenset(canonicalize_name(e.strip()) for e in (match.group("extras") or "").split(",") if e.strip())
    return Wanted(name, specifier, text.strip(), extras)


def parse_version_option(option: str, text: str, parts: int = 0) -> str:
    """A dotted version number given on the command line (`--python 3.11`, `--driver 528.49`), kept as written."""
    value = text.strip()
    try:
        version = Version(value)
    except InvalidVersion:
        version = None
    if (
        version is None
        or version.local
        or version.pre
        or version.dev
        or version.post
        or version.epoch
        or not value[:1].isdigit()
    ):
        raise UsageError(f"{option} {text!r}: expected a version number such as {_EXAMPLES[option]}")
    if parts and len(version.release) < parts:
        raise UsageError(f"{option} {text!r}: expected at least {parts} parts, such as {_EXAMPLES[option]}")
    return value


_EXAMPLES = {"--python": "3.11", "--driver": "528.49 or 535.104.05", "--cuda": "11.8"}
