"""Which provider endpoint a URL path names: shape, endpoint kind, gateway dialect, model.

The emulator routes requests with it, and the cassettes use it to compute a request's skeleton
from a recorded URL, so both agree on what a path means. Gateways are emulated with a path
prefix ``/dialect/{name}/...`` (or the ``x-ctxconf-dialect`` header, read by the caller).

>>> endpoint_for_path("/dialect/mistral/v1/chat/completions")
Endpoint(shape='openai-chat', kind='generate', dialect='mistral', model=None)
>>> endpoint_for_path("/v1beta/models/gemini-2.5-flash:generateContent").model
'gemini-2.5-flash'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias
from urllib.parse import unquote

__all__ = [
    "DIALECT_HEADER",
    "PROFILE_HEADER",
    "PROVENANCE_HEADER",
    "RULE_HEADER",
    "Endpoint",
    "EndpointKind",
    "endpoint_for_path",
]

EndpointKind: TypeAlias = Literal["generate", "count"]

DIALECT_HEADER: Final = "x-ctxconf-dialect"
PROFILE_HEADER: Final = "x-ctxconf-profile"
PROVENANCE_HEADER: Final = "x-ctxconf-provenance"
RULE_HEADER: Final = "x-ctxconf-rule"

_DIALECT_PREFIX: Final = re.compile(r"^/dialect/(?P<dialect>[A-Za-z0-9_.-]+)(?P<rest>/.*)$")

# (pattern, shape, kind); the first match wins. Paths are matched after the dialect prefix is cut.
_ROUTES: Final[tuple[tuple[re.Pattern[str], str, EndpointKind], ...]] = (
    (re.compile(r"^(?:/v1)?/chat/completions/?$"), "openai-chat", "generate"),
    (re.compile(r"^(?:/v1)?/responses/input_tokens/?$"), "openai-responses", "count"),
    (re.compile(r"^(?:/v1)?/responses/?$"), "openai-responses", "generate"),
    (re.compile(r"^(?:/v1)?/messages/count_tokens/?$"), "anthropic-messages", "count"),
    (re.compile(r"^(?:/v1)?/messages/?$"), "anthropic-messages", "generate"),
    (
        re.compile(r"^/v1(?:beta)?/models/(?P<model>[^/:]+):generateContent$"),
        "gemini",
        "generate",
    ),
    (re.compile(r"^/v1(?:beta)?/models/(?P<model>[^/:]+):countTokens$"), "gemini", "count"),
    (re.compile(r"^/model/(?P<model>[^/]+)/converse$"), "bedrock-converse", "generate"),
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What a request path names: the shape, the kind of endpoint, the dialect and model."""

    shape: str
    kind: EndpointKind
    dialect: str | None = None
    model: str | None = None
    """The model when the path carries it (Gemini, Bedrock); otherwise it is in the body."""


def endpoint_for_path(path: str) -> Endpoint | None:
    """The endpoint a path names, or ``None`` for a path no emulated provider serves."""
    dialect: str | None = None
    prefixed = _DIALECT_PREFIX.match(path)
    if prefixed:
        dialect = prefixed.group("dialect")
        path = prefixed.group("rest")
    for pattern, shape, kind in _ROUTES:
        found = pattern.match(path)
        if found:
            model = found.groupdict().get("model")
            return Endpoint(
                shape=shape,
                kind=kind,
                dialect=dialect,
                model=unquote(model) if model is not None else None,
            )
    return None
