"""The provider emulator: one ASGI app that answers like OpenAI, Anthropic, Gemini and Bedrock.

Every request is judged the way the provider would judge it, in this order:

1. the path names the endpoint and shape (:mod:`.emulator_routes`); a gateway dialect comes from a
   ``/dialect/{name}/`` path prefix or the ``x-ctxconf-dialect`` header;
2. a body that is not JSON gets that provider's own kind of 400;
3. :func:`~conformance.providers.validation.validate_request` applies the rule catalog of the
   profile (C1, A1, R1, G1, B1 …) and a reject is returned in the provider's envelope;
4. the input is counted with the reference counter and the context limit is enforced with the
   provider's overflow error (C10, A18, G8, B9);
5. a valid request gets a scripted, deterministic reply rendered by the shape
   (:mod:`.emulator_responses`); with ``stream: true`` (OpenAI Chat, Responses, Anthropic) the
   same reply arrives as the provider's server-sent event stream (:mod:`.emulator_stream`).

Count endpoints (Anthropic ``count_tokens``, Responses ``input_tokens``) apply only the
structure rules (wrong JSON types: C0, R0, A12/A12a, G0, B0), then parse and count: whether the
providers apply the pairing rules there is not shown by any evidence (provider-rules.md, notes to
section 3), so the emulator does not invent those rejections.

Every answer carries ``x-ctxconf-provenance: emulated`` and ``x-ctxconf-profile``; rejections
also carry ``x-ctxconf-rule``. Bad input never produces a 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from conformance.errors import EmulatorConfigError, UnknownProfileError
from conformance.providers.catalog import (
    known_profiles,
    profile_for_model,
    resolve_profile,
)
from conformance.providers.emulator_responses import (
    DirectiveScript,
    EmulatorReply,
    FixedScript,
    Script,
    count_body,
    error_envelope,
    reply_message,
    response_id,
)
from conformance.providers.emulator_stream import sse_events, wants_stream
from conformance.providers.validation import (
    error_headers_for,
    lint_request,
    malformed_body_verdict,
    overflow_verdict,
    validate_request,
)
from conformance.providers.verdict import Verdict
from conformance.traffic.endpoints import (
    DIALECT_HEADER,
    PROFILE_HEADER,
    PROVENANCE_HEADER,
    RULE_HEADER,
    Endpoint,
    endpoint_for_path,
)
from conformance.traffic.skeleton import skeleton, skeleton_digest
from reference_impl.errors import CtxconfError, UnsupportedPartError
from reference_impl.shapes import ResponseMeta, get_shape
from reference_impl.tokens import counter_for
from reference_impl.transcript import Transcript

__all__ = ["STRUCTURE_RULES", "create_app"]

log = logging.getLogger(__name__)

_DEFAULT_MODEL: Final = "emulated-model"


@dataclass(frozen=True, slots=True)
class _Settings:
    profiles: tuple[str, ...]
    context_limit: int | None
    script: Script


class _Reject(Exception):  # noqa: N818 - control flow inside one request, never escapes
    def __init__(self, response: Response) -> None:
        self.response = response


def _profiles(profile: str | Sequence[str] | None) -> tuple[str, ...]:
    """Profile names from ``"a,b"`` or a sequence; each applies to its own shape and dialect."""
    if profile is None:
        return ()
    names = profile.split(",") if isinstance(profile, str) else list(profile)
    return known_profiles((n.strip() for n in names if n.strip()), EmulatorConfigError)


def create_app(
    *,
    profile: str | Sequence[str] | None = None,
    context_limit: int | None = None,
    script: Script | EmulatorReply | None = None,
) -> Starlette:
    """The emulator app. ``profile`` names catalog profiles (comma-separated or a list); each
    applies to requests of its shape and dialect, the others use their shape's default profile.
    ``context_limit`` caps input tokens for every shape; ``script`` decides replies."""
    if context_limit is not None and context_limit < 1:
        raise EmulatorConfigError(
            f"context limit must be positive, got {context_limit}", where="context_limit"
        )
    chosen: Script
    if script is None:
        chosen = DirectiveScript()
    elif isinstance(script, EmulatorReply):
        chosen = FixedScript(script)
    else:
        chosen = script
    settings = _Settings(_profiles(profile), context_limit, chosen)

    async def handle(request: Request) -> Response:
        return await _handle(request, settings)

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[Route("/{path:path}", handle, methods=methods)])


def _headers(profile: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    headers = {PROVENANCE_HEADER: "emulated", PROFILE_HEADER: profile or "none"}
    headers.update(extra or {})
    return headers


def _own_error(
    shape: str | None,
    status: int,
    message: str,
    profile: str | None = None,
    kind: str = "invalid_request_error",
) -> Response:
    body, extra = error_envelope(shape, status, message, kind=kind)
    return JSONResponse(body, status_code=status, headers=_headers(profile, extra))


def _verdict_response(verdict: Verdict, profile: str) -> Response:
    extra = {RULE_HEADER: verdict.rule} if verdict.rule else {}
    extra.update(error_headers_for(verdict))
    return JSONResponse(
        verdict.error or {}, status_code=verdict.status, headers=_headers(profile, extra)
    )


def _matching_profile(shape: str, dialect: str | None, name: str) -> str | None:
    try:
        return resolve_profile(shape, dialect, name).id
    except UnknownProfileError:
        return None


# Rules about the body's JSON types rather than the conversation: they hold on count endpoints too.
STRUCTURE_RULES: Final = frozenset({"C0", "R0", "A12", "A12a", "G0", "B0"})


def _pick_profile(
    endpoint: Endpoint,
    dialect: str | None,
    asked: str | None,
    settings: _Settings,
    model: str | None = None,
) -> str:
    """The header's profile, else the first configured one of this shape/dialect, else the one the
    catalog gives the request's model (a Claude model on Bedrock is judged by ``bedrock-claude``,
    as ``ctxconf audit`` judges it), else the shape's default."""
    shape = endpoint.shape
    if asked:
        try:
            return resolve_profile(shape, dialect, asked).id
        except UnknownProfileError as exc:
            raise _Reject(_own_error(shape, 400, f"{PROFILE_HEADER}: {exc.message}")) from None
    for name in settings.profiles:
        found = _matching_profile(shape, dialect, name)
        if found is not None:
            return found
    try:
        return profile_for_model(shape, dialect, model).id
    except UnknownProfileError as exc:
        raise _Reject(_own_error(shape, 400, f"{DIALECT_HEADER}: {exc.message}")) from None


async def _handle(request: Request, settings: _Settings) -> Response:
    endpoint = endpoint_for_path(request.url.path)
    if endpoint is None:
        return _own_error(None, 404, f"Unknown request URL: {request.method} {request.url.path}.")
    try:
        return await _judge(request, endpoint, settings)
    except _Reject as reject:
        return reject.response
    except Exception:
        # A bug in the emulator or the validators, not the client's fault: say so, and log it.
        log.exception("emulator failed on %s %s", request.method, request.url.path)
        return _own_error(
            endpoint.shape, 500, "The emulator failed on this request.", kind="api_error"
        )


async def _judge(request: Request, endpoint: Endpoint, settings: _Settings) -> Response:
    dialect = endpoint.dialect or request.headers.get(DIALECT_HEADER) or None
    shape = endpoint.shape
    raw = await request.body()
    body: Any = None
    bad_json: str | None = None
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        bad_json = f"invalid JSON ({exc})"
    model = None
    if endpoint.model is not None:
        model = endpoint.model
    elif isinstance(body, dict) and isinstance(body.get("model"), str):
        model = body["model"]
    asked = request.headers.get(PROFILE_HEADER)
    profile = _pick_profile(endpoint, dialect, asked, settings, model)
    if request.method != "POST":
        return _own_error(
            shape, 405, f"Method {request.method} is not allowed here; use POST.", profile
        )
    if bad_json is not None:
        verdict = malformed_body_verdict(shape, dialect=dialect, profile=profile, detail=bad_json)
        return _verdict_response(verdict, profile)
    adapter = get_shape(shape)
    if endpoint.kind == "generate" or not isinstance(body, dict):
        verdict = validate_request(body, shape, dialect=dialect, profile=profile)
        if not verdict.accepted:
            return _verdict_response(verdict, profile)
    else:
        for verdict in lint_request(
            body, shape, dialect=dialect, profile=profile, endpoint="count"
        ):
            if not verdict.accepted and verdict.rule in STRUCTURE_RULES:
                return _verdict_response(verdict, profile)
    if not isinstance(body, dict):  # pragma: no cover - the structure rules reject non-objects
        return _own_error(shape, 400, "The request body must be a JSON object.", profile)
    try:
        transcript = adapter.parse_request(body)
    except CtxconfError as exc:
        where = f"{exc.where}: " if exc.where else ""
        return _own_error(shape, 400, f"{where}{exc.message}", profile)
    counter = counter_for(shape, model)
    input_tokens = counter.count(transcript).total
    if endpoint.kind == "count":
        return JSONResponse(count_body(shape, input_tokens), headers=_headers(profile))
    if settings.context_limit is not None:
        overflow = overflow_verdict(
            shape,
            dialect=dialect,
            profile=profile,
            input_tokens=input_tokens,
            context_limit=settings.context_limit,
            max_tokens=_max_tokens(body),
        )
        if not overflow.accepted:
            return _verdict_response(overflow, profile)
    seed = skeleton_digest(skeleton(body, shape=shape, dialect=dialect, model=model))
    call = _Call(shape, dialect, model, profile, seed, input_tokens)
    return _reply(transcript, call, settings.script, body)


def _max_tokens(body: dict[str, Any]) -> int | None:
    """The completion budget that overflow rules counting it (C10a, A18a) add to the input."""
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


@dataclass(frozen=True, slots=True)
class _Call:
    """What the reply needs to know about the request it answers."""

    shape: str
    dialect: str | None
    model: str | None
    profile: str
    seed: str
    input_tokens: int


def _reply(
    transcript: Transcript, call: _Call, script: Script, request: dict[str, Any]
) -> Response:
    shape, dialect, model, seed = call.shape, call.dialect, call.model, call.seed
    adapter = get_shape(shape)
    reply = script(transcript, shape)
    message = reply_message(reply, shape=shape, dialect=dialect, seed=seed)
    counter = counter_for(shape, model)
    meta = ResponseMeta(
        model=model or _DEFAULT_MODEL,
        response_id=response_id(shape, seed),
        input_tokens=call.input_tokens,
        output_tokens=counter.count_message(message),
        stop_reason=None,  # each shape names its own stop reason (tool_calls, tool_use, STOP …)
    )
    try:
        body = adapter.render_response(message, meta)
    except UnsupportedPartError:
        # A shape that cannot carry the reasoning artifact answers without it (never a 500).
        message = reply_message(reply, shape=shape, dialect=dialect, seed=seed, reasoning=False)
        body = adapter.render_response(message, meta)
    if wants_stream(shape, request):
        return _streamed(list(sse_events(shape, body, request)), call.profile)
    return JSONResponse(body, headers=_headers(call.profile))


def _streamed(frames: list[bytes], profile: str) -> StreamingResponse:
    """An event stream of ``frames``, each sent as it is produced (uvicorn flushes per frame)."""

    async def produce() -> AsyncIterator[bytes]:
        for frame in frames:
            yield frame

    headers = {**_headers(profile), "cache-control": "no-cache"}
    return StreamingResponse(produce(), media_type="text/event-stream", headers=headers)
