"""`regex()`: a module-level pattern compiled on first use, answering exactly as `re.compile` would (issue 15)."""

from __future__ import annotations

import pickle
import re

import pytest

from cudnn_doctor.lazyre import LazyPattern, regex


def test_nothing_is_compiled_until_first_use(monkeypatch):
    compiled = []
    original = re.compile
    monkeypatch.setattr(re, "compile", lambda *a: compiled.append(a) or original(*a))
    pattern = regex(r"cu(\d+)", re.IGNORECASE)
    assert compiled == []
    assert pattern.search("libCU12").group(1) == "12"
    assert pattern.fullmatch("cu13") is not None
    assert compiled == [(r"cu(\d+)", re.IGNORECASE)]  # once, with its flags


@pytest.mark.parametrize(
    ("source", "flags", "text"),
    [
        (r"^## (.+?)\s*$", re.MULTILINE, "x\n## Heading  \n## Two"),
        (r"a.b", re.DOTALL, "a\nb a-b"),
        (r"(?i)cudnn", 0, "libCUDNN.so"),
        (rb"\x41\xb8(....)", re.DOTALL, b"\x00\x41\xb8\n\x00\x00\x00\x41\xb8abcd"),
    ],
)
def test_every_method_answers_as_the_compiled_pattern(source, flags, text):
    lazy, eager = regex(source, flags), re.compile(source, flags)
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == (
        eager.pattern,
        eager.flags,
        eager.groups,
        eager.groupindex,
    )
    for pos in (0, 1, 3):
        assert repr(lazy.search(text, pos)) == repr(eager.search(text, pos))
        assert repr(lazy.match(text, pos)) == repr(eager.match(text, pos))
        assert [m.span() for m in lazy.finditer(text, pos)] == [m.span() for m in eager.finditer(text, pos)]
    assert lazy.findall(text) == eager.findall(text)
    assert lazy.split(text, 1) == eager.split(text, 1)
    empty = text[:0]
    assert lazy.sub(empty, text, 1) == eager.sub(empty, text, 1)
    assert lazy.compiled() is lazy.compiled()
    assert lazy.search is lazy.search  # bound once: later calls cost what the compiled pattern's do


def test_an_unknown_attribute_is_an_error_and_pickling_keeps_the_flags():
    pattern = regex(r"x", re.IGNORECASE)
    with pytest.raises(AttributeError):
        pattern.no_such_method  # noqa: B018
    copy = pickle.loads(pickle.dumps(pattern))
    assert isinstance(copy, LazyPattern)
    assert copy.match("X") and copy.flags == re.compile("x", re.IGNORECASE).flags
