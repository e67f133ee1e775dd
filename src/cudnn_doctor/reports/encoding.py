"""Text that fits the output stream's encoding.

`cudnn-doctor check > report.txt` on Windows writes cp1252 (the ANSI code page every pipe and
file gets, Jupyter's `!cudnn-doctor` included), which has no ✓ or →; a PATH entry made of
undecodable bytes arrives as surrogate escapes, which not even UTF-8 can write. Reports pass every
line through a `Fitter`, and the command line wraps stdout and stderr in a `FittedStream`: the
report's own symbols fall back to ASCII spellings when the stream cannot write them, an accented
letter loses its accent, and any other character the stream cannot write becomes "?". A stream
that can write the symbols (UTF-8) gets them unchanged.
"""

from __future__ import annotations

import codecs
import unicodedata
from typing import Any, Iterable, Optional, TextIO

SYMBOLS = "✓✗•·→←…"
_ASCII = str.maketrans(
    {
        "✓": "OK",
        "✔": "OK",
        "✗": "X",
        "✘": "X",
        "•": "*",
        "·": "-",
        "→": "->",
        "←": "<-",
        "↔": "<->",
        "⇒": "=>",
        "…": "...",
        "≥": ">=",
        "≤": "<=",
        "≠": "!=",
        "—": "-",
        "–": "-",
        "‘": "'",
        "’": "'",
        "“": '"',
        "”": '"',
        "×": "x",
        "\u00a0": " ",
    }
)


class Fitter:
    """Makes text writable on one stream; `unicode` says whether the report's own symbols are."""

    def __init__(self, out: Any) -> None:
        encoding = getattr(out, "encoding", None)
        try:
            self.codec: Optional[str] = codecs.lookup(encoding).name if isinstance(encoding, str) else None
        except LookupError:
            self.codec = None
        self.unicode = self.codec is None or _encodes(SYMBOLS, self.codec)

    def __call__(self, text: str) -> str:
        if not self.unicode:
            text = text.translate(_ASCII)
        if self.codec is None or _encodes(text, self.codec):
            return text
        codec = self.codec
        return "".join(c if _encodes(c, codec) else _fallback(c, codec) for c in text)


class FittedStream:
    """A text stream whose writes are fitted to its encoding: `print("✓")` to a cp1252 pipe writes "OK", never
    raises."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.fit = Fitter(stream)

    def write(self, text: str) -> int:
        self.stream.write(self.fit(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _fallback(char: str, codec: str) -> str:
    """An accented letter without its accent ("é" → "e") where the stream has it, else "?"."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return plain if plain and plain != char and _encodes(plain, codec) else "?"


def _encodes(text: str, codec: str) -> bool:
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def visible(text: str) -> str:
    """A name as a user confirms it: every control (C0, DEL, C1), format character (the bidi overrides and isolates
    U+202A-U+202E / U+2066-U+2069, marks, zero-width ones), line or paragraph separator and undecodable byte (a
    surrogate escape) written as its escape, `\\x85`, `\\u202e`, `\\udce9`: what the terminal shows is what is there."""
    return "".join(_escaped(c) if unicodedata.category(c) in _HIDDEN else c for c in text)


_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
