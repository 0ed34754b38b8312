"""What the proxy writes in observe mode: one scrubbed cassette per judged exchange.

Each file is an ordinary cassette (``ctxconf:`` metadata, vcrpy's ``interactions``), so every
reader of cassettes reads it (``ctxconf diff``, ``ctxconf audit``, the recorded-verdict
library), under ``<record-dir>/<shape>/<UTC time>-<pid>-<sequence>-<skeleton digest>.yaml``.
The one interaction carries, beside the provider's ``response``, our verdict under
:data:`VERDICT_KEY`::

    ctxconf_verdict:
      judged_by: validators          # ours: the rule catalog's verdict, never the provider's
      verdict: reject
      status: 400
      rule: C2
      evidence: recorded
      provenance: emulated           # computed by the validators when the request passed
      profile: openai-default
      error: {...}                   # the error body our rules would have answered with
      headers: {}                    # the headers that carry part of that error (Bedrock)

``recorded_against`` says what answered, as ``ctxconf record`` decides it: ``emulator:<profile>``
when the answer says it is emulated, ``live`` for a provider's official host, else
``custom:<host>``. Secrets are scrubbed with the cassettes' scrubber before anything is
written (auth headers, ``key=`` query parameters, key-shaped strings in bodies); bodies are
stored decoded (gzip/deflate), and an answer over the input limit is stored without its body.
"""

from __future__ import annotations

import datetime as dt
import http
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from conformance.providers.validation import error_headers_for
from conformance.providers.verdict import Verdict
from conformance.traffic.cassette import METADATA_KEY, CassetteMetadata
from conformance.traffic.content_coding import Undecodable, decoded_body
from conformance.traffic.endpoints import PROFILE_HEADER, PROVENANCE_HEADER, Endpoint
from conformance.traffic.scrubbing import scrub_request, scrub_response
from conformance.traffic.skeleton import request_skeleton, skeleton_digest
from reference_impl.documents import dump_yaml

__all__ = [
    "RECORDED_BY",
    "VERDICT_KEY",
    "ExchangeRecord",
    "ObserveRecorder",
    "ResponseTee",
]

log = logging.getLogger(__name__)

VERDICT_KEY: Final = "ctxconf_verdict"
RECORDED_BY: Final = "ctxconf proxy --mode observe"
_SCENARIO: Final = "proxy-observed"


@dataclass(frozen=True, slots=True)
class ExchangeRecord:
    """The request half of an observed exchange, with our verdict on it."""

    method: str
    url: str
    request_headers: Sequence[tuple[str, str]]
    request_body: bytes
    verdict: Verdict
    endpoint: Endpoint
    model: str | None

    def response_tee(self, response: httpx.Response, limit: int | None) -> ResponseTee:
        """Collects the answer's bytes as they are relayed (at most ``limit`` of them)."""
        return ResponseTee(self, response, limit)


@dataclass(slots=True)
class ResponseTee:
    """The answer's raw bytes, kept while they are relayed; dropped past the limit."""

    record: ExchangeRecord
    response: httpx.Response
    limit: int | None
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, chunk: bytes) -> None:
        """Keep one relayed chunk (nothing once the total is over the limit)."""
        self.size += len(chunk)
        if self.limit is None or self.size <= self.limit:
            self.chunks.append(chunk)
        else:
            self.chunks.clear()

    def finish(self, problem: str | None) -> Observed:
        """The complete exchange; ``problem`` names a stream the upstream broke."""
        over = self.limit is not None and self.size > self.limit
        raw = b"".join(self.chunks)
        return Observed(self.record, self.response, raw, over, problem, self.limit)


@dataclass(frozen=True, slots=True)
class Observed:
    record: ExchangeRecord
    response: httpx.Response
    raw: bytes
    over_limit: bool
    problem: str | None
    limit: int | None


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<body not stored: {len(data)} bytes that are not UTF-8>"


def _recorded_against(official: bool, upstream: str, headers: httpx.Headers) -> str:
    if headers.get(PROVENANCE_HEADER) == "emulated":
        return f"emulator:{headers.get(PROFILE_HEADER) or 'none'}"
    if official:
        return "live"
    parts = urlsplit(upstream)
    host = parts.hostname or "unknown"  # never the userinfo
    return f"custom:{host}:{parts.port}" if parts.port else f"custom:{host}"


def _headers_dict(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in pairs:
        out.setdefault(name, []).append(value)
    return out


def _decoded(
    raw: bytes, headers: Sequence[tuple[str, str]], limit: int | None
) -> tuple[bytes | str, list[tuple[str, str]]]:
    """A body as a cassette stores it, decoded (every line of its ``content-encoding``: one
    list, RFC 9110 5.3), or why it could not be (:attr:`Undecodable.stored`); and its headers
    without the coding, ``content-length`` the stored body's."""
    encoding = ", ".join(v for k, v in headers if k.lower() == "content-encoding")
    decoded = decoded_body(raw, encoding, limit)
    body = decoded.stored if isinstance(decoded, Undecodable) else decoded
    kept = [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]
    if isinstance(body, bytes):
        kept.append(("content-length", str(len(body))))
    return body, kept


def _joined_headers(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """One value a header name: repeated lines joined with ", ", which means what the lines do
    for a request's list fields (RFC 9110 5.3; ``anthropic-beta``, which the audit reads back).
    vcrpy's request keeps one value a name: given a list, it would keep the first line only."""
    return {name: ", ".join(values) for name, values in _headers_dict(pairs).items()}


class ObserveRecorder:
    """Writes observed exchanges under ``root`` (created when needed); never raises on a write:
    a full disk is a logged warning, the traffic goes on."""

    def __init__(self, root: str | Path, *, upstream: str) -> None:
        # Imported here, in the thread that builds the app, and only for observe mode: vcrpy's
        # request model (what the scrubber takes) and the official hosts, which bring the SDKs.
        from vcr.request import Request  # noqa: PLC0415

        from conformance.traffic.roundtrip import Target  # noqa: PLC0415

        self._request = Request
        self._official = Target(root=upstream).is_official
        self.root = Path(root)
        self.upstream = upstream
        self.stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.sequence = 0
        self.written: list[Path] = []

    def document(self, observed: Observed) -> tuple[str, dict[str, Any]]:
        """The skeleton digest and the cassette document of one exchange, scrubbed."""
        record, response = observed.record, observed.response
        sent: bytes | str = record.request_body
        sent_headers = list(record.request_headers)
        if any(k.lower() == "content-encoding" for k, _ in sent_headers):
            # stored as the proxy judged it (decoded): stored encoded, a gzipped request was
            # "<body not stored: N bytes that are not UTF-8>", audited as no body at all (C0)
            sent, sent_headers = _decoded(record.request_body, sent_headers, observed.limit)
        request = self._request(record.method, record.url, sent, _joined_headers(sent_headers))
        request = scrub_request(request)
        digest = skeleton_digest(request_skeleton(request))
        stored: dict[str, Any] = request._to_dict()  # noqa: SLF001 - vcrpy's own layout
        stored["body"] = _text(stored["body"] or b"")
        headers = [(k, v) for k, v in response.headers.multi_items()]
        body: bytes | str = "<body not stored: over the input limit>"
        kept = [(k, v) for k, v in headers if k not in ("content-encoding", "content-length")]
        if not observed.over_limit:  # as the client reads it
            body, kept = _decoded(observed.raw, headers, observed.limit)
        answer = scrub_response(
            {
                "status": {
                    "code": response.status_code,
                    "message": response.reason_phrase or _phrase(response.status_code),
                },
                "headers": _headers_dict(kept),
                "body": {"string": _text(body)},
            }
        )
        verdict = record.verdict
        ours: dict[str, Any] = {"judged_by": "validators", **verdict.to_dict()}
        ours["headers"] = error_headers_for(verdict) if not verdict.accepted else {}
        if observed.problem is not None:
            ours["stream_broken"] = observed.problem
        metadata = CassetteMetadata(
            recorded_against=_recorded_against(
                self._official(record.endpoint.shape), self.upstream, response.headers
            ),
            shape=record.endpoint.shape,
            model=record.model or "unknown",
            scenario=_SCENARIO,
            dialect=verdict.dialect,
            # The client sent the request, not this process: its libraries' versions are not
            # the request's (the client's user agent is kept in the request headers).
            sdk={},
        ).to_dict()
        metadata["recorded_by"] = RECORDED_BY
        interaction = {"request": stored, "response": answer, VERDICT_KEY: ours}
        return digest, {METADATA_KEY: metadata, "version": 1, "interactions": [interaction]}

    def write(self, observed: Observed) -> Path | None:
        """Write one exchange's cassette atomically; ``None`` (and a warning) when it cannot be."""
        try:
            digest, document = self.document(observed)
            self.sequence += 1
            folder = self.root / observed.record.endpoint.shape
            folder.mkdir(parents=True, exist_ok=True)
            name = f"{self.stamp}-{os.getpid()}-{self.sequence:06d}-{digest}.yaml"
            path = folder / name
            partial = folder / f".{name}.writing"
            partial.write_text(
                dump_yaml(document, sort_keys=False, allow_unicode=True, width=100),
                encoding="utf-8",
            )
            os.replace(partial, path)
        except OSError as exc:
            log.warning("ctxconf proxy: cannot write a cassette under %s: %s", self.root, exc)
            return None
        self.written.append(path)
        return path


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""
