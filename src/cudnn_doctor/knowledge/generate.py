"""Write data/knowledge.json from data/*.yaml and sources/: the YAML and the recorded sources are the truth, the JSON
what a run loads.

A run parses JSON with the standard library in a few milliseconds, where importing PyYAML and
parsing the tables cost tens. Every table is validated here as it is at run time, so a bad
edit fails the generation. Beside it, data/knowledge.pickle holds the typed tables built from
that JSON (knowledge/prebuilt.py), which a run unpickles instead of building them again.

usage: python -m cudnn_doctor.knowledge.generate [--check]
  --check  write nothing; exit 1 when knowledge.json (or the pickle) is not what the YAML gives
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import files, prebuilt, pypi, schema

DATA = Path(__file__).with_name("data")
OUTPUT = DATA / "knowledge.json"
PREBUILT = DATA / "knowledge.pickle"
COMMAND = "python -m cudnn_doctor.knowledge.generate"


def read_yaml_tables(data: Path = DATA, sources: Optional[Path] = None) -> dict[str, Any]:
    """Every table's document, read from its YAML file, or generated from its recorded source (`published`, from
    sources/pypi.json.gz), and validated (a KnowledgeError names file and row)."""
    documents = {}
    for name in schema.TABLES:
        if name in SOURCED:
            document = SOURCED[name](sources)
            schema.build(name, document, f"{name} (generated from {pypi.SOURCE.name})")
            documents[name] = document
            continue
        path = data / f"{name}.yaml"
        document = files.read(path)
        schema.build(name, document, path.name)
        documents[name] = document
    extra = sorted(p.name for p in data.glob("*.yaml") if p.stem not in schema.TABLES or p.stem in SOURCED)
    if extra:
        raise KnowledgeError(f"{extra[0]}: no table of that name in knowledge/schema.py")
    return documents


def _published(sources: Optional[Path]) -> dict[str, Any]:
    return pypi.published_rows(pypi.read(sources or pypi.SOURCE))


# tables generated from a recorded machine-readable source rather than written in YAML
SOURCED = {"published": _published}


def render(documents: dict[str, Any]) -> str:
    """The JSON text, one stable form (the test compares it byte for byte)."""
    return json.dumps(documents, indent=1, ensure_ascii=False) + "\n"


def built_tables(text: str) -> dict[str, Any]:
    """Every table built from the JSON text, as a run without the pickle builds it."""
    documents = json.loads(text)
    return {name: schema.build(name, documents[name], f"{name}.yaml") for name in schema.TABLES}


def prebuilt_is_current(text: str, path: Optional[Path] = None) -> bool:
    """Whether the pickle at `path` (PREBUILT) is what `text` builds: read as a run reads it, every table equal and
    printing alike (equality alone would miss a VersionRange's text, which `==` ignores)."""
    tables = prebuilt.read(path or PREBUILT, _json_path_of(text))
    if tables is None or set(tables) != set(schema.TABLES):
        return False
    expected = built_tables(text)
    for name, table in expected.items():
        found = prebuilt.table(tables, name)
        if found != table or repr(found) != repr(table) or type(found) is not type(table):
            return False
    return True


def _json_path_of(text: str) -> Path:
    """knowledge.json when it holds `text`; else a path whose fingerprint cannot match (the pickle is then stale)."""
    return OUTPUT if OUTPUT.exists() and OUTPUT.read_bytes() == text.encode("utf-8") else DATA / "-missing-"


def write_prebuilt(text: str, path: Optional[Path] = None) -> None:
    (path or PREBUILT).write_bytes(prebuilt.render(built_tables(text), text.encode("utf-8")))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when knowledge.json is out of date; write nothing")
    args = parser.parse_args(argv)
    try:
        text = render(read_yaml_tables())
    except KnowledgeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else None
    if args.check:
        if current != text:
            print(f"{OUTPUT.name} is out of date; run `{COMMAND}`", file=sys.stderr)
            return 1
        if not prebuilt_is_current(text):
            print(f"{PREBUILT.name} is out of date; run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        with open(
            OUTPUT, "w", encoding="utf-8", newline="\n"
        ) as handle:  # Path.write_text takes newline= from Python 3.10
            handle.write(text)
        print(f"wrote {OUTPUT}")
    if not prebuilt_is_current(text):
        write_prebuilt(text)
        print(f"wrote {PREBUILT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
