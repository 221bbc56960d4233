"""One registry for every kind of plug-in: scorers, benchmarks, backends.

A :class:`Registry` maps a name (what a suite manifest or a command-line option names) to one
registered object. Its package fills it when imported (one :meth:`Registry.register` per module)
and then freezes it (:meth:`Registry.freeze`): from then on it is a read-only
:class:`~collections.abc.Mapping` (``sorted(r)``, ``r.get(name)``, ``name in r``, ``r[name]``),
iterated in registration order. A name registered twice, or a registration after the freeze, is a
bug and raises; an unknown name raises :class:`UnknownNameError`, which names the known names and
the closest one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name no entry of a registry has (a :class:`KeyError`, so ``Mapping.get`` and ``in`` work).

    Attributes:
        kind: the registry's kind (``scorer``, ``benchmark``, ``backend``).
        name: the name asked for.
        known: the registered names, sorted.
        message: ``unknown <kind> <name>; known: [...]``, then ``; did you mean <close>?`` when a
            registered name is close to it.
    """

    def __init__(self, kind: str, name: object, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, known
        close = difflib.get_close_matches(name, known, n=1) if isinstance(name, str) else []
        self.message = f"unknown {kind} {name!r}; known: {known}" + (f"; did you mean {close[0]!r}?" if close else "")
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError's own str() is the repr of its argument
        return self.message


def _describe(obj: object) -> str:
    """A short name for a registered object: a class's or function's dotted name, else a cut repr."""
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(qualname, str):
        return f"{getattr(obj, '__module__', '?')}.{qualname}"
    text = repr(obj)
    return text if len(text) <= 80 else text[:77] + "..."


class Registry(Mapping[str, T], Generic[T]):
    """Name → registered object, for one kind of plug-in.

    Args:
        kind: what its entries are (``scorer``, ``benchmark``, ``backend``), for the error messages.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._frozen = False

    def register(self, name: str, obj: T) -> T:
        """Add ``obj`` under ``name``; returns ``obj``.

        Raises:
            ValueError: ``name`` is registered already (naming both entries), or the registry is
                frozen.
        """
        if self._frozen:
            raise ValueError(f"{self.kind} registry is frozen: {name!r} registered after its package was imported")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} registered twice: {_describe(self._entries[name])} "
                             f"and {_describe(obj)}")
        self._entries[name] = obj
        return obj

    def freeze(self) -> None:
        """No registration from now on (called once the package has imported its modules)."""
        self._frozen = True

    @property
    def frozen(self) -> bool:
        return self._frozen

    def unknown(self, name: object) -> UnknownNameError:
        """The error for a name that is not registered (the known names, and the closest one)."""
        return UnknownNameError(self.kind, name, self.names())

    def __getitem__(self, name: str) -> T:
        """The entry registered under ``name``.

        Raises:
            UnknownNameError: no entry has that name (a KeyError naming the known names and the closest).
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):  # TypeError: an unhashable name
            raise self.unknown(name) from None

    def __contains__(self, name: object) -> bool:
        try:
            return name in self._entries
        except TypeError:
            return False

    def __iter__(self) -> Iterator[str]:
        """The names in registration order (as a dict's keys)."""
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"

    @contextmanager
    def override(self, name: str, obj: T) -> Iterator[T]:
        """Replace the entry of a registered name for the ``with`` block, then put it back (tests: a stub
        backend); the set of names does not change, so a frozen registry allows it.

        Raises:
            UnknownNameError: ``name`` is not registered.
        """
        old = self[name]
        self._entries[name] = obj
        try:
            yield obj
        finally:
            self._entries[name] = old
