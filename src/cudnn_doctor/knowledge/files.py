"""Reading knowledge files as people write them (YAML, or JSON), strictly: a repeated key is an error, not a silent overwrite.

Only the generator, the tests and `--kb` read YAML; a normal run reads the generated JSON.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Optional

from cudnn_doctor.errors import KnowledgeError


def read(path: Path, name: Optional[str] = None) -> Any:
    """The document in a .json file, or in a YAML file (any other name); dates become "YYYY-MM-DD".
    `name` is how messages call the file (default: its file name)."""
    name = name or path.name
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise KnowledgeError(f"{name}: not UTF-8 text (byte {error.start})") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as error:
            raise KnowledgeError(f"{name}: not valid JSON: {error}") from None
    return parse_yaml(text, name)


def parse_yaml(text: str, name: str) -> Any:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Strict(base):  # type: ignore[misc, valid-type]
        """Safe loading that refuses a key given twice in one mapping (YAML keeps the last one silently)."""

    def mapping(loader: Any, node: Any) -> dict[Any, Any]:
        keys = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            if key in keys:
                raise KnowledgeError(f"{name}: line {key_node.start_mark.line + 1}: key {key!r} given twice in one mapping")
            keys.add(key)
        return loader.construct_mapping(node, deep=True)

    _Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        document = yaml.load(text, Loader=_Strict)  # a SafeLoader subclass
    except yaml.YAMLError as error:
        raise KnowledgeError(f"{name}: not valid YAML: {' '.join(str(error).split())}") from None
    return _plain(document)


def _plain(value: Any) -> Any:
    """YAML's dates as the ISO text JSON holds, so both formats give the same document."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
