"""What `snapshot` writes: the recorded machine as YAML (or JSON), the machine-fixture/1 format that `check --fixture`
reads."""

from __future__ import annotations

import json
from typing import Any, TextIO


def render(document: dict[str, Any], out: TextIO) -> None:
    """To standard output: YAML, its non-ASCII characters escaped where the stream's encoding is not UTF-8."""
    import codecs

    encoding = getattr(out, "encoding", None) or "ascii"
    out.write(serialize(document, json_format=False, unicode=codecs.lookup(encoding).name == "utf-8"))


def serialize(document: dict[str, Any], json_format: bool, unicode: bool = True) -> str:
    """YAML or JSON text of the document. Strings that came from undecodable bytes (surrogate escapes) are
    written as `\\udcXX` escapes, which both formats read back to the same string: nothing is lost."""
    if json_format:
        return json.dumps(document, indent=2) + "\n"
    import yaml

    class _Dumper(yaml.SafeDumper):
        """No anchors or aliases in a snapshot: fixture loading refuses them (an alias bomb is a denial of service)."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=unicode, width=1000)
