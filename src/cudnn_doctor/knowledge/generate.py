"""Write data/knowledge.json from data/*.yaml: the YAML is the source of truth, the JSON what a run loads.

A run parses JSON with the standard library in a few milliseconds, where importing PyYAML and
parsing the tables cost tens. Every table is validated here as it is at run time, so a bad
edit fails the generation.

usage: python -m cudnn_doctor.knowledge.generate [--check]
  --check  write nothing; exit 1 when knowledge.json is not what the YAML gives
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import files, schema

DATA = Path(__file__).with_name("data")
OUTPUT = DATA / "knowledge.json"
COMMAND = "python -m cudnn_doctor.knowledge.generate"


def read_yaml_tables(data: Path = DATA) -> dict[str, Any]:
    """Every table's document, read from its YAML file and validated (a KnowledgeError names file and row)."""
    documents = {}
    for name in schema.TABLES:
        path = data / f"{name}.yaml"
        document = files.read(path)
        schema.build(name, document, path.name)
        documents[name] = document
    extra = sorted(p.name for p in data.glob("*.yaml") if p.stem not in schema.TABLES)
    if extra:
        raise KnowledgeError(f"{extra[0]}: no table of that name in knowledge/schema.py")
    return documents


def render(documents: dict[str, Any]) -> str:
    """The JSON text, one stable form (the test compares it byte for byte)."""
    return json.dumps(documents, indent=1, ensure_ascii=False) + "\n"


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
        return 0
    if current != text:
        OUTPUT.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
