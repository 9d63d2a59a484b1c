"""Typed readings of an item: what a module read of it once (its token count, the facts it shows), kept on it.

An item never changes, so whatever a module reads of it (a count, a parse, a rendering) can be read once and
kept with the item object. Each reading has one owner, the module that reads it, which declares its key once::

    DENSITY: Key[float] = Key("density")

    def density(item: Item) -> float:
        return item.readings.setdefault(DENSITY, lambda: _density(item))

``item.readings.get(DENSITY)`` is then a ``float | None`` to mypy, and only the owner's key reaches its value:
two modules cannot collide on a name, nor read each other's reading as the wrong type.

Readings belong to the item *object*: they take no part in equality, are never serialized, and a copy starts
without them (a copy may differ, and reading it again is cheap). Hot paths (the token count) use ``get`` (the
dict's own lookup) and :meth:`set`; :meth:`setdefault` is the one-line form.
"""

from __future__ import annotations

from typing import Callable, Generic, Protocol, TypeVar

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class Key(Generic[_T_co]):
    """The name of one reading and, to mypy, its type. Keys compare by identity: declare each once, at module level
    (or once per owner object, as a token counter does for its counts)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Key({self.name!r})"


class _Lookup(Protocol):
    def __call__(self, key: Key[_T], /) -> _T | None:
        """The reading under ``key``, or None if it was not read yet (or read as None: see ``__contains__``)."""


class Readings:
    """The readings kept on one item object, each under its owner's :class:`Key`."""

    __slots__ = ("_values", "get")

    def __init__(self) -> None:
        self._values: dict[Key[object], object] = {}
        # the dict's own lookup, typed per key: a token count is asked for of every item at every step, and a
        # method around the lookup would double its cost. Only set() stores, and it stored a _T under a Key[_T].
        self.get: _Lookup = self._values.get  # type: ignore[assignment]

    def set(self, key: Key[_T], value: _T) -> _T:
        """Keep ``value`` under ``key`` and return it (``found = item.readings.set(KEY, read(item))``)."""
        self._values[key] = value
        return value

    def setdefault(self, key: Key[_T], compute: Callable[[], _T]) -> _T:
        """The reading under ``key``, computed by ``compute()`` and kept the first time it is asked for (a reading
        may be None: it is computed once all the same)."""
        values = self._values
        if key in values:
            return values[key]  # type: ignore[return-value]  # set() stored a _T under a Key[_T]
        value = values[key] = compute()
        return value

    def __reduce__(self) -> tuple[type[Readings], tuple[()]]:
        """A deep copy or a pickled item starts empty, with its own lookup: readings are a cache."""
        return Readings, ()

    def __contains__(self, key: Key[object]) -> bool:
        """Whether ``key`` was read (for a reading that may be None)."""
        return key in self._values
