"""Cassettes: vcrpy configured for provider round trips, matched by request *skeleton*.

A **skeleton** is a request body reduced to its structure: roles and part kinds are kept, tool-id
linkage is renamed ``c1, c2 …`` (keeping each id's form: its prefix, Mistral's 9 alphanumerics),
tool names become ``n1, n2 …``, the model becomes its family (``gpt-4o-mini`` -> ``gpt-4o``),
every other string becomes ``"*"`` (or ``""`` when empty) and every number ``"#"``. Two requests
with equal skeletons get the same verdict from a provider, so a recorded verdict applies to every
request of the same structure (:func:`conformance.recorded_verdicts.recorded_verdict`).

A cassette file is vcrpy's YAML plus one top-level ``ctxconf:`` mapping (:class:`CassetteMetadata`)::

    ctxconf:
      version: 1
      recorded_against: emulator:anthropic-current   # live | emulator:<profile> | custom:<host>
      date: '2026-05-01'
      sdk: {anthropic: 2.14.0, httpx: 0.28.1, httpx2: 2.16.2, openai: 3.57.0}
      model: claude-haiku-4-5
      shape: anthropic-messages
      dialect: null
      scenario: probe-single-tool
      content: full                                  # full | hashed
    interactions: [...]
    version: 1

Secrets are scrubbed before anything is written (:func:`scrub_request`, :func:`scrub_response`);
:func:`find_secrets` is what the committed-cassette test uses to prove it.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import yaml

from conformance.providers.emulator_routes import DIALECT_HEADER, endpoint_for_path
from reference_impl._documents import (
    DocumentLimitError,
    dump_yaml,
    load_yaml_safe,
    read_input_text,
)
from reference_impl.errors import CtxconfError
from reference_impl.transcript import canonical_json

if TYPE_CHECKING:  # vcrpy is imported only to record or replay (make_vcr), never to read
    import vcr
    from vcr.request import Request as VcrRequest

__all__ = [
    "METADATA_KEY",
    "METADATA_VERSION",
    "REDACTED",
    "SECRET_HEADERS",
    "SKELETON_VERSION",
    "CassetteError",
    "CassetteMetadata",
    "CassetteMissError",
    "ContentMode",
    "RecordMode",
    "RequestLike",
    "StoredRequest",
    "closest_skeleton",
    "find_secrets",
    "first_difference",
    "make_vcr",
    "model_family",
    "parse_record_mode",
    "read_cassette",
    "request_skeleton",
    "scrub_request",
    "scrub_response",
    "sdk_versions",
    "skeleton",
    "skeleton_digest",
    "skeleton_matcher",
]

SKELETON_VERSION: Final = 1
METADATA_VERSION: Final = 1
METADATA_KEY: Final = "ctxconf"


class CassetteError(CtxconfError, ValueError):
    """A cassette or cassette option that cannot be used (bad record mode, bad metadata)."""

    code = "cassette_invalid"


class CassetteMissError(CassetteError, LookupError):
    """No recorded interaction has this request's skeleton; names the closest one recorded."""

    code = "cassette_miss"


class RecordMode(str, Enum):
    """When to touch the network. CI replays with ``none``; recording uses ``all``."""

    NONE = "none"
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"


class ContentMode(str, Enum):
    """``hashed`` replaces every content string in stored bodies by a short sha256."""

    FULL = "full"
    HASHED = "hashed"


def parse_record_mode(value: str | RecordMode) -> RecordMode:
    """A record mode from its name; a loud error listing the valid names otherwise."""
    try:
        return RecordMode(value)
    except ValueError:
        valid = ", ".join(mode.value for mode in RecordMode)
        raise CassetteError(
            f"unknown record mode {value!r}; use one of: {valid}", where="record_mode"
        ) from None


# ------------------------------------------------------------------------------------ skeleton

# Values of these keys are structure (a role, a block type, a tool-result status), kept verbatim.
_STRUCTURAL_KEYS: Final = frozenset({"role", "type", "status", "object"})
# Values of these keys link calls, results and items: renamed by first appearance.
_ID_KEYS: Final = frozenset(
    {"id", "tool_call_id", "call_id", "tool_use_id", "toolUseId", "previous_response_id"}
)
# Tool names: renamed too, so that a call still names the same tool as its spec and result.
_NAME_KEYS: Final = frozenset({"name"})
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
# Sampling and bookkeeping knobs that no catalogued rule depends on (provider-rules.md covers
# message structure, tools, thinking and size; none of these).
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


def _decoded_body(body: object) -> object:
    if body is None:
        return None
    if isinstance(body, bytes | bytearray):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return {"<not-json>": True}
    if isinstance(body, str):
        try:
            loaded: object = json.loads(body) if body else None
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
    body = _decoded_body(request.body)
    if endpoint is None:
        return {"v": SKELETON_VERSION, "shape": None, "path": urlsplit(request.uri).path}
    dialect = endpoint.dialect or _header(request.headers, DIALECT_HEADER)
    return skeleton(
        body, shape=endpoint.shape, kind=endpoint.kind, dialect=dialect, model=endpoint.model
    )


def first_difference(a: object, b: object, path: str = "$") -> str | None:
    """The first JSON path where two skeletons differ, with both values; ``None`` when equal."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                side = "recorded" if k in b else "request"
                return f"{path}.{k} only in the {side}"
            found = first_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        if len(a) != len(b):
            return f"{path} has {len(a)} items in the request, {len(b)} recorded"
        return None
    return None if a == b else f"{path}: {json.dumps(a)} != {json.dumps(b)}"


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


# ------------------------------------------------------------------------------------ secrets

SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "x-amz-security-token",
        "x-amz-date",
    }
)
_SECRET_QUERY_KEYS: Final = frozenset({"key", "api_key", "api-key", "access_token"})
_SECRET_PATTERNS: Final = (
    re.compile(r"sk-ant-[A-Za-z0-9_-]{8,}"),
    re.compile(r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"AIza[0-9A-Za-z_-]{35}"),
)
_BEARER: Final = re.compile(r"Bearer\s+(?!REDACTED\b)[A-Za-z0-9._~+/=-]{8,}")
REDACTED: Final = "REDACTED"


def _scrub_text(text: str) -> str:
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return _BEARER.sub(f"Bearer {REDACTED}", text)


def _scrub_body(body: object) -> object:
    if isinstance(body, bytes | bytearray):
        try:
            return _scrub_text(bytes(body).decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            return body
    if isinstance(body, str):
        return _scrub_text(body)
    return body


def scrub_request(request: VcrRequest) -> VcrRequest:
    """Remove secret headers and ``key=`` query parameters; redact key-shaped strings in the body."""
    for name in list(request.headers):
        if name.lower() in SECRET_HEADERS or name.lower().startswith("x-stainless-"):
            del request.headers[name]
    parts = urlsplit(request.uri)
    if parts.query:
        kept = [(k, v) for k, v in parse_qsl(parts.query) if k.lower() not in _SECRET_QUERY_KEYS]
        request.uri = urlunsplit(parts._replace(query=urlencode(kept)))
    request.body = _scrub_body(request.body)
    return request


def scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    """Remove secret headers (cookies, organization and project ids) and key-shaped strings."""
    headers = response.get("headers") or {}
    response["headers"] = {k: v for k, v in headers.items() if k.lower() not in SECRET_HEADERS}
    body = response.get("body")
    if isinstance(body, dict) and "string" in body:
        body["string"] = _scrub_body(body["string"])
    return response


def find_secrets(document: Mapping[str, Any]) -> list[str]:
    """Every secret left in a loaded cassette document, as ``interaction N: what`` lines."""
    found: list[str] = []
    for index, interaction in enumerate(document.get("interactions") or []):
        for side in ("request", "response"):
            part = interaction.get(side) or {}
            found.extend(
                f"interaction {index}: {side} header {name!r}"
                for name in part.get("headers") or {}
                if str(name).lower() in SECRET_HEADERS
            )
            uri = str(part.get("uri") or "")
            for key, _ in parse_qsl(urlsplit(uri).query):
                if key.lower() in _SECRET_QUERY_KEYS:
                    found.append(f"interaction {index}: query parameter {key!r}")
    text = dump_yaml(dict(document), allow_unicode=True)
    for pattern in (*_SECRET_PATTERNS, _BEARER):
        found.extend(f"text matching {pattern.pattern!r}" for _ in pattern.finditer(text))
    return found


# ------------------------------------------------------------------------------ content hashing


# Values that are the provider's vocabulary, not content: hashing them breaks the SDKs' models.
_WIRE_ENUMS: Final = frozenset(
    {"tool_choice", "finish_reason", "stop_reason", "stopReason", "finishReason", "truncation"}
)
_NOT_HASHED: Final = _STRUCTURAL_KEYS | _ID_KEYS | _NAME_KEYS | _WIRE_ENUMS


def _hash_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _hash_content(value: object, key: str | None) -> object:
    if isinstance(value, str) and value.startswith(_STREAM_HASHED):
        return value[len(_STREAM_HASHED) :]  # a stream's argument fragment, hashed already
    if isinstance(value, dict):
        return {k: _hash_content(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_hash_content(v, key) for v in value]
    if isinstance(value, str) and value and key not in _NOT_HASHED:
        if key in {"model", "arguments"}:
            return value if key == "model" else json.dumps({"sha256": _hash_text(value)})
        return _hash_text(value)
    return value


def _hash_body(body: object) -> object:
    if isinstance(body, bytes | bytearray | str):
        text = body if isinstance(body, str) else bytes(body).decode("utf-8", "replace")
        if _SSE_FIELD.match(text):
            return _hash_event_stream(text).encode("utf-8")
    loaded = _decoded_body(body)
    if isinstance(loaded, dict | list) and loaded != {"<not-json>": True}:
        return json.dumps(_hash_content(loaded, None)).encode("utf-8")
    return body


# A server-sent event stream (``stream: true``): the first line is an ``event:`` or ``data:`` field.
_SSE_FIELD: Final = re.compile(r"^(?:event|data):")


def _hash_event_stream(text: str) -> str:
    """Each ``data:`` line's JSON hashed like a JSON body, event names and framing kept, so the
    stream still replays through the SDKs. Tool-argument fragments must still concatenate to
    JSON: a call's first fragment becomes ``{"sha256": ...}`` and its later ones ``""``."""
    seen: set[tuple[object, ...]] = set()
    lines: list[str] = []
    for line in text.split("\n"):
        if line.startswith("data:"):
            try:
                loaded = json.loads(line[5:].strip())
            except json.JSONDecodeError:
                lines.append(line)  # data: [DONE]
                continue
            if isinstance(loaded, dict):
                _hash_fragments(loaded, seen)
            lines.append(f"data: {json.dumps(_hash_content(loaded, None), separators=(',', ':'))}")
            continue
        lines.append(line)
    return "\n".join(lines)


def _fragment(value: object, key: tuple[object, ...], seen: set[tuple[object, ...]]) -> str:
    if not isinstance(value, str) or not value:
        return value if isinstance(value, str) else ""
    first = key not in seen
    seen.add(key)
    return _STREAM_HASHED + json.dumps({"sha256": _hash_text(value)}) if first else _STREAM_HASHED


# Marks a fragment already hashed, so _hash_content leaves it; removed after hashing.
_STREAM_HASHED: Final = "\x00"


def _hash_fragments(event: dict[str, Any], seen: set[tuple[object, ...]]) -> None:
    """Replace the tool-argument fragments of one event (Anthropic, Responses, Chat) in place."""
    delta = event.get("delta")
    if isinstance(delta, dict) and delta.get("type") == "input_json_delta":
        block: tuple[object, ...] = ("anthropic", event.get("index"))
        delta["partial_json"] = _fragment(delta.get("partial_json"), block, seen)
    if event.get("type") == "response.function_call_arguments.delta":
        event["delta"] = _fragment(event.get("delta"), ("responses", event.get("item_id")), seen)
    for choice in event.get("choices") or []:
        calls = (choice.get("delta") or {}).get("tool_calls") if isinstance(choice, dict) else None
        for call in calls or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and "arguments" in function:
                call_key = ("chat", choice.get("index"), call.get("index"))
                function["arguments"] = _fragment(function["arguments"], call_key, seen)


# ------------------------------------------------------------------------------------ metadata


def sdk_versions() -> dict[str, str]:
    """Installed versions of the client libraries that shape what is sent and parsed."""
    return {
        package: _installed_version(package)
        for package in ("openai", "anthropic", "httpx", "httpx2")
    }


def _installed_version(package: str) -> str:
    try:
        return importlib_metadata.version(package)
    except importlib_metadata.PackageNotFoundError:
        return "absent"


_AGAINST: Final = re.compile(r"^(live|emulator:[A-Za-z0-9_.-]+|custom:[A-Za-z0-9_.:\[\]-]+)$")


@dataclass(frozen=True, slots=True)
class CassetteMetadata:
    """The ``ctxconf:`` header of a cassette: what it was recorded against, when, with what."""

    recorded_against: str
    shape: str
    model: str
    scenario: str
    date: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).date().isoformat())
    sdk: Mapping[str, str] = field(default_factory=sdk_versions)
    dialect: str | None = None
    content: Literal["full", "hashed"] = "full"
    version: int = METADATA_VERSION

    def __post_init__(self) -> None:
        if not _AGAINST.match(self.recorded_against):
            raise CassetteError(
                f"recorded_against {self.recorded_against!r} must be 'live', "
                "'emulator:<profile>' or 'custom:<host>'",
                where="ctxconf.recorded_against",
            )

    @property
    def source(self) -> Literal["live", "emulator", "custom"]:
        """``live``, ``emulator`` or ``custom``: the head of ``recorded_against``."""
        head = self.recorded_against.split(":", 1)[0]
        return "live" if head == "live" else "emulator" if head == "emulator" else "custom"

    @property
    def profile(self) -> str | None:
        """The emulator profile a cassette was recorded against (``None`` unless emulated)."""
        return self.recorded_against.split(":", 1)[1] if self.source == "emulator" else None

    def to_dict(self) -> dict[str, Any]:
        """The ``ctxconf:`` mapping as written into a cassette."""
        return {
            "version": self.version,
            "recorded_against": self.recorded_against,
            "date": self.date,
            "sdk": dict(sorted(self.sdk.items())),
            "model": self.model,
            "shape": self.shape,
            "dialect": self.dialect,
            "scenario": self.scenario,
            "content": self.content,
        }

    @staticmethod
    def from_dict(value: object, *, source: str = "cassette") -> CassetteMetadata:
        """Read and validate a cassette's ``ctxconf:`` mapping; a :class:`CassetteError` naming
        ``source`` otherwise."""
        if not isinstance(value, Mapping):
            raise CassetteError(f"{source}: no '{METADATA_KEY}:' mapping", where=METADATA_KEY)
        if value.get("version") != METADATA_VERSION:
            raise CassetteError(
                f"{source}: metadata version {value.get('version')!r} is not {METADATA_VERSION}",
                where=f"{METADATA_KEY}.version",
            )
        missing = [k for k in ("recorded_against", "shape", "model", "scenario") if k not in value]
        if missing:
            raise CassetteError(
                f"{source}: metadata lacks {', '.join(missing)}", where=METADATA_KEY
            )
        content = value.get("content", "full")
        if content not in ("full", "hashed"):
            raise CassetteError(
                f"{source}: content {content!r} is not full or hashed",
                where=f"{METADATA_KEY}.content",
            )
        sdk = value.get("sdk") or {}
        return CassetteMetadata(
            recorded_against=str(value["recorded_against"]),
            shape=str(value["shape"]),
            model=str(value["model"]),
            scenario=str(value["scenario"]),
            date=str(value.get("date", "")),
            sdk={str(k): str(v) for k, v in dict(sdk).items()},
            dialect=None if value.get("dialect") is None else str(value["dialect"]),
            content=content,
        )


class _CtxconfYamlSerializer:
    """vcrpy's YAML with its ``metadata.ctxconf`` lifted to a top-level ``ctxconf:`` mapping."""

    @staticmethod
    def deserialize(cassette_string: str) -> dict[str, Any]:
        data = load_yaml_safe(cassette_string) or {}
        if not isinstance(data, dict):
            raise ValueError("a cassette is a YAML mapping with 'interactions'")
        header = data.pop(METADATA_KEY, None)
        if header is not None:
            data["metadata"] = {**(data.get("metadata") or {}), METADATA_KEY: header}
        return data

    @staticmethod
    def serialize(cassette_dict: dict[str, Any]) -> str:
        data = dict(cassette_dict)
        meta = dict(data.pop("metadata", None) or {})
        header = meta.pop(METADATA_KEY, None)
        ordered: dict[str, Any] = {}
        if header is not None:
            ordered[METADATA_KEY] = header
        if meta:
            ordered["metadata"] = meta
        ordered.update(data)
        return dump_yaml(ordered, sort_keys=False, allow_unicode=True, width=100)


def make_vcr(
    *,
    record_mode: str | RecordMode = RecordMode.NONE,
    content: ContentMode = ContentMode.FULL,
) -> vcr.VCR:
    """A vcrpy instance: skeleton matching, scrubbing, the ``ctxconf:`` header serializer."""
    import vcr  # noqa: PLC0415 - only recording and replaying need vcrpy (and its HTTP stacks)

    mode = parse_record_mode(record_mode)
    hashed = content is ContentMode.HASHED

    def before_request(request: VcrRequest) -> VcrRequest:
        request = scrub_request(request)
        if hashed:
            request.body = _hash_body(request.body)
        return request

    def before_response(response: dict[str, Any]) -> dict[str, Any]:
        response = scrub_response(response)
        body = response.get("body")
        if hashed and isinstance(body, dict) and "string" in body:
            body["string"] = _hash_body(body["string"])
        return response

    recorder = vcr.VCR(
        record_mode=mode.value,
        serializer="ctxconf-yaml",
        match_on=["method", "skeleton"],
        before_record_request=before_request,
        before_record_response=before_response,
        decode_compressed_response=True,
    )
    recorder.register_serializer("ctxconf-yaml", _CtxconfYamlSerializer)
    recorder.register_matcher("skeleton", skeleton_matcher)
    return recorder


def read_cassette(path: Path) -> dict[str, Any]:
    """A cassette document as written (``ctxconf`` header at the top); named errors otherwise."""
    try:
        # libyaml's loader when PyYAML was built with it (reading every cassette of a run is then
        # a small fraction of the run), with the project's size and alias limits.
        data = load_yaml_safe(read_input_text(path))
    except DocumentLimitError as exc:
        raise CassetteError(f"{path}: not a cassette: {exc}") from None
    except OSError as exc:
        raise CassetteError(f"{path}: cannot read cassette ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise CassetteError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        # One line: the problem and where (str(exc) spans several lines).
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CassetteError(f"{path}: not YAML{at}: {problem}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteError(f"{path}: not a vcrpy cassette (no 'interactions' list)")
    return data
