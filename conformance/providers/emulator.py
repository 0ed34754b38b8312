"""The provider emulator: one ASGI app that answers like OpenAI, Anthropic, Gemini and Bedrock.

Every request is judged the way the provider would judge it, in this order (a body over the
input limit, ``$CTXCONF_MAX_INPUT_BYTES`` as it was when the app was made, as sent or once its
content-encoding is decoded, is refused first with a 413 ``request_too_large``, as the proxy
refuses it: on its ``content-length``, or as soon as what was read passes the limit, never held
whole):

1. the path names the endpoint and shape (:mod:`conformance.traffic.endpoints`); a gateway
   dialect comes from a ``/dialect/{name}/`` path prefix or the ``x-ctxconf-dialect`` header
   (:func:`read_request`, :func:`pick_profile`);
2. a body that is not JSON gets that provider's own kind of 400;
3. :func:`~conformance.providers.validation.validate_request` applies the rule catalog of the
   profile (C1, A1, R1, G1, B1 …) and a reject is returned in the provider's envelope (steps 2
   and 3 are :func:`request_verdict`, which the validating proxy applies too); a body that gives
   a key twice is judged in both readings, the last copy kept and the first
   (:mod:`.repeated_keys`), and a rejection of either says which in ``x-ctxconf-reading``;
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
also carry ``x-ctxconf-rule`` (and ``x-ctxconf-reading`` for a body that gives a key twice). Bad
input never produces a 500.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from conformance.errors import EmulatorConfigError, UnknownProfileError
from conformance.providers.catalog import (
    known_profiles,
    load_catalog,
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
from conformance.providers.repeated_keys import Reading, first_copies, judge_both_readings
from conformance.providers.validation import (
    BETA_HEADER,
    accept_verdict,
    betas_of_headers,
    error_headers_for,
    lint_request,
    malformed_body_verdict,
    overflow_verdict,
    validate_request,
)
from conformance.providers.verdict import Verdict
from conformance.traffic.content_coding import TOO_LARGE, Undecodable, decoded_body
from conformance.traffic.endpoints import (
    DIALECT_HEADER,
    PROFILE_HEADER,
    PROVENANCE_HEADER,
    READING_HEADER,
    RULE_HEADER,
    Endpoint,
    endpoint_for_path,
)
from conformance.traffic.skeleton import skeleton, skeleton_digest
from reference_impl.documents import (
    INPUT_LIMIT_ENV,
    DocumentLimitError,
    JsonNumberTooLongError,
    json_problem,
    loads_json,
    max_input_bytes,
)
from reference_impl.errors import CtxconfError, UnsupportedPartError
from reference_impl.shapes import ResponseMeta, get_shape
from reference_impl.tokens import counter_for
from reference_impl.transcript import Transcript

__all__ = [
    "STRUCTURE_RULES",
    "BodyTooLargeError",
    "Incoming",
    "create_app",
    "header_values",
    "input_limit_now",
    "pick_profile",
    "read_body",
    "read_request",
    "request_judgement",
    "request_verdict",
]

log = logging.getLogger(__name__)

_DEFAULT_MODEL: Final = "emulated-model"


@dataclass(frozen=True, slots=True)
class _Settings:
    profiles: tuple[str, ...]
    context_limit: int | None
    script: Script
    limit: int | None  # the input limit in bytes, read once when the app is made


def _profiles(profile: str | Sequence[str] | None) -> tuple[str, ...]:
    """Profile names from ``"a,b"`` or a sequence; each applies to its own shape and dialect."""
    if profile is None:
        return ()
    names = profile.split(",") if isinstance(profile, str) else list(profile)
    return known_profiles((n.strip() for n in names if n.strip()), EmulatorConfigError)


def input_limit_now(
    input_limit: int | Literal["environment"] | None, error: type[CtxconfError]
) -> int | None:
    """The input limit a server made now keeps (``None``: no limit): ``input_limit`` as given,
    or for ``"environment"`` ``$CTXCONF_MAX_INPUT_BYTES`` read once, here; a value that is not a
    size is ``error`` naming the variable (the commands check it first:
    ``conformance.commands._io.checked_input_limit``)."""
    if not isinstance(input_limit, str):
        return input_limit
    try:
        return max_input_bytes()
    except DocumentLimitError as exc:
        raise error(str(exc), where=INPUT_LIMIT_ENV) from None


def create_app(
    *,
    profile: str | Sequence[str] | None = None,
    context_limit: int | None = None,
    script: Script | EmulatorReply | None = None,
    input_limit: int | Literal["environment"] | None = "environment",
) -> Starlette:
    """The emulator app. ``profile`` names catalog profiles (comma-separated or a list); each
    applies to requests of its shape and dialect, the others use their shape's default profile.
    ``context_limit`` caps input tokens for every shape; ``script`` decides replies.
    ``input_limit`` caps a request body in bytes, as sent and once decoded (``None``: no cap);
    by default ``$CTXCONF_MAX_INPUT_BYTES`` as it is when the app is made (a value that is not
    a size: :class:`EmulatorConfigError`), never read again per request."""
    if context_limit is not None and context_limit < 1:
        raise EmulatorConfigError(
            f"context limit must be positive, got {context_limit}", where="context_limit"
        )
    limit = input_limit_now(input_limit, EmulatorConfigError)
    chosen: Script
    if script is None:
        chosen = DirectiveScript()
    elif isinstance(script, EmulatorReply):
        chosen = FixedScript(script)
    else:
        chosen = script
    settings = _Settings(_profiles(profile), context_limit, chosen, limit)

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


def _verdict_response(verdict: Verdict, profile: str, reading: Reading | None = None) -> Response:
    extra = {RULE_HEADER: verdict.rule} if verdict.rule else {}
    if reading is not None:
        extra[READING_HEADER] = reading
    extra.update(error_headers_for(verdict))
    return JSONResponse(
        verdict.error or {}, status_code=verdict.status, headers=_headers(profile, extra)
    )


# Rules about the body's JSON types rather than the conversation: they hold on count endpoints too.
STRUCTURE_RULES: Final = frozenset({"C0", "R0", "A12", "A12a", "G0", "B0"})


@dataclass(frozen=True, slots=True)
class Incoming:
    """What the emulator (and the proxy, judging as it does) reads of a request before judging:
    the dialect (the path's, else the header's), the JSON body or why it is not JSON, the model
    (the path's, else the body's) and the profile the header asks for."""

    dialect: str | None
    body: Any
    bad_json: str | None
    model: str | None
    asked: str | None
    unreadable: str | None = None
    """Why JSON the emulator cannot read (an integer longer than Python converts) was not read:
    not a verdict, as a provider's parser may read it."""
    betas: frozenset[str] = frozenset()
    """The betas the ``anthropic-beta`` header names (``validation.betas_of_headers``)."""
    first_copies: Any = None
    """The body read keeping the first copy of a key given twice (``body`` keeps the last, as
    Python's parser does); ``None`` when no key repeats (:mod:`.repeated_keys`)."""


_TOO_DEEP: Final = "JSON nested deeper than the emulator's parser can walk"


def _json_problem_where(exc: json.JSONDecodeError) -> str:
    """``json_problem`` of a body, its line said too when the body has several lines
    (``line 4: Expecting value at column 37``): a column alone does not say where in a
    pretty-printed body. A body of one line (what the SDKs send) is worded as before."""
    problem = json_problem(exc)
    return f"line {exc.lineno}: {problem}" if "\n" in exc.doc else problem


def read_request(endpoint: Endpoint, raw: bytes, headers: Mapping[str, str]) -> Incoming:
    """The :class:`Incoming` of one request to ``endpoint``."""
    body: Any = None
    bad_json: str | None = None
    unreadable: str | None = None
    first: Any = None
    try:
        body = loads_json(raw)
        first = first_copies(raw)
    except JsonNumberTooLongError as exc:
        unreadable = _json_problem_where(exc)
    except RecursionError:  # the parser recurses once per level; a provider's may go deeper
        unreadable = _TOO_DEEP
    except json.JSONDecodeError as exc:  # worded as every reader words bad JSON
        bad_json = f"invalid JSON ({_json_problem_where(exc)})"
    except UnicodeDecodeError as exc:  # worded as every reader words it
        bad_json = f"invalid JSON (not UTF-8 text, byte {exc.start})"
    model = endpoint.model
    if model is None and isinstance(body, dict) and isinstance(body.get("model"), str):
        model = body["model"]
    dialect = endpoint.dialect or headers.get(DIALECT_HEADER) or None
    betas = betas_of_headers(header_values(headers, BETA_HEADER))
    asked = headers.get(PROFILE_HEADER)
    return Incoming(dialect, body, bad_json, model, asked, unreadable, betas, first)


def header_values(headers: Mapping[str, str], name: str) -> list[str]:
    """Every value of header ``name`` (lower case): repeated lines mean what one comma-separated
    line does (a server's headers keep them all, ``getlist``; a plain mapping is read by name
    in any case)."""
    getlist = getattr(headers, "getlist", None)
    if callable(getlist):
        return [str(value) for value in getlist(name)]
    return [value for key, value in headers.items() if key.lower() == name]


def pick_profile(endpoint: Endpoint, incoming: Incoming, configured: Sequence[str]) -> str:
    """The header's profile, else the first ``configured`` one of this shape/dialect, else the one
    the catalog gives the request's model (a Claude model on Bedrock is judged by
    ``bedrock-claude``, as ``ctxconf audit`` judges it), else the shape's default.
    ``UnknownProfileError`` when the header's profile or the dialect is unknown."""
    shape, dialect = endpoint.shape, incoming.dialect
    if incoming.asked:
        return resolve_profile(shape, dialect, incoming.asked).id
    for name in configured:
        with contextlib.suppress(UnknownProfileError):
            return resolve_profile(shape, dialect, name).id
    return profile_for_model(shape, dialect, incoming.model).id


def request_verdict(endpoint: Endpoint, incoming: Incoming, profile: str) -> Verdict:
    """The emulator's verdict before it answers: a body that is not JSON, then the profile's
    rules (count endpoints: the structure rules only), in both readings of a body that gives a
    key twice; ``accept`` when the request passes."""
    return request_judgement(endpoint, incoming, profile)[0]


def request_judgement(
    endpoint: Endpoint, incoming: Incoming, profile: str
) -> tuple[Verdict, Reading | None]:
    """:func:`request_verdict`, and the reading it refused when the body gives a key twice
    (``None`` when no key repeats or the request passes): the last copy kept (the body as
    Python reads it) is judged first, then the first copy kept."""

    def judge(body: Any) -> Verdict:
        return _verdict(endpoint, incoming, profile, body)

    return judge_both_readings(judge, incoming.body, incoming.first_copies)


def _verdict(endpoint: Endpoint, incoming: Incoming, profile: str, body: Any) -> Verdict:
    shape, dialect = endpoint.shape, incoming.dialect
    if incoming.bad_json is not None:
        return malformed_body_verdict(
            shape, dialect=dialect, profile=profile, detail=incoming.bad_json
        )
    betas = incoming.betas
    if endpoint.kind == "generate" or not isinstance(body, dict):
        return validate_request(body, shape, dialect=dialect, profile=profile, betas=betas)
    found = lint_request(
        body, shape, dialect=dialect, profile=profile, endpoint="count", betas=betas
    )
    structural = [v for v in found if not v.accepted and v.rule in STRUCTURE_RULES]
    return structural[0] if structural else accept_verdict(load_catalog().profiles[profile])


async def _handle(request: Request, settings: _Settings) -> Response:
    endpoint = endpoint_for_path(request.url.path)
    if endpoint is None:
        return _own_error(None, 404, f"Unknown request URL: {request.method} {request.url.path}.")
    try:
        return await _judge(request, endpoint, settings)
    except RecursionError:  # parsed, but nested deeper than the validators walk: the client's
        return _own_error(
            endpoint.shape,
            400,
            f"The emulator cannot read this body: {_TOO_DEEP}. A provider's parser may read it; "
            "no verdict is given.",
        )
    except ClientDisconnect:
        # The client left before its body was whole: no failure of ours, and no one to answer.
        log.debug(
            "the client disconnected before sending the whole body of %s %s; not answered",
            request.method,
            request.url.path,
        )
        return _own_error(
            endpoint.shape, 400, "The client disconnected before sending the whole request body."
        )
    except Exception:
        # A bug in the emulator or the validators, not the client's fault: say so, and log it.
        log.exception("emulator failed on %s %s", request.method, request.url.path)
        return _own_error(
            endpoint.shape, 500, "The emulator failed on this request.", kind="api_error"
        )


async def _judge(request: Request, endpoint: Endpoint, settings: _Settings) -> Response:
    shape = endpoint.shape
    # One input limit for the body as sent and as decoded, refused as the proxy refuses it.
    limit = settings.limit
    try:
        raw = await read_body(request, limit)
    except BodyTooLargeError as big:
        status, name = TOO_LARGE
        return _own_error(shape, status, f"{name}: {big.reason('emulator')}")
    # A compressed body is read decoded, as the validating proxy judges it (same decoder, same
    # limits, same named refusals), so the proxy's answer and ours agree byte for byte.
    encoding = ", ".join(header_values(request.headers, "content-encoding"))
    if encoding.strip().lower() not in ("", "identity"):
        decoded = decoded_body(raw, encoding, limit)
        if isinstance(decoded, Undecodable):
            return _undecodable(shape, decoded)
        raw = decoded
    incoming = read_request(endpoint, raw, request.headers)
    dialect, body, model = incoming.dialect, incoming.body, incoming.model
    try:
        profile = pick_profile(endpoint, incoming, settings.profiles)
    except UnknownProfileError as exc:
        header = PROFILE_HEADER if incoming.asked else DIALECT_HEADER
        return _own_error(shape, 400, f"{header}: {exc.message}")
    if request.method != "POST":
        return _own_error(
            shape, 405, f"Method {request.method} is not allowed here; use POST.", profile
        )
    if incoming.unreadable is not None:  # the emulator's own limit, said as its own error
        return _own_error(
            shape,
            400,
            f"The emulator cannot read this body: {incoming.unreadable}. "
            "A provider's parser may read it; no verdict is given.",
            profile,
        )
    verdict, reading = request_judgement(endpoint, incoming, profile)
    if not verdict.accepted:
        return _verdict_response(verdict, profile, reading)
    adapter = get_shape(shape)
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


class BodyTooLargeError(Exception):
    """A request body over the input limit, found before it was read whole (:func:`read_body`):
    ``size`` bytes, as its ``content-length`` declared them (``declared``) or as many as were
    read when the limit was passed (the body is at least that long)."""

    def __init__(self, size: int, limit: int, *, declared: bool) -> None:
        super().__init__(size, limit, declared)
        self.size = size
        self.limit = limit
        self.declared = declared

    def reason(self, server: str) -> str:
        """Why ``server`` (``emulator``, ``proxy``) refused the body, the limit and size said."""
        size = f"{self.size} bytes" if self.declared else f"at least {self.size} bytes"
        return (
            f"the request body ({size}) is over the {server}'s input limit of {self.limit} "
            f"bytes (set {INPUT_LIMIT_ENV} to raise it)"
        )


async def read_body(request: Request, limit: int | None) -> bytes:
    """The request body, refused (:class:`BodyTooLargeError`) as soon as it is over ``limit``
    (``None``: no limit): at once when its ``content-length`` says so, else (chunked, or no
    length given) when what was read passes it; never held whole beyond it. The emulator and
    the proxy read every body through it."""
    if limit is None:
        return await request.body()
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLargeError(int(declared), limit, declared=True)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLargeError(size, limit, declared=False)
        chunks.append(chunk)
    return b"".join(chunks)


def _undecodable(shape: str, undecodable: Undecodable) -> Response:
    """A body whose content-encoding the emulator cannot undo, refused by name (the status and
    name the proxy gives it in enforce mode: :attr:`.Undecodable.refusal`)."""
    status, name = undecodable.refusal
    return _own_error(
        shape,
        status,
        f"{name}: the request body cannot be read ({undecodable.reason}); send it "
        "uncompressed, gzip or deflate, within the input limit (CTXCONF_MAX_INPUT_BYTES)",
    )


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
