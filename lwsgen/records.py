"""Immutable records: tuples with named fields, declared like typing.NamedTuple

    class Port(Record):
        name: str
        number: int = 0

but built without namedtuple's code generation: typing.NamedTuple compiles a __new__ for every
class (~130 us each, measured; lwsgen declares ~80), where a Record subclass costs ~20 us. Fields
are read through the same C accessor namedtuple uses; instances compare, hash, sort and pickle as
tuples, and offer _fields, _replace and _asdict.
"""

from collections import _tuplegetter  # the C field accessor of collections.namedtuple
from typing import Any

_MISSING = object()


class Record(tuple):
    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__", {})
        fields = cls._fields + tuple(name for name in own if name not in cls._fields)
        defaults = dict(cls._defaults)
        defaults.update({name: cls.__dict__[name] for name in own if name in cls.__dict__})
        for index, name in enumerate(fields):
            setattr(cls, name, _tuplegetter(index, None))
        cls._fields, cls._defaults = fields, defaults

    def __new__(cls, *args: Any, **kwargs: Any) -> "Record":
        if not kwargs and len(args) == len(cls._fields):
            return tuple.__new__(cls, args)
        return tuple.__new__(cls, cls._bind(args, kwargs))

    @classmethod
    def _bind(cls, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        fields = cls._fields
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__} takes {len(fields)} values, not {len(args)}")
        values = [*args, *([_MISSING] * (len(fields) - len(args)))]
        for name, value in kwargs.items():
            try:
                index = fields.index(name)
            except ValueError:
                raise TypeError(f"{cls.__name__} has no field {name!r}") from None
            if values[index] is not _MISSING:
                raise TypeError(f"{cls.__name__} got {name!r} twice")
            values[index] = value
        for index, value in enumerate(values):
            if value is _MISSING:
                name = fields[index]
                if name not in cls._defaults:
                    raise TypeError(f"{cls.__name__} needs {name!r}")
                values[index] = cls._defaults[name]
        return values

    def _replace(self, **changes: Any) -> "Record":
        unknown = set(changes) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        return tuple.__new__(
            type(self), [changes.get(name, value) for name, value in zip(self._fields, self, strict=True)]
        )

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self, strict=True))})"


def canonical(value: Any) -> Any:
    """Records as their set fields by name (None and empty left out), for digests that a field
    added to a record with an empty default does not change."""
    if isinstance(value, Record):
        pairs = ((name, canonical(v)) for name, v in zip(value._fields, value, strict=True))
        return {name: v for name, v in pairs if v not in (None, (), [], {})}
    if isinstance(value, (tuple, list)):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    return value
