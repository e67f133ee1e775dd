"""What a process would load, as the OS loader would resolve it: each name asked for, the files of that name found along
the search and why one cannot be used, the one taken; the whole tree per framework. Facts, no judgement."""

from __future__ import annotations

import re
from typing import Optional

from cudnn_doctor.kinds import LoadHow, UnusableKind
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record

EMPTY, UNREADABLE, NOT_A_BINARY, WRONG_ARCHITECTURE = UnusableKind


class Unusable(Record):
    """Why a file of the wanted name cannot be loaded: a kind checks compare, and the particulars."""

    kind: UnusableKind
    detail: str = ""  # "permission denied", "x86, the process is x64", the parser's error

    def __str__(self) -> str:
        return f"{self.kind} ({self.detail})" if self.detail else str(self.kind)


class Candidate(Record):
    """One file of the wanted name found along the search, and why it cannot be used (if so)."""

    path: str
    place: str  # the label of the place it was found (PATH, DT_RUNPATH, ld.so.cache, ...)
    problem: Optional[Unusable] = None


class LoadStep(Record):
    """One name the loader had to find: who asked, how, where it looked, what it took."""

    requester: str
    name: str
    how: LoadHow
    winner: Optional[str]
    candidates: tuple[Candidate, ...] = ()
    searched: tuple[str, ...] = ()
    reused: bool = False  # a module of that name was already loaded
    optional: bool = False
    provided_by: Optional[str] = None  # "os" / "driver": assumed present though no file was seen
    blocked_by: Optional[str] = None  # the broken file the loader took and failed on
    elsewhere: tuple[str, ...] = ()  # roots not found: copies on the machine the search does not reach
    search: Optional[str] = None  # Windows: how the load that searched was asked for (loader.windows.MODES)
    one_of: tuple[
        str, ...
    ] = ()  # a try-list (versions of one library): any member satisfies it; `name` is the one taken, or the first

    @property
    def failed(self) -> bool:
        return self.winner is None and not self.reused and self.provided_by is None

    @property
    def wanted(self) -> str:
        """What was asked for, as a report says it: "one of a, b" for a try-list, `libnvrtc.so.<N>` for a pattern."""
        if len(self.one_of) > 1:
            return "one of " + ", ".join(spoken_name(n) for n in self.one_of)
        return spoken_name(self.name)


def spoken_name(name: str) -> str:
    """A name the library completes at run time, with its version spelt <N>: `libnvrtc.so.%d` → `libnvrtc.so.<N>`."""
    spoken = re.sub(r"%[0-9]*[dui]", "<N>", name)
    return spoken + "<N>" if spoken.endswith(".") and ".so." in spoken else spoken


PROCESS = "process"  # the framework name of a load no known framework makes: any program loading a cuDNN installation


class Resolution(Record):
    """The whole tree one framework's process would load, as the OS loader would resolve it."""

    framework: str
    executable: str
    steps: tuple[LoadStep, ...] = ()
    # framework PROCESS: the package whose native code this load is (issue 29); None: a cuDNN installation
    package: Optional[str] = None

    def loaded(self) -> dict[str, str]:
        """name → path of every module in the process after the load."""
        return {s.name: s.winner for s in self.steps if s.winner}

    def cudnn_front(self) -> Optional[LoadStep]:
        """The step that loads the cuDNN front library: the program's own load of it first, else the first that loads
        it."""
        steps = [s for s in self.steps if not s.reused and is_cudnn_front(s.name)]
        return next((s for s in steps if s.how is LoadHow.ROOT), None) or next(iter(steps), None)


_CUDNN_FRONT = regex(r"^(libcudnn\.so(\.\d+)*|cudnn64_\d+\.dll)$", re.IGNORECASE)


def is_cudnn_front(name: str) -> bool:
    """The cuDNN front library (cudnn64_9.dll, libcudnn.so.9), by its name or a path to it."""
    return bool(_CUDNN_FRONT.match(name.replace("\\", "/").rsplit("/", 1)[-1]))
