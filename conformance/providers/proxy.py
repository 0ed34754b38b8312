"""The validating proxy: provider endpoints in front of an upstream, judged by our rule catalog.

``create_proxy_app(upstream, mode=...)`` is an ASGI app that speaks every endpoint the emulator
speaks (:mod:`conformance.traffic.endpoints`) and forwards to ``upstream`` (a provider, a gateway, the
emulator). Each request to a provider endpoint is judged the way the emulator judges it (the
profile from ``x-ctxconf-profile``, a ``--profile`` of that shape, else the request's model):

* ``enforce``: a request our rules reject is answered locally with the error that provider
  sends (the envelope, status and headers the emulator renders, byte for byte) and never
  reaches the upstream; the rest is forwarded;
* ``observe``: everything is forwarded, and each judged exchange is written as a scrubbed
  cassette with our verdict beside the provider's answer (:mod:`.proxy_cassettes`), so
  ``ctxconf diff ours:DIR DIR`` lists every disagreement.

Forwarding keeps the method, path, query and body; request headers go on except the hop-by-hop
ones (RFC 9110 7.6.1), ``host`` and ``content-length`` (the client library sets them again);
auth headers are forwarded and never written. The answer's bytes are streamed back as they
arrive (``stream: true`` stays a stream in both modes), its headers minus hop-by-hop ones, plus
``x-ctxconf-proxy`` saying what the proxy did (:data:`PROXY_HEADER`). Requests to paths no
provider endpoint matches, and non-POST requests, are forwarded unjudged in both modes, with
``x-ctxconf-proxy: forwarded; unjudged=...`` on the answer. A body holding an integer longer
than Python reads is judged with it capped (:func:`~reference_impl.documents.long_integers_capped`);
in enforce mode a profile header naming no profile and JSON nested too deep to judge are refused
with named 400s, never forwarded unjudged. A compressed body is judged decoded
(:mod:`conformance.traffic.content_coding`): its ``content-encoding`` lines are one list (RFC
9110 5.3), whose codings are undone last first (8.4), each within the input limit; in enforce
mode one the proxy cannot decode is refused (``unsupported_content_encoding`` and, past
:data:`~conformance.traffic.content_coding.MAX_CONTENT_CODINGS` codings,
``too_many_content_encodings``, 415; ``corrupt_content_encoding``, 400).

Failures are the proxy's, named, never a traceback: an upstream that cannot be reached or breaks
the protocol is a provider-shaped 502 (``upstream_unreachable``, ``upstream_protocol_error``),
a timeout a 504 (``upstream_timeout``), a body over the input limit
(``$CTXCONF_MAX_INPUT_BYTES``, 32 MiB by default; in enforce mode also one over it once its
content-encoding is decoded) a 413 (``request_too_large``), and in enforce mode a profile header
naming no profile or JSON nested too deep to judge a 400 (``unknown_profile``,
``body_too_deep``). Each says so in ``x-ctxconf-proxy-error`` and carries
``x-ctxconf-provenance: proxy``: it is not the provider's.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
import re
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from conformance.errors import ProxyConfigError, UnknownProfileError, UpstreamBrokeError
from conformance.providers.catalog import known_profiles
from conformance.providers.emulator import (
    BodyTooLargeError,
    header_values,
    input_limit_now,
    pick_profile,
    read_body,
    read_request,
    request_judgement,
)
from conformance.providers.emulator_responses import error_envelope
from conformance.providers.proxy_cassettes import ExchangeRecord, ObserveRecorder
from conformance.providers.repeated_keys import Reading
from conformance.providers.validation import error_headers_for
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
from reference_impl.documents import long_integers_capped

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "PROXY_ERROR_HEADER",
    "PROXY_HEADER",
    "Judged",
    "ProxyConfigError",
    "ProxyMode",
    "UpstreamBrokeError",
    "create_proxy_app",
    "judge",
]

log = logging.getLogger(__name__)

ProxyMode: TypeAlias = Literal["enforce", "observe"]
PROXY_HEADER: Final = "x-ctxconf-proxy"
PROXY_ERROR_HEADER: Final = "x-ctxconf-proxy-error"
DEFAULT_TIMEOUT_S: Final = 600.0  # the openai and anthropic SDKs' own default
_CONNECT_TIMEOUT_S: Final = 10.0

# RFC 9110 7.6.1 (and the fields that name the connection): never forwarded in either direction.
_HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Set again by the HTTP library for the new connection (``host`` names the upstream).
_RESET_ON_REQUEST: Final = frozenset({"host", "content-length"})


@dataclass(frozen=True, slots=True)
class Judged:
    """Our verdict on one request (``provenance="emulated"``: computed by the validators now),
    or why the request was not judged (``verdict`` is then ``None``)."""

    verdict: Verdict | None
    endpoint: Endpoint | None
    profile: str | None = None
    model: str | None = None
    unjudged: str | None = None
    reading: Reading | None = None
    """For a body that gives a key twice, the reading refused (:mod:`.repeated_keys`)."""
    detail: str | None = None
    """Why, in words, when the reason is the client's (``unknown-profile``: the header's error)."""
    undecodable: Undecodable | None = None
    """``content-encoding``: why the body could not be decoded."""


@dataclass(frozen=True, slots=True)
class _Settings:
    upstream: str
    mode: ProxyMode
    profiles: tuple[str, ...]
    timeout: float
    limit: int | None
    recorder: ObserveRecorder | None


def _checked_upstream(upstream: str) -> str:
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProxyConfigError(
            f"upstream {upstream!r} is not an http(s) URL with a host "
            "(for example https://api.openai.com or http://127.0.0.1:8080)",
            where="upstream",
        )
    if parts.query or parts.fragment:
        raise ProxyConfigError(
            f"upstream {upstream!r} has a query or fragment; give the root URL only",
            where="upstream",
        )
    return upstream.rstrip("/")


def create_proxy_app(
    upstream: str,
    *,
    mode: ProxyMode = "enforce",
    profiles: Sequence[str] = (),
    record_dir: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    input_limit: int | Literal["environment"] | None = "environment",
) -> Starlette:
    """The proxy app. ``record_dir`` (observe mode only) receives one cassette per judged
    exchange. Run it with lifespan events on (``ctxconf proxy`` does): the upstream client is
    opened at start-up and closed at shutdown. ``input_limit`` caps a request body in bytes, as
    sent and once decoded (``None``: no cap); by default ``$CTXCONF_MAX_INPUT_BYTES`` as it is
    when the app is made (a value that is not a size: :class:`ProxyConfigError`), never read
    again per request."""
    if mode not in ("enforce", "observe"):
        raise ProxyConfigError(f"mode {mode!r} is not enforce or observe", where="mode")
    if record_dir is not None and mode != "observe":
        raise ProxyConfigError("a record folder applies to observe mode only", where="record_dir")
    if timeout <= 0:
        raise ProxyConfigError(f"timeout must be positive, got {timeout}", where="timeout")
    limit = input_limit_now(input_limit, ProxyConfigError)
    root = _checked_upstream(upstream)
    if record_dir is not None:
        # Made now: a folder that cannot be made (a path under a file, no permission) would
        # otherwise be a warning per exchange, with the proxy forwarding and recording nothing.
        try:
            Path(record_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ProxyConfigError(
                f"cannot create {record_dir} ({exc.strerror or exc}); observe mode records "
                "every exchange there",
                where="record_dir",
            ) from None
    recorder = ObserveRecorder(record_dir, upstream=root) if record_dir is not None else None
    settings = _Settings(
        root, mode, known_profiles(profiles, ProxyConfigError), timeout, limit, recorder
    )
    clients: list[httpx.AsyncClient] = []

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, _CONNECT_TIMEOUT_S)),
            follow_redirects=False,
        )
        client.headers = httpx.Headers()  # forward the client's headers only, add none
        clients.append(client)
        try:
            yield
        finally:
            clients.remove(client)
            await client.aclose()

    async def handle(request: Request) -> Response:
        if not clients:  # pragma: no cover - only when run without lifespan events
            return _proxy_error(None, 500, "proxy_not_started", "run the app with lifespan on")
        return await _handle(request, settings, clients[0])

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", handle, methods=methods)], lifespan=lifespan)


# ------------------------------------------------------------------------------------ judging


def judge(
    method: str,
    path: str,
    raw: bytes,
    headers: Mapping[str, str],
    *,
    profiles: Sequence[str] = (),
    limit: int | Literal["environment"] | None = "environment",
) -> Judged:
    """Our verdict on one request, as the emulator would give it before answering (JSON, then
    the profile's rules; count endpoints apply the structure rules only). ``limit`` is the input
    limit a compressed body is decoded within (the proxy's, read at its start-up; by default
    ``$CTXCONF_MAX_INPUT_BYTES`` now)."""
    endpoint = endpoint_for_path(path)
    if endpoint is None:
        return Judged(None, None, unjudged="no-provider-endpoint")
    if method != "POST":
        return Judged(None, endpoint, unjudged=f"method-{method.lower()}")
    # repeated lines are one list (RFC 9110 5.3): a server reading them all decodes every coding
    encoding = ", ".join(header_values(headers, "content-encoding"))
    if encoding.strip().lower() not in ("", "identity"):
        # The provider reads the body decoded (gzip, deflate): so is it judged, within the limit
        decoded = decoded_body(raw, encoding, input_limit_now(limit, ProxyConfigError))
        if isinstance(decoded, Undecodable):  # a coding we do not read, corrupt, over the limit
            return Judged(None, endpoint, unjudged="content-encoding", undecodable=decoded)
        raw = decoded
    incoming = read_request(endpoint, raw, headers)
    if incoming.unreadable is not None:
        # An integer longer than Python reads (4,300 digits) must not carry the rest of the body
        # past us: judged read as the longest integer Python reads, beyond any provider's bound.
        capped = long_integers_capped(raw)
        if capped is not None:
            raw = capped
            incoming = read_request(endpoint, raw, headers)
    model = incoming.model
    if incoming.unreadable is not None:  # nested deeper than Python's parser walks
        return Judged(None, endpoint, model=model, unjudged="unreadable-json")
    try:
        profile = pick_profile(endpoint, incoming, profiles)
    except UnknownProfileError as exc:  # as the emulator names it
        header = PROFILE_HEADER if incoming.asked else DIALECT_HEADER
        detail = f"{header}: {exc.message}"
        return Judged(None, endpoint, model=model, unjudged="unknown-profile", detail=detail)
    # A key given twice: our parser keeps the last, a provider's may keep the first. Both
    # readings are judged, so a valid last copy cannot carry an invalid first one past us.
    verdict, reading = request_judgement(endpoint, incoming, profile)
    return Judged(verdict, endpoint, profile=profile, model=model, reading=reading)


def _undecodable_message(undecodable: Undecodable, limit: int | None) -> str:
    """Why enforce mode refuses a body it could not decode (``limit``: the proxy's input limit),
    and what to send instead."""
    if undecodable.kind == "over_limit":
        # as a body sent over the limit plainly is: compressing it must not carry it past us
        return (
            "the request body, once its content-encoding is decoded, is over the proxy's input "
            f"limit of {limit} bytes (set CTXCONF_MAX_INPUT_BYTES to raise it)"
        )
    instead = (
        "with fewer codings, one gzip or deflate is enough"
        if undecodable.kind == "too_many_codings"
        else "uncompressed, gzip or deflate"
    )
    return (
        f"the request body cannot be read to be judged ({undecodable.reason}); enforce mode "
        f"forwards no request it has not judged: send it {instead} "
        "(--mode observe forwards it unjudged)"
    )


def _refusal(judged: Judged) -> Response:
    """The provider's error as the emulator renders it (same bytes), marked as ours."""
    verdict, profile = judged.verdict, judged.profile
    assert verdict is not None  # a refusal is a verdict
    headers = {PROVENANCE_HEADER: "emulated", PROFILE_HEADER: profile or "none"}
    if verdict.rule:
        headers[RULE_HEADER] = verdict.rule
    if judged.reading is not None:
        headers[READING_HEADER] = judged.reading
    headers.update(error_headers_for(verdict))
    headers[PROXY_HEADER] = f"refused; rule={verdict.rule or 'none'}"
    return JSONResponse(verdict.error or {}, status_code=verdict.status, headers=headers)


def _enforced(judged: Judged, shape: str | None, limit: int | None) -> Response | None:
    """Enforce mode's local answer, or ``None`` to forward: a rule's rejection, and a request it
    cannot judge for a reason of the client's (a profile header naming no profile, JSON nested
    too deep), which would otherwise pass unjudged; the other unjudged requests go on."""
    if judged.verdict is not None:
        return None if judged.verdict.accepted else _refusal(judged)
    if judged.unjudged == "unknown-profile":
        return _proxy_error(
            shape,
            400,
            "unknown_profile",
            f"{judged.detail}; enforce mode forwards no request it has not judged (name a known "
            "profile, or send no header to judge by the request's model)",
        )
    undecodable = judged.undecodable
    if undecodable is not None:
        status, name = undecodable.refusal  # as the emulator refuses it
        return _proxy_error(shape, status, name, _undecodable_message(undecodable, limit))
    if judged.unjudged == "unreadable-json":
        return _proxy_error(
            shape,
            400,
            "body_too_deep",
            "the request body nests JSON deeper than the proxy can read and judge (its parser "
            f"and validators recurse once per level; Python's limit is {sys.getrecursionlimit()} "
            "frames); enforce mode forwards no request it has not judged. This is the proxy's "
            "limit, not a provider rule: --mode observe forwards such a body unjudged",
        )
    return None


def _note(judged: Judged) -> str:
    if judged.verdict is None:
        return f"forwarded; unjudged={judged.unjudged}"
    if judged.verdict.accepted:
        return "forwarded; ours=accept"
    return f"forwarded; ours=reject; rule={judged.verdict.rule or 'none'}"


# ----------------------------------------------------------------------------------- forwarding


def _proxy_error(shape: str | None, status: int, name: str, message: str) -> Response:
    """The proxy's own failure, in the shape's envelope; never presented as the provider's."""
    kind = "api_error" if status >= 500 else "invalid_request_error"
    body, extra = error_envelope(shape, status, f"ctxconf proxy: {name}: {message}", kind=kind)
    headers = {
        **extra,
        PROVENANCE_HEADER: "proxy",
        PROXY_ERROR_HEADER: name,
        PROXY_HEADER: f"failed; error={name}",  # every answer says what the proxy did
    }
    return JSONResponse(body, status_code=status, headers=headers)


def _end_to_end(pairs: Sequence[tuple[str, str]], reset: frozenset[str]) -> list[tuple[str, str]]:
    """The header fields that travel on: not hop-by-hop, not named by ``connection`` (RFC 9110
    7.6.1), not in ``reset``."""
    named = {
        token.strip().lower()
        for name, value in pairs
        if name.lower() == "connection"
        for token in value.split(",")
    }
    dropped = _HOP_BY_HOP | named | reset
    return [(name, value) for name, value in pairs if name.lower() not in dropped]


def _target_url(settings: _Settings, request: Request) -> str:
    raw_path: bytes = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    url = settings.upstream + raw_path.decode("latin-1")
    return f"{url}?{query.decode('latin-1')}" if query else url


_SLASHES: Final = re.compile(r"/{2,}")


def _judged_path(path: str) -> str:
    """The (decoded) path as the upstream may route it: repeated slashes made one, and ``.`` and
    ``..`` segments resolved (RFC 3986 5.2.4). The HTTP client removes dot segments before
    sending and servers commonly merge slashes, so ``/v1/./chat/completions`` reaches the
    upstream's chat endpoint: it is judged as that endpoint, never forwarded unjudged."""
    if not path.startswith("/"):
        return path
    normal = posixpath.normpath(_SLASHES.sub("/", path))
    normal = _SLASHES.sub("/", normal)  # normpath keeps a leading "//"
    return normal + "/" if path.endswith("/") and normal != "/" else normal


async def _handle(request: Request, settings: _Settings, client: httpx.AsyncClient) -> Response:
    path = _judged_path(request.url.path)
    endpoint = endpoint_for_path(path)
    shape = endpoint.shape if endpoint is not None else None
    try:
        raw = await read_body(request, settings.limit)  # as the emulator reads it
    except BodyTooLargeError as big:
        status, name = TOO_LARGE
        return _proxy_error(shape, status, name, big.reason("proxy"))
    except ClientDisconnect:
        # The client left before its body was whole: no failure of ours, and no one to answer.
        log.debug(
            "ctxconf proxy: the client disconnected before sending the whole body of %s %s; "
            "nothing forwarded",
            request.method,
            request.url.path,
        )
        return _proxy_error(
            shape,
            400,
            "client_disconnected",
            "the client disconnected before sending the whole request body; nothing forwarded",
        )
    headers = _end_to_end(request.headers.items(), _RESET_ON_REQUEST)
    try:
        judged = judge(
            request.method,
            path,
            raw,
            request.headers,
            profiles=settings.profiles,
            limit=settings.limit,
        )
    except RecursionError:  # read, but nested deeper than the validators walk: as unreadable
        judged = Judged(None, endpoint, unjudged="unreadable-json")
    except Exception as exc:  # noqa: BLE001 - a validator bug must not stop the traffic
        # Forwarded unjudged (the provider decides), and said in one line, not a traceback.
        log.warning(
            "ctxconf proxy: could not judge %s %s (%s: %s); forwarded unjudged",
            request.method,
            request.url.path,
            type(exc).__name__,
            exc,
        )
        judged = Judged(None, endpoint, unjudged="judge-failed")
    refused = _enforced(judged, shape, settings.limit) if settings.mode == "enforce" else None
    if refused is not None:
        return refused
    url = _target_url(settings, request)
    outgoing = client.build_request(request.method, url, headers=headers, content=raw)
    try:
        upstream = await client.send(outgoing, stream=True)
    except httpx.TransportError as exc:
        name = _failure_name(exc)
        status = 504 if name == "upstream_timeout" else 502
        return _proxy_error(shape, status, name, _failure(settings, exc))
    record = None
    if settings.recorder is not None and judged.verdict is not None and endpoint is not None:
        record = ExchangeRecord(
            method=request.method,
            url=url,
            request_headers=headers,
            request_body=raw,
            verdict=judged.verdict,
            endpoint=endpoint,
            model=judged.model,
        )
    relayed = StreamingResponse(
        _relay(upstream, settings, record),
        status_code=upstream.status_code,
        background=BackgroundTask(upstream.aclose),
    )
    # Raw header pairs, so repeated fields (set-cookie) pass as they came.
    relayed.raw_headers = [
        (name.encode("latin-1"), value.encode("latin-1"))
        for name, value in [
            *_end_to_end(upstream.headers.multi_items(), frozenset()),
            (PROXY_HEADER, _note(judged)),
        ]
    ]
    return relayed


def _failure_name(exc: httpx.TransportError) -> str:
    """The named error an upstream failure is reported as (the 502/504 and the logged line)."""
    if isinstance(exc, httpx.TimeoutException):
        return "upstream_timeout"
    if isinstance(exc, httpx.ProtocolError):
        return "upstream_protocol_error"
    return "upstream_unreachable"


def _failure(settings: _Settings, exc: httpx.HTTPError) -> str:
    detail = str(exc) or type(exc).__name__
    return f"upstream {settings.upstream} did not answer ({type(exc).__name__}: {detail})"


async def _relay(
    upstream: httpx.Response, settings: _Settings, record: ExchangeRecord | None
) -> AsyncIterator[bytes]:
    """The upstream's bytes as they arrive (still encoded: the client decodes them), teed into
    the observe record."""
    kept = record.response_tee(upstream, settings.limit) if record is not None else None
    problem: str | None = None
    try:
        async for chunk in upstream.aiter_raw():
            if kept is not None:
                kept.add(chunk)
            yield chunk
    except httpx.TransportError as exc:
        problem = f"{_failure_name(exc)}: {_failure(settings, exc)}"
    finally:
        if kept is not None and settings.recorder is not None:
            settings.recorder.write(kept.finish(problem))
    if problem is not None:
        raise UpstreamBrokeError(problem)
