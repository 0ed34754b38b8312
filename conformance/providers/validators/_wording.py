"""How each provider words a wrong JSON type: its path notation and its names for types.

* OpenAI (C0, R0): ``messages[0].content[0].text``, "expected a string, but got an integer"
  (the ``invalid_type`` family seen in C4/C7/C11; the wording for these fields is inferred).
* Anthropic (A12a): ``messages.0.content.0.text: Input should be a valid string`` (inferred).
* Gemini (G0): ``contents[0].parts[0].text`` with snake_case proto field names,
  ``(TYPE_STRING), 5`` (inferred from Google's proto-JSON parser wording).
* Bedrock (B0): ``messages.0.content.0.text``, "Member must be a string" (inferred).

Each validator's finding for a wrong type is a :class:`WrongType`: its detector id and its
provider's notation and words, with the logic that builds the finding written once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from conformance.providers.validators._base import Finding
from conformance.providers.validators._types import (
    AS_WRITTEN,
    Kind,
    Reading,
    Spec,
    first_mismatch,
    kind_of,
)

__all__ = [
    "WrongType",
    "aws_expected",
    "bracket_path",
    "dotted_path",
    "openai_expected",
    "proto_expected",
    "proto_got",
    "proto_message",
    "provider_number",
    "pydantic_expected",
    "snake_case",
    "type_name",
]

# The order kinds are named in a union ("one of a string or array of objects").
_ORDER: Final[tuple[Kind, ...]] = ("string", "integer", "number", "boolean", "object", "array")
_PROTO_PACKAGE: Final = "type.googleapis.com/google.ai.generativelanguage.v1beta."
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])([A-Z])")


class _Words(NamedTuple):
    openai: str
    pydantic: str
    proto: str
    aws: str


# What each provider calls a JSON type: OpenAI (C0, R0), Anthropic's pydantic (A12a), Gemini's
# proto field types (G0), Bedrock's AWS constraints (B0).
_WORDS: Final[dict[Kind, _Words]] = {
    "string": _Words("a string", "a valid string", "TYPE_STRING", "a string"),
    "integer": _Words("an integer", "a valid integer", "TYPE_INT32", "an integer"),
    "number": _Words("a decimal", "a valid number", "TYPE_FLOAT", "a number"),
    "boolean": _Words("a boolean", "a valid boolean", "TYPE_BOOL", "a boolean"),
    "object": _Words("an object", "a valid dictionary", "TYPE_MESSAGE", "a structure"),
    "array": _Words("an array", "a valid list", "TYPE_MESSAGE", "a list"),
}


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


def openai_expected(spec: Spec) -> str:
    """``a string``, ``an integer`` ...; unions read ``one of a string or array of objects``."""
    kinds = _named(spec)
    if len(kinds) == 1:
        return _WORDS[kinds[0]].openai
    names = []
    for kind in kinds:
        if kind == "array":
            items = spec.items.kinds if spec.items is not None else frozenset()
            names.append("array of objects" if items == {"object"} else "array")
        else:
            word = _WORDS[kind].openai
            names.append(word if not names else word.split()[-1])
    return "one of " + " or ".join(names)


def type_name(value: Any) -> str:
    """How OpenAI-style errors name the JSON type that came (``an integer``, ``null`` ...)."""
    kind = kind_of(value)
    if kind is None:
        return "an unsupported value"
    return "null" if kind == "null" else _WORDS[kind].openai


def pydantic_expected(spec: Spec) -> str:
    """Anthropic's validation wording; a union names its structured member (``a valid list``)."""
    kinds = _named(spec)
    return _WORDS[kinds[-1]].pydantic if kinds else "a valid value"


def proto_message(name: str) -> str:
    """Gemini's full name of a proto message type (``Content`` -> ``type.googleapis.com/...``)."""
    return name if "/" in name else _PROTO_PACKAGE + name


def proto_expected(spec: Spec) -> str:
    """Gemini's field type: ``TYPE_STRING``, or the message type ``type.googleapis.com/...``."""
    if spec.name is not None:
        return proto_message(spec.name)
    kinds = _named(spec)
    return _WORDS[kinds[0]].proto if kinds else "TYPE_MESSAGE"


def proto_got(value: Any) -> str:
    """What Google's parser says it found: the JSON scalar, or the container it did not expect."""
    if isinstance(value, dict):
        return "Starting an object on a scalar field"
    return json.dumps(value, ensure_ascii=False, default=str)[:80]


def aws_expected(spec: Spec) -> str:
    """Bedrock's constraint wording (``a string``, ``a structure``, ``a list``)."""
    kinds = _named(spec)
    return " or ".join(_WORDS[k].aws for k in kinds) if kinds else "a valid value"


def provider_number(value: float) -> str:
    """A number as providers print it in their messages: ``-1`` and ``1000`` for integral
    values (whatever the JSON wrote, ``1000.0`` included), ``0.5`` otherwise (recorded, R14/G10)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass(frozen=True, slots=True)
class WrongType:
    """One validator's finding for a value of a JSON type its provider refuses (C0, R0, A12a, G0,
    B0): the detector, the provider's path notation and words for the type expected and the value
    that came (``None``: the message does not say it), and how the validator reads a body."""

    detector: str
    path: Callable[[tuple[str | int, ...]], str]
    expected: Callable[[Spec], str]
    got: Callable[[Any], str] | None
    reading: Reading = AS_WRITTEN
    rule: str | None = None
    """The rule the finding pins (``None``: the profile's rule for ``detector``)."""

    def bad(self, path: str, expected: str, got: Any) -> Finding:
        """The value at ``path`` is not ``expected`` (in the provider's words)."""
        values = {"path": path, "expected": expected}
        if self.got is not None:
            values["got"] = self.got(got)
        return Finding(self.detector, (), values, rule=self.rule)

    def missing(self, path: str) -> Finding:
        """A required key at ``path`` is absent."""
        return Finding(self.detector, (), {"path": path}, rule=self.rule, variant="missing")

    def first(self, body: Any, spec: Spec) -> Finding | None:
        """The finding for the first value of ``body`` ``spec`` refuses, or ``None``."""
        found = first_mismatch(body, spec, self.reading)
        if found is None:
            return None
        path = self.path(found.path)
        if found.missing:
            return self.missing(path)
        return self.bad(path, self.expected(found.spec), found.value)
