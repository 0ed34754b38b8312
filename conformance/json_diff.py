"""Where two JSON documents first differ: one walk for the engine (did the plug-in change the
body it was handed, :func:`conformance.checks.outcome.first_difference`) and for the cassette
matcher (where a request's skeleton leaves the recorded one,
:func:`conformance.traffic.skeleton.first_difference`); each words the place its own way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["Difference", "DifferenceKind", "json_difference"]

DifferenceKind: TypeAlias = Literal["only_first", "only_second", "length", "value"]
"""A key in one mapping only, lists of different lengths, or two values that are not equal."""


@dataclass(frozen=True, slots=True)
class Difference:
    """The first difference: its JSON path, its kind, and the two values there (a key's absent
    side is ``None``)."""

    path: str
    kind: DifferenceKind
    first: Any
    second: Any


def _keys(first: Mapping[Any, Any], second: Mapping[Any, Any], sort_keys: bool) -> Iterable[Any]:
    if sort_keys:
        return sorted(set(first) | set(second), key=str)
    return [*first, *(k for k in second if k not in first)]


def json_difference(
    first: Any, second: Any, path: str, *, sort_keys: bool = False, exact_types: bool = False
) -> Difference | None:
    """The first place where ``second`` differs from ``first``, or ``None`` when they are equal.

    Mapping keys are walked in ``first``'s order then the keys only ``second`` has, or sorted
    (``sort_keys``); list items by index, a length difference after the common items.
    ``exact_types`` tells ``1`` from ``1.0`` and ``True``."""
    if isinstance(first, Mapping) and isinstance(second, Mapping):
        for key in _keys(first, second, sort_keys):
            where = f"{path}.{key}"
            if key not in second:
                return Difference(where, "only_first", first[key], None)
            if key not in first:
                return Difference(where, "only_second", None, second[key])
            found = json_difference(
                first[key], second[key], where, sort_keys=sort_keys, exact_types=exact_types
            )
            if found:
                return found
        return None
    if isinstance(first, list) and isinstance(second, list):
        for i, (a, b) in enumerate(zip(first, second, strict=False)):
            found = json_difference(
                a, b, f"{path}[{i}]", sort_keys=sort_keys, exact_types=exact_types
            )
            if found:
                return found
        return None if len(first) == len(second) else Difference(path, "length", first, second)
    if first != second or (exact_types and type(first) is not type(second)):
        return Difference(path, "value", first, second)
    return None
