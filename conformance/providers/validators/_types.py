"""JSON type expectations of request bodies, and the walk that finds the first wrong type.

Each shape's validator describes the keys it knows (messages and their parts, system, tools,
model, the numeric knobs) as a :class:`Spec` tree; :func:`first_mismatch` walks a body against it
and returns the first value whose JSON type the provider refuses (C0, R0, A12a, G0, B0).

Only known keys are judged: providers accept many fields we do not model, so an unknown key is
never an error, and free-form values (tool arguments, JSON schemas) are described as ``ANY``.
How a mismatch is worded (path notation, type names) is the shape module's business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "ANY",
    "Kind",
    "Mismatch",
    "Spec",
    "arr",
    "first_mismatch",
    "kind_of",
    "obj",
    "scalar",
]

Kind: TypeAlias = Literal["string", "integer", "number", "boolean", "object", "array", "null"]
ALL_KINDS: Final[frozenset[Kind]] = frozenset(
    {"string", "integer", "number", "boolean", "object", "array", "null"}
)
# Proto3 JSON (Gemini) takes numbers written as strings for numeric fields.
_NUMERIC_TEXT: Final = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


@dataclass(frozen=True, slots=True)
class Spec:
    """What one JSON value may be.

    ``kinds`` are the accepted JSON types. For objects, ``fields`` are the known keys (others are
    not judged) and ``required`` the keys that must be present; ``tag`` names a discriminator key
    (``type``) whose value picks extra ``variants`` fields. For arrays, ``items`` describes each
    item. ``name`` is the provider's own name for the type (Gemini's proto message names).
    """

    kinds: frozenset[Kind]
    fields: Mapping[str, Spec] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    items: Spec | None = None
    tag: str | None = None
    variants: Mapping[str, Spec] = field(default_factory=dict)
    name: str | None = None


ANY: Final = Spec(ALL_KINDS)


def scalar(*kinds: Kind) -> Spec:
    """A value of one of ``kinds`` (``scalar("string", "null")``)."""
    return Spec(frozenset(kinds))


def obj(
    fields: Mapping[str, Spec] | None = None,
    *,
    required: tuple[str, ...] = (),
    tag: str | None = None,
    variants: Mapping[str, Spec] | None = None,
    name: str | None = None,
    also: tuple[Kind, ...] = (),
) -> Spec:
    """An object with known ``fields``; ``also`` adds other accepted kinds (``"null"``...)."""
    return Spec(
        frozenset(("object", *also)),
        fields=dict(fields or {}),
        required=required,
        tag=tag,
        variants=dict(variants or {}),
        name=name,
    )


def arr(items: Spec, *, also: tuple[Kind, ...] = ()) -> Spec:
    """An array whose items are ``items``; ``also`` adds other accepted kinds (``"string"``...)."""
    return Spec(frozenset(("array", *also)), items=items, name=items.name)


def kind_of(value: Any) -> Kind | None:
    """The JSON type of ``value`` (``None`` for a Python value JSON cannot hold)."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is an int subclass in Python
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _accepts(spec: Spec, value: Any, *, numeric_text: bool) -> bool:
    kind = kind_of(value)
    if kind is None:
        return False
    if kind in spec.kinds:
        return True
    if kind == "integer" and "number" in spec.kinds:
        return True
    if kind == "number" and "integer" in spec.kinds:
        return float(value).is_integer()  # 5.0 is read as 5; 5.5 is not an integer
    return (
        numeric_text
        and kind == "string"
        and bool(spec.kinds & {"integer", "number"})
        and _NUMERIC_TEXT.match(value) is not None
    )


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The first refused value: its ``path`` (keys and indices), what was expected, what came.

    ``missing`` marks a required key that is absent (``value`` is then ``None``).
    """

    path: tuple[str | int, ...]
    spec: Spec
    value: Any
    missing: bool = False


def _object_fields(spec: Spec, value: Mapping[str, Any]) -> tuple[dict[str, Spec], tuple[str, ...]]:
    fields = dict(spec.fields)
    required = spec.required
    tag = value.get(spec.tag) if spec.tag else None
    variant = spec.variants.get(tag) if isinstance(tag, str) else None
    if variant is not None:
        fields.update(variant.fields)
        required = (*required, *variant.required)
    return fields, required


def first_mismatch(
    value: Any,
    spec: Spec,
    *,
    key: Callable[[str], str] = str,
    numeric_text: bool = False,
    null_optional: bool = False,
    path: tuple[str | int, ...] = (),
) -> Mismatch | None:
    """The first value of ``value`` (depth first, in the body's own key order) ``spec`` refuses.

    ``key`` maps a body key to the name fields are declared under (Gemini takes both camelCase
    and snake_case); paths carry the mapped name. ``numeric_text`` accepts numbers written as
    strings for numeric fields (proto3 JSON). ``null_optional`` reads ``null`` as "not given"
    for every key an object does not require (OpenAI: recorded 200s carry ``"name": null`` on a
    message, ``"status": null`` on a function call, ``"description": null`` on a tool).
    """
    if not _accepts(spec, value, numeric_text=numeric_text):
        return Mismatch(path, spec, value)
    if isinstance(value, dict) and "object" in spec.kinds and (spec.fields or spec.variants):
        fields, required = _object_fields(spec, value)
        present = {key(k) for k in value if isinstance(k, str)}
        for name in required:
            if name not in present:
                return Mismatch((*path, name), fields[name], None, missing=True)
        for raw_key, item in value.items():
            name = key(raw_key) if isinstance(raw_key, str) else raw_key
            sub = fields.get(name)
            if sub is None:
                continue  # an unknown key is never judged
            if item is None and null_optional and name not in required:
                continue
            found = first_mismatch(
                item,
                sub,
                key=key,
                numeric_text=numeric_text,
                null_optional=null_optional,
                path=(*path, name),
            )
            if found is not None:
                return found
    if isinstance(value, list) and "array" in spec.kinds and spec.items is not None:
        for index, item in enumerate(value):
            found = first_mismatch(
                item,
                spec.items,
                key=key,
                numeric_text=numeric_text,
                null_optional=null_optional,
                path=(*path, index),
            )
            if found is not None:
                return found
    return None
