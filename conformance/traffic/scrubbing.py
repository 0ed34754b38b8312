"""What a cassette must not keep: secrets scrubbed before anything is written, content hashed on request.

:func:`scrub_request` and :func:`scrub_response` remove keys and tokens (headers, query strings,
bearer tokens in bodies); :func:`find_secrets` is what the committed-cassette test uses to prove
it. :func:`hash_body` replaces every content string by a short sha256 (``--content hashed``),
keeping structure, linkage and the providers' own vocabulary so the SDKs still parse the answers.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from conformance.traffic.skeleton import STRUCTURE_KEYS
from reference_impl.documents import JsonNumberTooLongError, dump_yaml, loads_json

if TYPE_CHECKING:
    from vcr.request import Request as VcrRequest

__all__ = [
    "REDACTED",
    "SECRET_HEADERS",
    "find_secrets",
    "hash_body",
    "scrub_request",
    "scrub_response",
]

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
# Per-request bookkeeping of the SDKs (retry counters, invocation ids: a new value each time).
_SDK_BOOKKEEPING: Final = ("x-stainless-", "amz-sdk-")
# What an SDK's user agent says of the recording process rather than the client: the host's
# operating system version (boto3: ``os/linux#6.1.0-18-amd64``; the system's name stays) and
# botocore's feature codes (``m/N,Z,E,b,e``, in a new order in every process). Either would make
# every re-recording rewrite every cassette.
_HOST_OS_VERSION: Final = re.compile(r"\b(os/[A-Za-z0-9_.-]+)#\S+")
_FEATURE_CODES: Final = re.compile(r"\s+m/[A-Za-z0-9,]+(?=\s|$)")
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
    """Remove secret headers and ``key=`` query parameters; redact key-shaped strings in the body;
    keep a user agent without what it says of the recording process (host OS version,
    botocore's feature codes)."""
    for name in list(request.headers):
        if name.lower() in SECRET_HEADERS or name.lower().startswith(_SDK_BOOKKEEPING):
            del request.headers[name]
        elif name.lower() == "user-agent":
            agent = _HOST_OS_VERSION.sub(r"\1", str(request.headers[name]))
            request.headers[name] = _FEATURE_CODES.sub("", agent)
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
_NOT_HASHED: Final = STRUCTURE_KEYS | _WIRE_ENUMS


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


def hash_body(body: object) -> object:
    """``body`` (JSON or an event stream, as recorded) with every content string hashed, as bytes;
    any other body as it is (JSON holding an integer too long to read: the hash of its text)."""
    if not isinstance(body, bytes | bytearray | str):
        return body
    text = body if isinstance(body, str) else bytes(body).decode("utf-8", "replace")
    if _SSE_FIELD.match(text):
        return _hash_event_stream(text).encode("utf-8")
    try:
        # NaN read as sent: the recording keeps the body as it went (its strings hashed)
        loaded = loads_json(
            body if isinstance(body, str) else bytes(body).decode("utf-8"), parse_constant=float
        )
    except JsonNumberTooLongError:  # its content strings cannot be found: never kept in clear
        return json.dumps(_unhashable(text)).encode("utf-8")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return body
    if isinstance(loaded, dict | list):
        return json.dumps(_hash_content(loaded, None)).encode("utf-8")
    return body


def _unhashable(text: str) -> dict[str, str]:
    """What is stored, with content hashed, for JSON whose content cannot be told apart: the
    hash of its whole text, and why."""
    return {"sha256": _hash_text(text), "not_stored": "JSON with an integer too long to read"}


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
            data = line[5:].strip()
            try:
                loaded = loads_json(data, parse_constant=float)  # NaN as sent, as above
            except JsonNumberTooLongError:
                loaded = _unhashable(data)
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
