"""`Record` behaves as `typing.NamedTuple` does, which it replaces for speed (issue 15)."""

from __future__ import annotations

import ast
import copy
import pickle
from pathlib import Path
from typing import NamedTuple, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudnn_doctor.record import Record

SOURCE = Path(__file__).resolve().parents[3] / "src" / "cudnn_doctor"


class Typed(NamedTuple):
    name: str
    version: Optional[str] = None
    files: tuple[str, ...] = ()


class Fast(Record):
    name: str
    version: Optional[str] = None
    files: tuple[str, ...] = ()


def label(self) -> str:
    return f"{self.name} {self.version or '?'}"


for kind in (Typed, Fast):  # the same methods and properties on both, as a class body would define them
    kind.label = label  # type: ignore[attr-defined]
    kind.count = property(lambda self: len(self.files))  # type: ignore[attr-defined]


def outcome(make):
    """What a call gives: its value as a plain tuple with the repr, or the kind of error it raised."""
    try:
        value = make()
    except Exception as error:
        return type(error).__name__
    return tuple(value), repr(value).split("(", 1)[1]


CALLS = [
    ((), {}),
    (("a",), {}),
    (("a", "1"), {}),
    (("a", "1", ("x",)), {}),
    (("a", "1", ("x",), "extra"), {}),
    ((), {"name": "a"}),
    ((), {"name": "a", "files": ("y",)}),
    (("a",), {"name": "b"}),
    (("a",), {"other": 1}),
    ((), {"version": "1"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_a_call_gives_what_a_named_tuple_gives(args, kwargs):
    assert outcome(lambda: Fast(*args, **kwargs)) == outcome(lambda: Typed(*args, **kwargs))


@given(
    st.text(max_size=5), st.one_of(st.none(), st.text(max_size=5)), st.lists(st.text(max_size=3), max_size=3).map(tuple)
)
def test_a_record_is_the_same_value_as_the_named_tuple(name, version, files):
    typed, fast = Typed(name, version, files), Fast(name, version, files)
    assert fast == typed and hash(fast) == hash(typed) and tuple(fast) == tuple(typed)
    assert repr(fast) == repr(typed).replace("Typed", "Fast", 1)
    assert fast._asdict() == typed._asdict()
    assert (fast.name, fast.version, fast.files, fast.label(), fast.count) == (
        typed.name,
        typed.version,
        typed.files,
        typed.label(),
        typed.count,
    )
    assert fast._replace(version="2") == typed._replace(version="2")
    assert Fast._make(list(typed)) == fast
    assert pickle.loads(pickle.dumps(fast)) == fast and type(pickle.loads(pickle.dumps(fast))) is Fast
    assert copy.deepcopy(fast) == fast and type(copy.copy(fast)) is Fast


def test_the_class_says_what_a_named_tuple_class_says():
    assert Fast._fields == Typed._fields == ("name", "version", "files")
    assert Fast._field_defaults == Typed._field_defaults
    assert Fast.__match_args__ == Fast._fields  # as Python 3.10 and later give a NamedTuple
    assert Fast.__mro__[1:] == (Record, tuple, object)
    assert Fast.name.__doc__ == Typed.name.__doc__


def test_a_record_is_immutable_and_has_no_instance_dictionary():
    fast = Fast("a")
    with pytest.raises(AttributeError):
        fast.name = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        fast.anything = 1  # type: ignore[attr-defined]
    assert not hasattr(fast, "__dict__")


def test_bad_replacements_and_makes_fail_as_a_named_tuple_s_do():
    with pytest.raises(ValueError):
        Fast("a")._replace(nope=1)
    with pytest.raises(TypeError):
        Fast._make(["a"])


def test_bad_class_bodies_are_refused_as_a_named_tuple_refuses_them():
    with pytest.raises(TypeError):

        class DefaultFirst(Record):
            name: str = "a"
            version: str

    with pytest.raises(ValueError):

        class Private(Record):
            _name: str


def test_a_plain_subclass_keeps_the_fields_and_adds_behaviour():
    class Named(Fast):
        def shout(self) -> str:
            return self.name.upper()

    assert Named("a").shout() == "A" and Named._fields == Fast._fields and Named("a", "1") == Fast("a", "1")


def test_the_package_defines_its_values_as_records_not_named_tuples():
    """A `typing.NamedTuple` class costs ~140 µs to create: 150 of them were 15 ms of `check`'s start."""
    named_tuples = [
        f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}"
        for path in SOURCE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id == "NamedTuple" for base in node.bases)
    ]
    assert named_tuples == []


def test_methods_properties_and_the_docstring_of_the_body_stay_what_they_are():
    class Release(Record):
        """A release."""

        number: str
        notes: tuple[str, ...] = ()

        def major(self) -> str:
            return self.number.split(".")[0]

        @property
        def noted(self) -> bool:
            return bool(self.notes)

    assert Release._fields == ("number", "notes") and Release.__doc__ == "A release."
    assert Release("9.5.1").major() == "9" and Release("9.5.1").noted is False and Release("9", ("x",)).noted is True
