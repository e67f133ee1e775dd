"""Where glibc's loader looks for a library name, in order, for a given requesting object.

  1. DT_RPATH of the requester, then of the object that loaded it, and so on up to the
     executable — only when the requester has no DT_RUNPATH,
  2. LD_LIBRARY_PATH,
  3. DT_RUNPATH of the requester (not inherited),
  4. the loader cache (`ldconfig -p`),
  5. the default folders (/lib/<multiarch>, /usr/lib/<multiarch>, /lib64, /usr/lib64, /lib, /usr/lib).

`$ORIGIN` is the folder of the requesting object as it was found. An ELF object of another
machine, or a file that cannot be opened, is skipped and the search goes on ("skipping
incompatible"); a 0-byte or otherwise invalid file is taken and the load fails ("file too
short") — measured against ld.so in tests/live/test_loader_differential.py. Note that auditwheel's
lddtree puts RUNPATH before LD_LIBRARY_PATH; glibc does not.
"""

from __future__ import annotations

from typing import Optional, Sequence

from cudnn_doctor.system.interface import System

MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}


def default_dirs(arch: str) -> list[str]:
    triplet = MULTIARCH.get(arch)
    multi = [f"/lib/{triplet}", f"/usr/lib/{triplet}"] if triplet else []
    return [*multi, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


def expand_origin(entry: str, origin: str) -> str:
    return entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)


def search_places(
    system: System,
    requester_runpath: Sequence[str],
    rpath_chain: Sequence[tuple[Sequence[str], str]],
    origin: Optional[str],
) -> list[tuple[str, str]]:
    """(label, folder) in search order. `rpath_chain`: (DT_RPATH, origin) of the requester and its loaders."""
    rules, env = system.paths, system.env()
    places: list[tuple[str, str]] = []
    if not requester_runpath:
        for rpath, rpath_origin in rpath_chain:
            places += [("DT_RPATH", rules.norm(expand_origin(e, rpath_origin))) for e in rpath if e]
    places += [("LD_LIBRARY_PATH", entry) for entry in rules.split_list(env.get("LD_LIBRARY_PATH", "")) if entry]
    if requester_runpath and origin is not None:
        places += [("DT_RUNPATH", rules.norm(expand_origin(e, origin))) for e in requester_runpath if e]
    places.append(("ld.so.cache", ""))
    places += [("default", folder) for folder in default_dirs(system.arch)]
    return places
