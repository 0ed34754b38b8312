"""Request skeletons: a request body reduced to its structure, the key cassettes are matched by.

A **skeleton** keeps roles and part kinds, renames tool-id linkage ``c1, c2 …`` (keeping each id's
form: its prefix, Mistral's 9 alphanumerics) and tool names ``n1, n2 …``, reduces the model to its
family (``gpt-4o-mini`` -> ``gpt-4o``), and turns every other string into ``"*"`` (or ``""`` when
empty) and every number into ``"#"``. Two requests with equal skeletons get the same verdict from a
provider as far as the structural rules go, so a recorded verdict applies to every request of the
same structure (:func:`conformance.traffic.verdicts.recorded_verdict`) as a ``recorded-skeleton``
answer. Rules on values (R14's negative temperature, A27's budget against ``max_tokens``) and on
the knobs left out below (C12's ``stop``) are not seen: ``judge_request`` lets the validators
answer where they refuse a request whose recorded skeleton-mate they still accept.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import urlsplit

from conformance.json_diff import json_difference
from conformance.traffic.endpoints import DIALECT_HEADER, endpoint_for_path
from reference_impl.documents import loads_json
from reference_impl.transcript import canonical_json

if TYPE_CHECKING:
    from vcr.request import Request as VcrRequest

__all__ = [
    "SKELETON_VERSION",
    "STRUCTURE_KEYS",
    "RequestLike",
    "StoredRequest",
    "closest_skeleton",
    "decoded_body",
    "first_difference",
    "model_family",
    "request_skeleton",
    "skeleton",
    "skeleton_digest",
    "skeleton_matcher",
]

SKELETON_VERSION: Final = 1

# Values of these keys are structure (a role, a block type, a tool-result status), kept verbatim.
_STRUCTURAL_KEYS: Final = frozenset({"role", "type", "status", "object"})
# Values of these keys link calls, results and items: renamed by first appearance.
_ID_KEYS: Final = frozenset(
    {"id", "tool_call_id", "call_id", "tool_use_id", "toolUseId", "previous_response_id"}
)
# Tool names: renamed too, so that a call still names the same tool as its spec and result.
_NAME_KEYS: Final = frozenset({"name"})
# Keys whose values are structure or linkage rather than content (content hashing keeps them).
STRUCTURE_KEYS: Final = _STRUCTURAL_KEYS | _ID_KEYS | _NAME_KEYS
# Content whose inner keys are the user's, not the provider's: collapsed to one marker.
_OPAQUE_KEYS: Final = frozenset(
    {
        "arguments",
        "args",
        "parameters",
        "input_schema",
        "inputSchema",
        "parametersJsonSchema",
        "response",
        "schema",
    }
)
# Sampling and bookkeeping knobs, left out of skeletons. A few catalogued rules do depend on them
# (C12 refuses `stop` on reasoning models, R14 a negative temperature, A27/B-rules compare
# max_tokens with a thinking budget): a skeleton match is no answer there (see the docstring).
_IGNORED_TOP_LEVEL: Final = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_output_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "stop_sequences",
        "n",
        "user",
        "metadata",
        "frequency_penalty",
        "presence_penalty",
        "logprobs",
        "top_logprobs",
        "service_tier",
        "prompt_cache_key",
        "safety_identifier",
        "inferenceConfig",
        "safetySettings",
    }
)
# Ignored knobs that a provider requires all the same: their absence is structure (A26). Marked
# only when missing, so the skeletons of every request that has them stay as they were.
_REQUIRED_TOP_LEVEL: Final[Mapping[tuple[str, str], tuple[str, ...]]] = {
    ("anthropic-messages", "generate"): ("max_tokens",),
}
_ID_PREFIX: Final = re.compile(r"^([A-Za-z]+[_-])")
_ID_CHARSET: Final = re.compile(r"^[A-Za-z0-9_-]+$")  # A6 / C7 pattern
_MISTRAL_ID: Final = re.compile(r"^[A-Za-z0-9]{9}$")  # Mistral: 9 alphanumerics


class _Renamer:
    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.names: dict[str, str] = {}

    def id_(self, value: str) -> str:
        if value not in self.ids:
            n = len(self.ids) + 1
            prefix = _ID_PREFIX.match(value)
            form = prefix.group(1) if prefix else ""
            suffix = "~a9" if _MISTRAL_ID.match(value) else ""
            suffix += "" if _ID_CHARSET.match(value) else "!"
            self.ids[value] = f"{form}c{n}{suffix}"
        return self.ids[value]

    def name(self, value: str) -> str:
        return self.names.setdefault(value, f"n{len(self.names) + 1}")


def _reduce(value: object, key: str | None, renamer: _Renamer, *, top: bool = False) -> object:
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for k in sorted(value, key=str):
            if top and k in _IGNORED_TOP_LEVEL:
                continue
            item = value[k]
            if top and k == "generationConfig" and isinstance(item, Mapping):
                # Gemini: only thinkingConfig changes acceptance (G6); the rest is sampling.
                item = {t: item[t] for t in ("thinkingConfig",) if t in item}
            if top and k == "model" and isinstance(item, str):
                out[k] = model_family(item)
            elif k in _OPAQUE_KEYS and not (top and k == "input"):
                out[k] = "*" if item not in (None, "", {}, []) else item
            else:
                out[str(k)] = _reduce(item, str(k), renamer)
        return out
    if isinstance(value, list):
        return [_reduce(item, key, renamer) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "#"
    if isinstance(value, str):
        if key in _STRUCTURAL_KEYS:
            return value
        if key in _ID_KEYS and value:
            return renamer.id_(value)
        if key in _NAME_KEYS and value:
            return renamer.name(value)
        return "*" if value else ""
    return f"<{type(value).__name__}>"


def skeleton(
    body: object,
    *,
    shape: str,
    kind: str = "generate",
    dialect: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The skeleton of a request body (any JSON value; a non-object body keeps its type only)."""
    reduced = _reduce(body, None, _Renamer(), top=True)
    if isinstance(reduced, dict) and isinstance(body, Mapping):
        for key in _REQUIRED_TOP_LEVEL.get((shape, kind), ()):
            if key not in body:  # never matches a recorded request that carried it
                reduced[key] = "<missing>"
    if model is None and isinstance(body, Mapping) and isinstance(body.get("model"), str):
        model = body["model"]
    return {
        "v": SKELETON_VERSION,
        "shape": shape,
        "kind": kind,
        "dialect": dialect,
        "model": model_family(model) if model else None,
        "body": reduced,
    }


def skeleton_digest(skel: Mapping[str, Any]) -> str:
    """A short stable name for a skeleton (16 hex digits of its canonical JSON's sha256)."""
    return hashlib.sha256(canonical_json(skel).encode()).hexdigest()[:16]


_DATE_SUFFIX: Final = re.compile(r"(-\d{4}-?\d{2}-?\d{2}|@\d+|-latest|-v\d+(:\d+)?)$")
_SIZE_SUFFIX: Final = re.compile(r"-(mini|nano|lite|preview|exp|instruct|turbo|chat-latest)$")
_CLAUDE_TIER: Final = re.compile(r"claude-(?:[\d.-]*-)?(opus|sonnet|haiku|instant)")
_BEDROCK_PREFIX: Final = re.compile(r"^(?:(?:us|eu|apac|global|jp|au)\.)?[a-z0-9-]+\.(?=[a-z])")


def model_family(model: str) -> str:
    """A model's family: ``gpt-4o-mini`` -> ``gpt-4o``, ``claude-haiku-4-5`` -> ``claude-haiku``.

    Bedrock ids lose their region and vendor prefix and version (``us.anthropic.…-v1:0``).
    """
    name = model.strip().lower().split("/")[-1]
    if ":" in name and not name.endswith(":0") and "." not in name:
        name = name.split(":")[0]
    name = _BEDROCK_PREFIX.sub("", name) if name.count(".") >= 1 and "-v" in name else name
    claude = _CLAUDE_TIER.search(name)
    if claude:
        return f"claude-{claude.group(1)}"
    previous = None
    while previous != name:
        previous = name
        name = _DATE_SUFFIX.sub("", name)
        name = _SIZE_SUFFIX.sub("", name)
    return name or model


def decoded_body(body: object) -> object:
    """A recorded request body (JSON text or bytes) as its JSON value; ``{"<not-json>": True}``
    for anything else, so that every non-JSON body has one skeleton."""
    if body is None:
        return None
    if isinstance(body, bytes | bytearray):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return {"<not-json>": True}
    if isinstance(body, str):
        try:
            loaded: object = loads_json(body) if body else None
        except json.JSONDecodeError:
            return {"<not-json>": True}
        return loaded
    return {"<not-json>": True}


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) and value else value)
    return None


class RequestLike(Protocol):
    """What a skeleton is read from: vcrpy's ``Request``, or a :class:`StoredRequest`."""

    @property
    def uri(self) -> str:
        """The request URL."""
        ...

    @property
    def body(self) -> Any:
        """The request body (bytes or text, as recorded)."""
        ...

    @property
    def headers(self) -> Any:
        """The request headers (a mapping)."""
        ...


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """A request as a cassette stores it, read without vcrpy (``from_dict`` of the YAML mapping):
    reading cassettes (recorded verdicts, audits) does not import vcrpy and its HTTP stacks."""

    method: str
    uri: str
    body: Any
    headers: Mapping[str, Any]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoredRequest:
        """The ``request`` mapping of one cassette interaction (vcrpy's own layout)."""
        body = data.get("body")
        if isinstance(body, str):
            body = body.encode("utf-8")  # as vcrpy's Request stores it
        headers = data.get("headers") or {}
        return cls(
            method=str(data.get("method", "")),
            uri=str(data.get("uri", "")),
            body=body,
            headers=headers if isinstance(headers, Mapping) else {},
        )


def request_skeleton(request: RequestLike) -> dict[str, Any]:
    """The skeleton of a recorded (or live) request: endpoint from its URL, then its body."""
    endpoint = endpoint_for_path(urlsplit(request.uri).path)
    body = decoded_body(request.body)
    if endpoint is None:
        return {"v": SKELETON_VERSION, "shape": None, "path": urlsplit(request.uri).path}
    dialect = endpoint.dialect or _header(request.headers, DIALECT_HEADER)
    return skeleton(
        body, shape=endpoint.shape, kind=endpoint.kind, dialect=dialect, model=endpoint.model
    )


def first_difference(a: object, b: object, path: str = "$") -> str | None:
    """The first JSON path where two skeletons differ, with both values; ``None`` when equal."""
    found = json_difference(a, b, path, sort_keys=True)
    if found is None:
        return None
    match found.kind:
        case "only_first" | "only_second":
            side = "request" if found.kind == "only_first" else "recorded"
            return f"{found.path} only in the {side}"
        case "length":
            return f"{found.path} has {len(found.first)} items in the request, {len(found.second)} recorded"
        case _:
            return f"{found.path}: {json.dumps(found.first)} != {json.dumps(found.second)}"


def skeleton_matcher(r1: VcrRequest, r2: VcrRequest) -> None:
    """vcrpy matcher: equal skeletons match; otherwise say where they first differ."""
    a, b = request_skeleton(r1), request_skeleton(r2)
    if a != b:
        raise AssertionError(f"skeletons differ: {first_difference(a, b)}")


def closest_skeleton(
    wanted: Mapping[str, Any], recorded: Sequence[tuple[str, Mapping[str, Any]]]
) -> tuple[str, str] | None:
    """The recorded ``(label, first difference)`` nearest to ``wanted`` (text similarity)."""
    if not recorded:
        return None
    text = canonical_json(wanted)
    scored = [
        (difflib.SequenceMatcher(None, text, canonical_json(skel)).ratio(), label, skel)
        for label, skel in recorded
    ]
    _, label, skel = max(scored, key=lambda item: (item[0], item[1]))
    return label, first_difference(wanted, skel) or "equal"
