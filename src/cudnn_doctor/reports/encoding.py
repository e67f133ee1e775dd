"""Text that fits the output stream's encoding.

`cudnn-doctor check > report.txt` on Windows writes cp1252, which has no ✓ or →; a PATH entry
made of undecodable bytes arrives as surrogate escapes, which not even UTF-8 can write. Reports
pass every line through a `Fitter`: the report's own symbols fall back to ASCII spellings when
the stream cannot write them, and any other character it cannot write becomes "?".
"""

from __future__ import annotations

import codecs
from typing import TextIO

SYMBOLS = "✓✗•·→←…"
_ASCII = str.maketrans({"✓": "OK", "✗": "X", "•": "*", "·": "-", "→": "->", "←": "<-", "…": "...", "≥": ">=", "≤": "<=", "—": "-", "–": "-"})


class Fitter:
    """Makes text writable on one stream; `unicode` says whether the report's own symbols are."""

    def __init__(self, out: TextIO) -> None:
        encoding = getattr(out, "encoding", None)
        try:
            self.codec = codecs.lookup(encoding).name if isinstance(encoding, str) else None
        except LookupError:
            self.codec = None
        self.unicode = self.codec is None or _encodes(SYMBOLS, self.codec)

    def __call__(self, text: str) -> str:
        if not self.unicode:
            text = text.translate(_ASCII)
        if self.codec is None or _encodes(text, self.codec):
            return text
        return text.encode(self.codec, errors="replace").decode(self.codec)


def _encodes(text: str, codec: str) -> bool:
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True
