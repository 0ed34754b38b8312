"""Error bodies exactly as each provider (or gateway) sends them.

One function per envelope family, chosen by the profile (``envelope`` in ``rules.yaml``) or by the
rule when a gateway answers some errors from another layer (Ollama's native API, OL1).

* ``openai``: ``{"error": {"message", "type", "param", "code"}}`` (recorded).
* ``anthropic``: ``{"type": "error", "error": {"type", "message"}, "request_id": "req_..."}`` (recorded).
* ``gemini``: ``{"error": {"code": 400, "message", "status": "INVALID_ARGUMENT"}}`` (recorded).
* ``bedrock``: ``{"message": ...}``; the exception name travels in the ``x-amzn-ErrorType``
  header, which is how botocore raises ``ValidationException`` (recorded body; header inferred).
* gateways: ``mistral``/``vllm`` flat objects, ``ollama-native`` ``{"error": "text"}``,
  ``openrouter`` and ``litellm`` wrappers around the upstream OpenAI error, ``xai``, ``llamacpp``,
  ``perplexity``, ``gemini-openai`` (Gemini's envelope behind the OpenAI-compatible path).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "RenderedError",
    "bedrock_error_name",
    "error_headers",
    "gemini_status_name",
    "render_error",
]

# Gemini's and Bedrock's name of an error by its HTTP status, one home for each (the rules'
# errors and the emulator's and proxy's own): a client error other than those named is the
# request's fault (INVALID_ARGUMENT, ValidationException, the recorded 400 envelopes of
# provider-rules.md), a 5xx is the server's.
_GRPC_STATUS: Final = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
_BEDROCK_EXCEPTION: Final = {
    400: "ValidationException",
    404: "ResourceNotFoundException",
    429: "ThrottlingException",
}


def gemini_status_name(status: int) -> str:
    """The google.rpc status name of Gemini's envelope for HTTP ``status``: ``NOT_FOUND`` (404),
    ``RESOURCE_EXHAUSTED`` (429), ``INVALID_ARGUMENT`` for any other 4xx (400, 413, 415 ...),
    ``INTERNAL`` for a server error."""
    if status in _GRPC_STATUS:
        return _GRPC_STATUS[status]
    return "INTERNAL" if status >= 500 else "INVALID_ARGUMENT"


def bedrock_error_name(status: int) -> str:
    """The exception Bedrock names in ``x-amzn-ErrorType`` for HTTP ``status``:
    ``ResourceNotFoundException`` (404), ``ThrottlingException`` (429), ``ValidationException``
    for any other 4xx (400, 413, 415 ...), ``InternalServerException`` for a server error."""
    if status in _BEDROCK_EXCEPTION:
        return _BEDROCK_EXCEPTION[status]
    return "InternalServerException" if status >= 500 else "ValidationException"


# The rules' Bedrock errors are all 400s (rules.yaml), named as botocore reads them.
_BEDROCK_ERROR_TYPE: Final = (
    f"{bedrock_error_name(400)}:http://internal.amazon.com/coral/com.amazon.bedrock/"
)


@dataclass(frozen=True, slots=True)
class RenderedError:
    """The pieces a renderer needs: the rule's filled-in texts and its HTTP status."""

    status: int
    message: str
    type: str | None
    code: str | int | None
    param: str | None
    seed: str  # stable text used to derive deterministic request ids


def _request_id(seed: str, prefix: str) -> str:
    # Deterministic, so the same request gives a byte-identical error body (emulator replays).
    return prefix + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:24]


def _openai(e: RenderedError) -> dict[str, Any]:
    return {"error": {"message": e.message, "type": e.type, "param": e.param, "code": e.code}}


def _anthropic(e: RenderedError) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": e.type or "invalid_request_error", "message": e.message},
        "request_id": _request_id(e.seed, "req_emulated_"),
    }


def _gemini(e: RenderedError) -> dict[str, Any]:
    status = e.type or gemini_status_name(e.status)
    return {"error": {"code": e.status, "message": e.message, "status": status}}


def _bedrock(e: RenderedError) -> dict[str, Any]:
    return {"message": e.message}


def _flat(e: RenderedError) -> dict[str, Any]:
    # Mistral and vLLM answer with a flat object rather than OpenAI's nested "error".
    return {
        "object": "error",
        "message": e.message,
        "type": e.type,
        "param": e.param,
        "code": e.code,
    }


def _ollama_native(e: RenderedError) -> dict[str, Any]:
    return {"error": e.message}


def _openrouter(e: RenderedError) -> dict[str, Any]:
    if e.code == e.status and e.type is None:
        # OpenRouter's own errors (OR1) carry the numeric status as code and no wrapper.
        return {"error": {"message": e.message, "code": e.status}}
    raw = json.dumps(_openai(e), separators=(",", ":"))
    return {
        "error": {
            "message": "Provider returned error",
            "code": e.status,
            "metadata": {"raw": raw, "provider_name": "OpenAI"},
        },
        "user_id": "user_emulated",
    }


def _litellm(e: RenderedError) -> dict[str, Any]:
    return {
        "error": {
            "message": f"litellm.BadRequestError: OpenAIException - {e.message}",
            "type": e.type,
            "param": e.param,
            "code": str(e.status),
        }
    }


def _xai(e: RenderedError) -> dict[str, Any]:
    return {"code": e.code or "Client specified an invalid argument", "error": e.message}


def _llamacpp(e: RenderedError) -> dict[str, Any]:
    return {"error": {"code": e.status, "message": e.message, "type": e.type}}


def _perplexity(e: RenderedError) -> dict[str, Any]:
    return {"error": {"message": e.message, "type": e.type, "code": e.status}}


_RENDERERS: Final[Mapping[str, Callable[[RenderedError], dict[str, Any]]]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "gemini-openai": _gemini,
    "bedrock": _bedrock,
    "mistral": _flat,
    "vllm": _flat,
    "ollama-native": _ollama_native,
    "openrouter": _openrouter,
    "litellm": _litellm,
    "xai": _xai,
    "llamacpp": _llamacpp,
    "perplexity": _perplexity,
}


def render_error(envelope: str, error: RenderedError) -> dict[str, Any]:
    """The error body for one envelope family (``KeyError`` never escapes: the schema pins names)."""
    return _RENDERERS[envelope](error)


def error_headers(envelope: str, body: Mapping[str, Any]) -> dict[str, str]:
    """Response headers that carry part of the error (Bedrock's exception name, request ids)."""
    if envelope == "bedrock":
        return {"x-amzn-ErrorType": _BEDROCK_ERROR_TYPE}
    if envelope == "anthropic" and isinstance(body.get("request_id"), str):
        return {"request-id": str(body["request_id"])}
    return {}
