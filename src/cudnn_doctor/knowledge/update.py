"""`cudnn-doctor kb update` / `kb status`: the knowledge kept current between releases of the doctor (issue 30).

`update` reads the recorded sources again now (the package index, `knowledge/pypi.py`: the only network access, and only
when the user asks for it), validates what came back against the tables' schema, and writes it as a dated overlay in the
user's state folder, which every later run lays over the shipped tables. A source that is down, slow, oversized,
malformed or hostile changes nothing: the overlay is written whole or not at all. `status` says what the data is and
how old.
"""

from __future__ import annotations

import json
import time
import zipfile
from typing import Callable, Optional

from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import pypi
from cudnn_doctor.record import Record

BUDGET_S = 300.0  # the whole update, every request included


class Update(Record):
    """What `kb update` did: the releases it added to what the doctor knew, or the one reason it changed nothing."""

    path: str
    fetched: Optional[str]
    added: tuple[str, ...]  # "jax 0.13.0", newest first per distribution
    error: Optional[str] = None


class SourceState(Record):
    name: str  # "package index"
    where: str  # its URL
    date: str  # when it was read


class Status(Record):
    """The data's dates and sources, and the user's update over them."""

    tables: dict[str, str]  # table -> the date its rows were reviewed or recorded
    sources: tuple[SourceState, ...]
    update_path: str
    update: Optional[SourceState]  # None: no update written
    update_problem: Optional[str] = None  # the update file exists but is not used, and why


def update(
    write: Callable[[str, str], None],
    get: Callable[..., bytes] = pypi._get,
    index: str = pypi.INDEX,
    budget_s: float = BUDGET_S,
) -> Update:
    """Read the package index now and write the overlay whole with `write(path, text)` (the system's); nothing changes
    unless every response was valid. Needs the state folder (`knowledge.use_updates`)."""
    from cudnn_doctor import knowledge
    from cudnn_doctor.knowledge import schema

    path = knowledge.update_path()
    if path is None:
        raise ValueError("kb update needs the state folder: knowledge.use_updates(folder) first")
    deadline = time.monotonic() + budget_s

    def bounded(url: str, headers: Optional[dict[str, str]] = None) -> bytes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the update took longer than {budget_s:.0f} s")
        return get(url, headers or {})

    try:
        document = pypi.fetch(pypi.TRACKED, bounded, index, previous=pypi.read() if pypi.SOURCE.is_file() else None)
        rows = pypi.published_rows(document)
        schema.build("published", rows, f"the package index at {index}")
    except (
        OSError,
        ValueError,
        KnowledgeError,
        zipfile.BadZipFile,
        KeyError,
        TypeError,
    ) as error:  # JSONDecodeError is a ValueError
        return Update(str(path), None, (), f"{index}: {type(error).__name__}: {error}; nothing was changed")
    known = {(row.distribution, row.version) for row in knowledge.table("published").releases}
    added = tuple(
        f"{row['distribution']} {row['version']}"
        for row in rows["releases"]
        if (row["distribution"], row["version"]) not in known
    )
    try:
        write(str(path), json.dumps({"published": rows}))
    except OSError as error:
        return Update(str(path), None, (), f"{path}: {error.strerror or error}; nothing was changed")
    knowledge.forget_update()
    return Update(str(path), document["fetched"], added)


def status() -> Status:
    """The tables' dates, the recorded sources, and the user's update (used, or why not)."""
    from cudnn_doctor import knowledge

    shipped = pypi.read() if pypi.SOURCE.is_file() else None
    sources = (SourceState("package index", shipped["index"], shipped["fetched"]),) if shipped else ()
    path = knowledge.update_path()
    state, problem = None, None
    if path is not None and path.is_file():
        found = knowledge.update_overlay()
        if found is None:
            problem = knowledge.update_problem() or "not readable"
        else:
            reviewed = found.tables.get("published", {}).get("reviewed")
            state = SourceState("package index", "kb update", str(reviewed or "?"))
    return Status(knowledge.reviewed_dates(), sources, str(path or ""), state, problem)
