"""What `kb update` and `kb status` print: the releases an update added, or the one line why it changed nothing;
the data's dates and sources (`knowledge.update.Update` / `Status`, which reports do not import)."""

from __future__ import annotations

from typing import Any, Iterator

_SHOWN = 12  # added releases listed by name; the rest counted


def update_lines(result: Any) -> Iterator[str]:
    if result.error:
        yield f"kb update: {result.error}"
        return
    yield f"kb update: read the package index on {result.fetched}; wrote {result.path}"
    if not result.added:
        yield "  nothing new: the doctor already knew every release"
        return
    yield f"  {len(result.added)} release(s) the doctor did not know:"
    yield from (f"    {name}" for name in result.added[:_SHOWN])
    if len(result.added) > _SHOWN:
        yield f"    … and {len(result.added) - _SHOWN} more"


def status_lines(state: Any) -> Iterator[str]:
    yield "Knowledge data:"
    for name, date in sorted(state.tables.items()):
        yield f"  {name:<16} {date}"
    yield "Recorded sources:"
    yield from (f"  {source.name}: {source.where}, read {source.date}" for source in state.sources)
    if state.update is not None:
        yield (
            f"Your update ({state.update_path}): the {state.update.name} read {state.update.date}, laid over "
            f"the shipped rows"
        )
    elif state.update_problem:
        yield f"Your update ({state.update_path}) is not used: {state.update_problem}"
    else:
        yield "No update: `cudnn-doctor kb update` reads the package index now (network) and keeps what is new."


def update_json(result: Any) -> dict[str, Any]:
    return {"path": result.path, "fetched": result.fetched, "added": list(result.added), "error": result.error}


def status_json(state: Any) -> dict[str, Any]:
    return {
        "tables": dict(state.tables),
        "sources": [{"name": s.name, "where": s.where, "date": s.date} for s in state.sources],
        "update": {
            "path": state.update_path,
            "date": state.update.date if state.update else None,
            "problem": state.update_problem,
        },
    }
