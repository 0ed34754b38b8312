"""How each provider words a wrong JSON type: its path notation and its names for types.

* OpenAI (C0, R0): ``messages[0].content[0].text``, "expected a string, but got an integer"
  (the ``invalid_type`` family seen in C4/C7/C11; the wording for these fields is inferred).
* Anthropic (A12a): ``messages.0.content.0.text: Input should be a valid string`` (inferred).
* Gemini (G0): ``contents[0].parts[0].text`` with snake_case proto field names,
  ``(TYPE_STRING), 5`` (inferred from Google's proto-JSON parser wording).
* Bedrock (B0): ``messages.0.content.0.text``, "Member must be a string" (inferred).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from conformance.providers.validators._base import type_name
from conformance.providers.validators._types import Kind, Spec

__all__ = [
    "aws_expected",
    "bracket_path",
    "dotted_path",
    "openai_expected",
    "openai_got",
    "proto_expected",
    "proto_got",
    "provider_number",
    "pydantic_expected",
    "snake_case",
]

# The order kinds are named in a union ("one of a string or array of objects").
_ORDER: Final[tuple[Kind, ...]] = ("string", "integer", "number", "boolean", "object", "array")
_PROTO_PACKAGE: Final = "type.googleapis.com/google.ai.generativelanguage.v1beta."
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _named(spec: Spec) -> list[Kind]:
    return [k for k in _ORDER if k in spec.kinds]


def bracket_path(path: tuple[str | int, ...]) -> str:
    """OpenAI's and Google's notation: ``messages[0].content[0].text``."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out or "body"


def dotted_path(path: tuple[str | int, ...]) -> str:
    """Anthropic's and Bedrock's notation: ``messages.0.content.0.text``."""
    return ".".join(str(step) for step in path) or "body"


def snake_case(name: str) -> str:
    """Gemini's proto field name for a JSON key (``functionCall`` -> ``function_call``)."""
    return _CAMEL.sub(r"_\1", name).lower()


_OPENAI_ALONE: Final[dict[Kind, str]] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a decimal",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
}


def openai_expected(spec: Spec) -> str:
    """``a string``, ``an integer`` ...; unions read ``one of a string or array of objects``."""
    kinds = _named(spec)
    if len(kinds) == 1:
        return _OPENAI_ALONE[kinds[0]]
    names = []
    for kind in kinds:
        if kind == "array":
            items = spec.items.kinds if spec.items is not None else frozenset()
            names.append("array of objects" if items == {"object"} else "array")
        else:
            names.append(_OPENAI_ALONE[kind] if not names else _OPENAI_ALONE[kind].split()[-1])
    return "one of " + " or ".join(names)


def openai_got(value: Any) -> str:
    """OpenAI's name for what came (``an integer``, ``null`` ...)."""
    return type_name(value)


_PYDANTIC: Final[dict[Kind, str]] = {
    "string": "a valid string",
    "integer": "a valid integer",
    "number": "a valid number",
    "boolean": "a valid boolean",
    "object": "a valid dictionary",
    "array": "a valid list",
}


def pydantic_expected(spec: Spec) -> str:
    """Anthropic's validation wording; a union names its structured member (``a valid list``)."""
    kinds = _named(spec)
    return _PYDANTIC[kinds[-1]] if kinds else "a valid value"


_PROTO: Final[dict[Kind, str]] = {
    "string": "TYPE_STRING",
    "integer": "TYPE_INT32",
    "number": "TYPE_FLOAT",
    "boolean": "TYPE_BOOL",
    "object": "TYPE_MESSAGE",
    "array": "TYPE_MESSAGE",
}


def proto_expected(spec: Spec) -> str:
    """Gemini's field type: ``TYPE_STRING``, or the message type ``type.googleapis.com/...``."""
    if spec.name is not None:
        return spec.name if "/" in spec.name else _PROTO_PACKAGE + spec.name
    kinds = _named(spec)
    return _PROTO[kinds[0]] if kinds else "TYPE_MESSAGE"


def proto_got(value: Any) -> str:
    """What Google's parser says it found: the JSON scalar, or the container it did not expect."""
    if isinstance(value, dict):
        return "Starting an object on a scalar field"
    return json.dumps(value, ensure_ascii=False, default=str)[:80]


_AWS: Final[dict[Kind, str]] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "a structure",
    "array": "a list",
}


def aws_expected(spec: Spec) -> str:
    """Bedrock's constraint wording (``a string``, ``a structure``, ``a list``)."""
    kinds = _named(spec)
    return " or ".join(_AWS[k] for k in kinds) if kinds else "a valid value"


def provider_number(value: float) -> str:
    """A number as providers print it in their messages: ``-1`` and ``1000`` for integral
    values (whatever the JSON wrote, ``1000.0`` included), ``0.5`` otherwise (recorded, R14/G10)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
