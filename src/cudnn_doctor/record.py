"""`Record`: a `typing.NamedTuple` that is much cheaper to define.

`typing.NamedTuple` builds every class through `collections.namedtuple`, which compiles a
`__new__` from source text and type-checks each annotation, for each of the project's ~150 kinds
of fact, row and finding at `check`'s start (the figures: docs/speed.md). A Record is
the same thing: a tuple subclass with fields by name and position, defaults, `_fields`,
`_field_defaults`, `_make`, `_replace`, `_asdict`, the same repr, equality, hashing and pickling;
its class is made by one plain `type()` call and all Records share one `__new__`. A test holds
it to `typing.NamedTuple`, behaviour for behaviour. Type checkers are shown `typing.NamedTuple`.
"""

from __future__ import annotations

import sys
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

try:  # the C field accessor `collections.namedtuple` itself uses
    from _collections import _tuplegetter  # type: ignore[import-not-found]  # a private module typeshed leaves out
except ImportError:  # PyPy and other Pythons without it

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)


def _annotated_names(namespace: dict[str, Any]) -> tuple[str, ...]:
    """The field names in order, without evaluating a single annotation."""
    if "__annotations__" in namespace:
        return tuple(namespace["__annotations__"])
    if sys.version_info >= (3, 14):  # annotations are evaluated lazily, through a function
        import annotationlib

        annotate = annotationlib.get_annotate_from_class_namespace(namespace)
        if annotate is not None:
            return tuple(annotationlib.call_annotate_function(annotate, annotationlib.Format.FORWARDREF))
    return ()


class _RecordType(type):
    """Turns the annotated names of a class body into fields, as `typing.NamedTuple` does."""

    _fields: tuple[str, ...]  # every class it makes has them (Record's are empty)

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> _RecordType:
        if not any(isinstance(base, _RecordType) for base in bases) or any(
            isinstance(base, _RecordType) and base._fields for base in bases
        ):
            return super().__new__(
                mcls, name, bases, namespace, **kwargs
            )  # Record itself, or a plain subclass of a record
        fields = _annotated_names(namespace)
        for field in fields:
            if field.startswith("_"):
                raise ValueError(f"Field names cannot start with an underscore: {field!r}")
        defaults = {field: namespace[field] for field in fields if field in namespace}
        for before, after in zip(fields, fields[1:]):
            if before in defaults and after not in defaults:
                raise TypeError(f"Non-default record field {after} cannot follow default field {before}")
        namespace.update(
            {field: _tuplegetter(index, f"Alias for field number {index}") for index, field in enumerate(fields)}
        )
        namespace.update(
            __slots__=(),
            _fields=fields,
            _field_defaults=defaults,
            _trailing_defaults=tuple(defaults.values()),
            __match_args__=fields,
        )
        return super().__new__(mcls, name, bases, namespace, **kwargs)


if TYPE_CHECKING:  # what type checkers see: the same class, field for field
    from typing import NamedTuple as Record
else:  # what runs

    class Record(tuple, metaclass=_RecordType):
        """Subclass it and annotate the fields, as with `typing.NamedTuple`."""

        __slots__ = ()
        _fields: ClassVar[tuple[str, ...]] = ()
        _field_defaults: ClassVar[dict[str, Any]] = {}
        _trailing_defaults: ClassVar[tuple[Any, ...]] = ()  # the defaults in field order: they are the last fields

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if (
                not kwargs
            ):  # the common calls, without a loop: every field given, or the last ones left to their defaults
                missing = len(cls._fields) - len(args)
                if missing == 0:
                    return tuple.__new__(cls, args)
                if 0 < missing <= len(cls._trailing_defaults):
                    return tuple.__new__(cls, args + cls._trailing_defaults[-missing:])
            return tuple.__new__(cls, _bound(cls, args, kwargs))

        @classmethod
        def _make(cls, iterable: Iterable[Any]) -> Any:
            values = tuple.__new__(cls, iterable)
            if len(values) != len(cls._fields):
                raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(values)}")
            return values

        def _replace(self, **changes: Any) -> Any:
            values = self._make(map(changes.pop, self._fields, self))
            if changes:
                raise ValueError(f"Got unexpected field names: {list(changes)!r}")
            return values

        def _asdict(self) -> dict[str, Any]:
            return dict(zip(self._fields, self))

        def __repr__(self) -> str:
            return (
                f"{type(self).__name__}({', '.join(f'{field}={value!r}' for field, value in zip(self._fields, self))})"
            )

        def __getnewargs__(self) -> tuple[Any, ...]:
            return tuple(self)


def _bound(cls: type[Record], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The field values of a call with keywords or defaults, with `typing.NamedTuple`'s errors."""
    fields = cls._fields
    if len(args) > len(fields):
        raise TypeError(
            f"{cls.__name__}.__new__() takes {len(fields) + 1} positional arguments but {len(args) + 1} were given"
        )
    for field in fields[: len(args)]:
        if field in kwargs:
            raise TypeError(f"{cls.__name__}.__new__() got multiple values for argument '{field}'")
    values = list(args)
    for field in fields[len(args) :]:
        if field in kwargs:
            values.append(kwargs.pop(field))
        elif field in cls._field_defaults:
            values.append(cls._field_defaults[field])
        else:
            raise TypeError(f"{cls.__name__}.__new__() missing required argument: '{field}'")
    if kwargs:
        raise TypeError(f"{cls.__name__}.__new__() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return values
