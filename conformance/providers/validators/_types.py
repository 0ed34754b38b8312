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
    "AS_WRITTEN",
    "BOOLEAN",
    "INTEGER",
    "NUMBER",
    "OPT_BOOLEAN",
    "OPT_INTEGER",
    "OPT_NUMBER",
    "OPT_STRING",
    "STRING",
    "Kind",
    "Mismatch",
    "Reading",
    "Spec",
    "arr",
    "conforms",
    "first_mismatch",
    "kind_of",
    "obj",
    "scalar",
    "typed",
    "walk_mismatch",
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


STRING: Final = scalar("string")
INTEGER: Final = scalar("integer")
NUMBER: Final = scalar("number")
BOOLEAN: Final = scalar("boolean")
OPT_STRING: Final = scalar("string", "null")
OPT_INTEGER: Final = scalar("integer", "null")
OPT_NUMBER: Final = scalar("number", "null")
OPT_BOOLEAN: Final = scalar("boolean", "null")


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


def typed(variants: Mapping[str, Spec], fields: Mapping[str, Spec] | None = None) -> Spec:
    """An object with a required ``type`` that picks its fields from ``variants`` (a content
    part or block); ``fields`` are known keys of every variant."""
    return obj(
        {"type": STRING, **(fields or {})}, required=("type",), tag="type", variants=variants
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
class Reading:
    """How a provider reads a body against a :class:`Spec` (the default: as written).

    ``key`` maps a body key to the name fields are declared under (Gemini takes both camelCase
    and snake_case); paths carry the mapped name. ``numeric_text`` accepts numbers written as
    strings for numeric fields (proto3 JSON). ``null_optional`` reads ``null`` as "not given"
    for every key an object does not require (OpenAI: recorded 200s carry ``"name": null`` on a
    message, ``"status": null`` on a function call, ``"description": null`` on a tool).
    """

    key: Callable[[str], str] = str
    numeric_text: bool = False
    null_optional: bool = False


AS_WRITTEN: Final = Reading()


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


def first_mismatch(value: Any, spec: Spec, reading: Reading = AS_WRITTEN) -> Mismatch | None:
    """The first value of ``value`` (depth first, in the body's own key order) ``spec`` refuses,
    read as ``reading`` says.

    Almost every body conforms: :func:`conforms` answers that without building paths, and the
    walk that names the mismatch runs only when it says no.
    """
    if conforms(value, spec, reading):
        return None
    return walk_mismatch(value, spec, reading)


# The JSON types of values parsed from JSON (exact classes; a subclass takes the slow path).
_EXACT_KINDS: Final[Mapping[type, Kind]] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
_Checker: TypeAlias = Callable[[Any], bool]
_CHECKERS: dict[tuple[int, Reading], tuple[Spec, _Checker]] = {}


def conforms(value: Any, spec: Spec, reading: Reading = AS_WRITTEN) -> bool:
    """Whether ``first_mismatch(value, spec, reading)`` is ``None``: the same judgement, by a
    checker built once per spec (no paths, no ``Mismatch``)."""
    return _checker(spec, reading)(value)


def _checker(spec: Spec, reading: Reading) -> _Checker:
    cache_key = (id(spec), reading)
    found = _CHECKERS.get(cache_key)
    if found is not None and found[0] is spec:
        return found[1]
    checker = _build_checker(spec, reading)
    _CHECKERS[cache_key] = (spec, checker)
    return checker


def _shallow_types(spec: Spec) -> frozenset[type]:
    """The classes of parsed JSON that ``spec`` takes as they are, without looking inside: its
    exact types but an object with known fields and an array with an item spec."""
    types = set(_exact_types(spec.kinds))
    if "object" in spec.kinds and (spec.fields or spec.variants):
        types.discard(dict)
    if "array" in spec.kinds and spec.items is not None:
        types.discard(list)
    return frozenset(types)


def _exact_types(kinds: frozenset[Kind]) -> frozenset[type]:
    """The Python classes of parsed JSON that ``kinds`` takes without a second look (an integer
    where a number goes too); any other value is judged by :func:`_accepts`."""
    types = {cls for cls, kind in _EXACT_KINDS.items() if kind in kinds}
    if "number" in kinds:
        types.add(int)
    return frozenset(types)


_Field: TypeAlias = tuple[frozenset[type], _Checker]
"""A known field: the classes taken at once (a leaf's, and ``null`` where ``null_optional``
applies), and the checker that judges any other value."""


def _build_checker(spec: Spec, reading: Reading) -> _Checker:
    key, numeric_text = reading.key, reading.numeric_text
    exact = _exact_types(spec.kinds)
    structured = "object" in spec.kinds and bool(spec.fields or spec.variants)
    items = spec.items if "array" in spec.kinds else None
    item_field = _field(items, reading) if items is not None else None
    plain_keys = key is str
    # Per discriminator value (None: no variant applies), built on first use; with
    # ``null_optional``, a field the object does not require also takes ``null``.
    layouts: dict[str | None, tuple[dict[str, _Field], tuple[str, ...]]] = {}

    def layout(value: dict[Any, Any]) -> tuple[dict[str, _Field], tuple[str, ...]]:
        tag = value.get(spec.tag) if spec.tag else None
        variant_key = tag if isinstance(tag, str) and tag in spec.variants else None
        found = layouts.get(variant_key)
        if found is None:
            fields, required = _object_fields(spec, value)
            checks = {
                name: _field(sub, reading, nullable=name not in required)
                for name, sub in fields.items()
            }
            found = layouts[variant_key] = (checks, required)
        return found

    # Without a discriminator every object has the same layout: built now, looked up never.
    fixed = layout({}) if structured and not (spec.tag and spec.variants) else None
    tag_key = spec.tag

    def check(value: Any) -> bool:
        if type(value) not in exact and not _accepts(spec, value, numeric_text=numeric_text):
            return False
        if structured and isinstance(value, dict):
            if fixed is not None:
                checks, required = fixed
            else:  # a known variant's layout is found by its tag; anything else asks layout()
                tag = value.get(tag_key)
                found = layouts.get(tag) if type(tag) is str else None
                checks, required = found if found is not None else layout(value)
            if plain_keys:
                for name in required:
                    if name not in value:
                        return False
                pairs: Any = value.items()
            else:
                if required:
                    present = {key(k) for k in value if isinstance(k, str)}
                    if any(name not in present for name in required):
                        return False
                pairs = ((key(k) if isinstance(k, str) else k, v) for k, v in value.items())
            for name, item in pairs:
                entry = checks.get(name)
                if entry is not None and type(item) not in entry[0] and not entry[1](item):
                    return False
        if item_field is not None and isinstance(value, list):
            types, inner = item_field
            for item in value:
                if type(item) not in types and not inner(item):
                    return False
        return True

    if structured and plain_keys:
        return _parsed_first(check, (fixed, layouts, layout, tag_key), item_field)
    return check if item_field is None else _parsed_first(check, None, item_field)


_Layout: TypeAlias = tuple[dict[str, "_Field"], tuple[str, ...]]
_Objects: TypeAlias = tuple[
    "_Layout | None", dict[str | None, "_Layout"], Callable[[dict[Any, Any]], "_Layout"], str | None
]
"""How a checker finds an object's layout: the fixed one, else by tag (``layouts``), else by
asking ``layout``; and the tag's key."""


def _parsed_first(check: _Checker, objects: _Objects | None, item_field: _Field | None) -> _Checker:
    """``check``, with the two common cases of parsed JSON first: an exact ``dict`` of a spec with
    known fields (keys as written), an exact ``list`` of a spec with an item spec. Any other value
    goes to ``check``."""

    def check_parsed(value: Any) -> bool:
        cls = type(value)
        if cls is dict and objects is not None:
            fixed, layouts, layout, tag_key = objects
            if fixed is not None:
                checks, required = fixed
            else:
                tag = value.get(tag_key)
                found = layouts.get(tag) if type(tag) is str else None
                checks, required = found if found is not None else layout(value)
            for name in required:
                if name not in value:
                    return False
            for name, item in value.items():
                entry = checks.get(name)
                if entry is not None and type(item) not in entry[0] and not entry[1](item):
                    return False
            return True
        if cls is list and item_field is not None:
            types, inner = item_field
            for item in value:  # noqa: SIM110 - a loop: all() over a generator is slower here
                if type(item) not in types and not inner(item):
                    return False
            return True
        return check(value)

    return check_parsed


def _field(sub: Spec, reading: Reading, *, nullable: bool = False) -> _Field:
    """How a field (or an array's item) is judged; ``nullable``: ``null_optional`` applies."""
    types = _shallow_types(sub)
    if reading.null_optional and nullable:
        types |= {type(None)}
    return (types, _checker(sub, reading))


def walk_mismatch(
    value: Any, spec: Spec, reading: Reading = AS_WRITTEN, path: tuple[str | int, ...] = ()
) -> Mismatch | None:
    """:func:`first_mismatch` by walking the whole body (what names the mismatch)."""
    key = reading.key
    if not _accepts(spec, value, numeric_text=reading.numeric_text):
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
            if item is None and reading.null_optional and name not in required:
                continue
            found = walk_mismatch(item, sub, reading, (*path, name))
            if found is not None:
                return found
    if isinstance(value, list) and "array" in spec.kinds and spec.items is not None:
        for index, item in enumerate(value):
            found = walk_mismatch(item, spec.items, reading, (*path, index))
            if found is not None:
                return found
    return None
