"""Read recorded HTTP round trips, whatever tool serialised them.

Recorded traffic reaches us in several dialects of the vcrpy cassette format, plus request logs:

* plain vcrpy YAML: ``request.body`` is the JSON text, ``response.body.string`` is text or gzip
  bytes (``!!binary``) with ``Content-Encoding: gzip`` kept;
* pretty-printed JSON bodies in YAML literal blocks (OpenTelemetry's serializer): still text;
* pydantic-ai's serializer: ``parsed_body`` mappings instead of ``body`` on requests and responses;
* ``!!binary`` header values (botocore sends header values as bytes);
* the same structure as JSON (vcrpy's ``json`` serializer), optionally gzip-compressed (``.gz``);
* Ruby VCR 6 YAML (``http_interactions``, ``body: {encoding, string}``, Ruby's local ``!binary``
  tag for non-UTF-8 bodies, lower-case methods) and R ``vcr`` YAML (``http_interactions``, a bare
  integer ``status``, scalar header values, ``body: {string}`` or ``{base64_string}``);
* HAR 1.2 (Polly.js): ``log.entries[]`` with ``postData.text`` and ``content.text`` (optionally
  ``encoding: base64``), headers as ``[{name, value}]``;
* single-interaction JSON (dd-apm-test-agent): one ``{request, response}`` object per file;
* JSON-lines request logs: one object per line with ``url``/``method``/``body`` (and optionally
  ``status``/``response``), or a bare request body.

A streamed response is read too: ``text/event-stream`` (SSE) text and AWS's binary
``application/vnd.amazon.eventstream`` framing (Bedrock's ``converse-stream`` and
``invoke-with-response-stream``) come out as :attr:`RecordedInteraction.response_events`, with
the base64 ``bytes`` of an invoke chunk decoded to the JSON it carries. Any other binary body is
kept as bytes (``raw_response_bytes``); only a file that truly cannot be read raises
:class:`RecordingError` (file, where, why).

The YAML loader is a ``SafeLoader`` subclass: ``!!binary`` is standard YAML (and Ruby's ``!binary``
is read the same way), and the ``python/…``
tags some cassettes carry (``multidict.istr`` header keys) are read as their plain value instead of
constructing Python objects. Nothing here executes code from a cassette.

Every interaction comes out as one :class:`RecordedInteraction` with parsed JSON bodies, so callers
(the audit command, the calibration tests, the validators) never see the serialisation.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from typing_extensions import assert_never

from conformance.errors import RecordingError
from conformance.providers.repeated_keys import read_unique, unique_reader_agrees
from conformance.traffic.content_coding import Undecodable, decoded_body
from conformance.traffic.endpoints import (
    detect_dialect,
    is_bedrock_count_tokens,
    is_token_count_url,
    url_shape,
)
from reference_impl.documents import (
    INPUT_LIMIT_ENV,
    DocumentLimitError,
    JsonNumberTooLongError,
    NonFiniteNumberError,
    SafeYamlLoader,
    check_input_size,
    json_problem,
    load_yaml_safe,
    loads_json,
    max_input_bytes,
    non_finite_number,
    read_input_bytes,
)
from reference_impl.transcript import ShapeName

__all__ = [
    "CASSETTE_SUFFIXES",
    "LOG_SUFFIXES",
    "RecordedInteraction",
    "StreamEvent",
    "cassette_items",
    "decode_event_stream",
    "detect_shape",
    "interactions_in",
    "iter_recording_files",
    "iter_recordings",
    "log_interaction",
    "not_a_recording_path",
    "parse_sse",
    "read_cassette",
    "read_jsonl_log",
    "read_log_line",
    "read_recording",
    "unwrap_request",
]

CASSETTE_SUFFIXES: Final = (".yaml", ".yml", ".json", ".har")
LOG_SUFFIXES: Final = (".jsonl", ".ndjson")
_GZIP_MAGIC: Final = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of a streamed response: its name (SSE ``event:``, AWS ``:event-type``) and data.

    ``data`` is the parsed JSON of the event when it is JSON (for a Bedrock invoke chunk, the JSON
    its base64 ``bytes`` carry), else the text as sent (``[DONE]``).
    """

    event: str | None
    data: object


@dataclass(frozen=True)
class RecordedInteraction:
    """One recorded request and (when recorded) its response.

    Header names are lower-cased; each maps to the tuple of its values. ``request_body`` and
    ``response_body`` are parsed JSON when the body is JSON; a non-JSON response stays text and a
    non-JSON request body is ``None`` (its text is in ``raw_request_text``). ``raw_response_text``
    is the response body as recorded (decompressed), or ``None`` when the serializer stored a
    parsed mapping (pydantic-ai) or no response was recorded. A streamed response also has its
    events in ``response_events`` (SSE text or AWS event-stream frames); a binary body that is not
    text keeps its bytes in ``raw_response_bytes`` (then ``response_body`` is the list of event
    data for an AWS event stream, else ``None``).
    """

    file: str
    index: int
    method: str
    url: str
    request_headers: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    request_body: object | None = field(default=None, hash=False)
    status: int | None = None
    response_headers: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    response_body: object | None = field(default=None, hash=False)
    raw_response_text: str | None = None
    raw_request_text: str | None = None
    request_keys_unique: bool = False
    """The request body, logged as JSON text, was read by a parser that stops at a key given
    twice (``conformance.providers.repeated_keys.read_unique``): no key repeats in it. False
    when not known."""
    response_events: tuple[StreamEvent, ...] = field(default=(), hash=False)
    raw_response_bytes: bytes | None = field(default=None, hash=False, repr=False)

    @property
    def shape(self) -> ShapeName | None:
        """The wire shape, told from the URL (else the body's keys)."""
        return detect_shape(self.url, self.request_body)

    @property
    def dialect(self) -> str | None:
        """The gateway dialect, told from the host, if any."""
        return detect_dialect(self.url)

    @property
    def judged_body(self) -> object | None:
        """The provider request inside the body: itself, except for Bedrock's ``count-tokens``,
        which wraps a Converse request (``input.converse``) or a base64 InvokeModel body
        (``input.invokeModel.body``, an Anthropic request)."""
        return unwrap_request(self.url, self.request_body)

    @property
    def is_token_count(self) -> bool:
        """Whether this is a token-count call rather than a generation."""
        return is_token_count_url(self.url)

    def request_header(self, name: str) -> str | None:
        """The first value of a request header (case-insensitive), if present."""
        values = self.request_headers.get(name.lower())
        return values[0] if values else None

    def response_header(self, name: str) -> str | None:
        """The first value of a response header (case-insensitive), if present."""
        values = self.response_headers.get(name.lower())
        return values[0] if values else None

    def __str__(self) -> str:
        status = "no response" if self.status is None else str(self.status)
        return f"{self.file}#{self.index} {self.method} {self.url} -> {status}"


# ------------------------------------------------------------------------------- YAML loading


class _CassetteLoader(SafeYamlLoader):
    """SafeLoader that reads ``!!python/…`` tags as their plain value (never builds objects)."""


def _construct_python_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node, deep=True)
        # ``!!python/object/apply:multidict._multidict.istr ['Content-Type']`` is just the string.
        if suffix.startswith(("object/apply:", "object/new:")) and len(items) == 1:
            return items[0]
        return items
    if isinstance(node, yaml.MappingNode):
        mapping = loader.construct_mapping(node, deep=True)
        args = mapping.get("args")
        if suffix.startswith(("object/apply:", "object/new:")) and isinstance(args, list):
            return args[0] if len(args) == 1 else args
        return mapping
    return None  # pragma: no cover - yaml has no other node kinds


_CassetteLoader.add_multi_constructor("tag:yaml.org,2002:python/", _construct_python_tag)


# Ruby's Psych writes non-UTF-8 strings with its local ``!binary`` tag: base64, like ``!!binary``.
def _construct_ruby_binary(loader: yaml.SafeLoader, node: yaml.Node) -> bytes:
    return loader.construct_yaml_binary(node)  # type: ignore[arg-type]


_CassetteLoader.add_constructor("!binary", _construct_ruby_binary)


def _gunzip(raw: bytes) -> bytes:
    """Decompressed gzip, at most the input limit (a gzip bomb is refused, not inflated)."""
    limit = max_input_bytes()
    out = bytearray()
    while raw:
        inflater = zlib.decompressobj(wbits=31)
        # zlib's max_length 0 means "no maximum"; one byte past the limit is enough to refuse.
        out += inflater.decompress(raw, 0 if limit is None else limit + 1 - len(out))
        check_input_size(len(out))
        if not inflater.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        raw = inflater.unused_data  # a concatenated gzip member
    return bytes(out)


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when they are gzip (``.gz`` or not): the same for every format.
    The input limit applies to the file and to what it decompresses to."""
    name = str(path)
    try:
        raw = read_input_bytes(path)
    except DocumentLimitError as exc:
        raise RecordingError(str(exc), file=name) from None
    except OSError as exc:
        raise RecordingError(f"cannot read the file: {exc.strerror or exc}", file=name) from None
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = _gunzip(raw)
        except DocumentLimitError as exc:
            raise RecordingError(f"decompressed {exc}", file=name) from None
        except (OSError, EOFError, zlib.error) as exc:
            raise RecordingError(f"corrupt gzip file: {exc}", file=name) from None
    return raw


def _load_document(path: Path) -> object:
    name = str(path)
    raw = _read_bytes(path)
    stem = path.name.removesuffix(".gz")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordingError(f"not UTF-8 text (byte {exc.start})", file=name) from None
    if stem.endswith((".json", ".har")):
        try:
            return loads_json(text)
        except json.JSONDecodeError as exc:
            raise RecordingError(
                f"not valid JSON ({json_problem(exc)})", file=name, where=f"line {exc.lineno}"
            ) from None
        except RecursionError:
            raise RecordingError("JSON nested too deeply", file=name) from None
    try:
        return load_yaml_safe(text, _CassetteLoader)
    except DocumentLimitError as exc:
        raise RecordingError(str(exc), file=name) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RecordingError(f"not YAML: {problem}", file=name, where=where) from None


# --------------------------------------------------------------------------- body decoding


def _wrong_type(
    expected: str, value: object, *, file: str, index: int, where: str | None = None
) -> RecordingError:
    """``expected`` ("headers must be a mapping") and the type that came instead (its Python name)."""
    return RecordingError(
        f"{expected}, got {type(value).__name__}", file=file, index=index, where=where
    )


def _headers(value: object, *, file: str, index: int, where: str) -> dict[str, tuple[str, ...]]:
    if value is None:
        return {}
    if isinstance(value, list) and all(
        isinstance(item, Mapping) and "name" in item for item in value
    ):  # HAR: [{"name": ..., "value": ...}, ...]
        out_har: dict[str, list[str]] = {}
        for item in value:
            out_har.setdefault(str(item["name"]).lower(), []).append(
                _header_text(item.get("value", ""))
            )
        return {key: tuple(values) for key, values in out_har.items()}
    if not isinstance(value, Mapping):
        raise _wrong_type("headers must be a mapping", value, file=file, index=index, where=where)
    out: dict[str, tuple[str, ...]] = {}
    for key, raw in value.items():
        values = raw if isinstance(raw, list) else [raw]
        out[str(key).lower()] = tuple(_header_text(v) for v in values)
    return out


def _header_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _decompress(data: bytes, encoding: str, *, file: str, index: int, where: str) -> bytes:
    """The body with every coding ``encoding`` lists undone (:func:`.content_coding.decoded_body`,
    as the proxy decodes one), when the bytes are still encoded: some recorders store a body
    decoded and keep its ``Content-Encoding`` header. A body that cannot be decoded is a
    ``RecordingError`` naming the coding (:func:`_undecodable_error`)."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    outer = next((c for c in reversed(codings) if c != "identity"), None)
    if outer is None and data[:2] == _GZIP_MAGIC:
        outer = "gzip"  # gzip bytes recorded without their header
        codings.append(outer)
    if outer is None or not _still_encoded(data, outer):
        return data
    decoded = decoded_body(data, ", ".join(codings), max_input_bytes())
    if isinstance(decoded, Undecodable):
        raise _undecodable_error(decoded, file=file, index=index, where=where)
    return decoded


def _still_encoded(data: bytes, coding: str) -> bool:
    """Whether the bytes are still in ``coding``, the last applied: gzip's magic, zlib's header
    (``deflate``, RFC 9110 8.4.1.2; gzip's magic too, which the decoder reads as well), or, for
    a coding with no mark we read (``br``, ``zstd``), bytes that are not text. A recorder that
    decoded the body leaves none of these."""
    if data[:2] == _GZIP_MAGIC and coding in {"gzip", "x-gzip", "deflate"}:
        return True
    if coding == "deflate":  # RFC 1950 2.2: method 8, and the two bytes a multiple of 31
        return len(data) > 1 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
    return coding not in {"gzip", "x-gzip"} and not _looks_like_text(data)


def _undecodable_error(
    undecodable: Undecodable, *, file: str, index: int, where: str
) -> RecordingError:
    """Why a recorded body cannot be decoded, and what to do, as the audit's row says it."""
    reason = f"the body cannot be decoded: {undecodable.reason}"
    match undecodable.kind:
        case "unsupported":
            reason += (
                "; ctxconf decodes gzip and deflate: record with decode_compressed_response=True "
                "to store bodies decoded"
            )
        case "over_limit":
            reason += (
                f" (the limit is {max_input_bytes()} bytes; set {INPUT_LIMIT_ENV} to raise it)"
            )
        case "corrupt" | "too_many_codings":
            pass
        case _:
            assert_never(undecodable.kind)
    return RecordingError(reason, file=file, index=index, where=where)


def _looks_like_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class _Body:
    """One side's body as recorded: text (decoded), or bytes that are not text, or a mapping."""

    text: str | None = None
    binary: bytes | None = None
    parsed: object | None = None
    is_parsed: bool = False
    where: str = ""
    """Where the body sits in the interaction (``request.postData.text`` in a HAR file)."""


def _as_body(value: object, encoding: str, *, file: str, index: int, where: str) -> _Body:
    if value is None:
        return _Body(where=where)
    if isinstance(value, bytes):
        data = _decompress(value, encoding, file=file, index=index, where=where)
        try:
            return _Body(text=data.decode("utf-8"), where=where)
        except UnicodeDecodeError:
            return _Body(binary=data, where=where)
    if isinstance(value, str):
        return _Body(text=value, where=where)
    raise _wrong_type("a body must be text or bytes", value, file=file, index=index, where=where)


def _json_or_text(text: str | None) -> object | None:
    """A response body: its JSON value when it is JSON, else the text as recorded."""
    parsed = _answer_json(text)
    return parsed if parsed is not None else text


def _json_or_none(text: str | None) -> object | None:
    if text is None or not text.strip():
        return None
    stripped = text.lstrip()
    if stripped[0] not in "{[":
        return None
    try:
        value: object = loads_json(text)
    except JsonNumberTooLongError:
        raise
    except json.JSONDecodeError:
        return None
    return value


def _answer_json(text: str | None) -> object | None:
    """A response's body as JSON, or ``None`` (its text is kept) when it is none we can read."""
    try:
        return _json_or_none(text)
    except JsonNumberTooLongError:
        return None


def _sent_body(body: object) -> object | None:
    """A parsed request body as a provider reads it: ``None``, a body that is not JSON (judged as
    such), when it holds NaN or Infinity, which Python's JSON writer emits and no provider's JSON
    parser reads."""
    return None if non_finite_number(body) is not None else body


def _request_json(text: str | None, *, file: str, index: int | None, where: str) -> object | None:
    """A request's body as JSON, or ``None`` when it is not JSON (NaN or Infinity in it too: a
    provider's parser refuses them, :class:`NonFiniteNumberError`). JSON with an integer longer
    than Python reads is no body to judge as "not JSON" (a provider's parser may read it): a
    ``RecordingError`` names it."""
    try:
        return _json_or_none(text)
    except JsonNumberTooLongError as exc:
        raise RecordingError(
            f"the body holds {json_problem(exc)}", file=file, index=index, where=where
        ) from None


# ---------------------------------------------------------------------------- event streams

_SSE_LINE_END: Final = re.compile(r"\r\n|\r|\n")
"""Where an event stream's lines end (the SSE specification's ``end-of-line``):
:meth:`str.splitlines` ends one at U+2028, U+0085 or U+001C too, which JSON data holds raw."""


def parse_sse(text: str) -> tuple[StreamEvent, ...]:
    """The events of a ``text/event-stream`` body (``event:``/``data:`` lines, blank-separated).

    Multi-line ``data:`` fields are joined with newlines, as the SSE specification says; the data
    is parsed as JSON when it is JSON. A body with no ``data:`` field has no events. Lines end
    at CRLF, LF or CR, the specification's three line ends, and nowhere else.
    """
    events: list[StreamEvent] = []
    name: str | None = None
    data: list[str] = []

    def flush() -> None:
        nonlocal name, data
        if data:
            joined = "\n".join(data)
            parsed = _answer_json(joined)
            events.append(StreamEvent(name, parsed if parsed is not None else joined))
        name, data = None, []

    for line in _SSE_LINE_END.split(text):
        if not line.strip():
            flush()
            continue
        if line.startswith(":"):
            continue
        field_name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field_name == "event":
            name = value
        elif field_name == "data":
            data.append(value)
    flush()
    return tuple(events)


_EVENT_PRELUDE: Final = 12


def decode_event_stream(data: bytes) -> tuple[StreamEvent, ...] | None:
    """The messages of an AWS ``application/vnd.amazon.eventstream`` body, or ``None`` when the
    bytes are not that framing (a length, a CRC or a header type does not check out).

    Each frame: total length, headers length, prelude CRC32, headers, payload, message CRC32. The
    event's name is its ``:event-type`` (or ``:exception-type``) header; a payload that is a
    Bedrock invoke chunk (``{"bytes": base64}``) is replaced by the JSON it carries.
    """
    events: list[StreamEvent] = []
    offset = 0
    while offset < len(data):
        if len(data) - offset < _EVENT_PRELUDE + 4:
            return None
        total, headers_length, prelude_crc = struct.unpack_from(">III", data, offset)
        end = offset + total
        if total < _EVENT_PRELUDE + 4 + headers_length or end > len(data):
            return None
        if zlib.crc32(data[offset : offset + 8]) != prelude_crc:
            return None
        (message_crc,) = struct.unpack_from(">I", data, end - 4)
        if zlib.crc32(data[offset : end - 4]) != message_crc:
            return None
        headers = _event_headers(data[offset + _EVENT_PRELUDE : offset + 12 + headers_length])
        if headers is None:
            return None
        payload = data[offset + _EVENT_PRELUDE + headers_length : end - 4]
        name = headers.get(":event-type", headers.get(":exception-type"))
        events.append(StreamEvent(name if isinstance(name, str) else None, _event_data(payload)))
        offset = end
    return tuple(events)


# Fixed sizes of the non-string header value types (AWS event-stream encoding).
_HEADER_FIXED: Final = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


def _event_headers(raw: bytes) -> dict[str, object] | None:
    headers: dict[str, object] = {}
    pos = 0
    while pos < len(raw):
        name_length = raw[pos]
        name = raw[pos + 1 : pos + 1 + name_length].decode("utf-8", errors="replace")
        pos += 1 + name_length
        if pos >= len(raw):
            return None
        kind = raw[pos]
        pos += 1
        if kind in (6, 7):  # bytes, string: a 2-byte length
            if pos + 2 > len(raw):
                return None
            (length,) = struct.unpack_from(">H", raw, pos)
            value = raw[pos + 2 : pos + 2 + length]
            headers[name] = value.decode("utf-8", errors="replace") if kind == 7 else value
            pos += 2 + length
        elif kind in _HEADER_FIXED:
            headers[name] = kind == 0 if kind in (0, 1) else raw[pos : pos + _HEADER_FIXED[kind]]
            pos += _HEADER_FIXED[kind]
        else:
            return None
    return headers if pos == len(raw) else None


def _event_data(payload: bytes) -> object:
    text = payload.decode("utf-8", errors="replace")
    parsed = _answer_json(text)
    if isinstance(parsed, Mapping) and isinstance(parsed.get("bytes"), str):
        with contextlib.suppress(binascii.Error, ValueError):
            inner = base64.b64decode(parsed["bytes"], validate=True).decode("utf-8")
            inner_parsed = _answer_json(inner)
            if inner_parsed is not None:
                return inner_parsed
    return parsed if parsed is not None else text


def _response_events(
    body: _Body, headers: Mapping[str, tuple[str, ...]]
) -> tuple[tuple[StreamEvent, ...], object | None]:
    """The events of a streamed response and, for a binary stream, the body to report."""
    content_type = (headers.get("content-type") or ("",))[0].lower()
    if body.binary is not None:
        events = decode_event_stream(body.binary)
        if events is None:
            return (), None
        return events, [event.data for event in events]
    if body.text is not None and (
        "text/event-stream" in content_type or body.text.lstrip().startswith(("event:", "data:"))
    ):
        return parse_sse(body.text), None
    return (), None


# ---------------------------------------------------------------------------- interactions


def _interaction(raw: object, *, file: str, index: int) -> RecordedInteraction:
    if not isinstance(raw, Mapping):
        raise _wrong_type("an interaction must be a mapping", raw, file=file, index=index)
    request = raw.get("request")
    if not isinstance(request, Mapping):
        raise RecordingError("missing the request mapping", file=file, index=index, where="request")
    url = request.get("uri", request.get("url"))
    if not isinstance(url, str) or not url:
        raise RecordingError("missing the request uri", file=file, index=index, where="request.uri")
    method = str(request.get("method") or "POST").upper()
    request_headers, request_side = _side(request, "request", file=file, index=index)
    if request_side.is_parsed:
        request_body = _sent_body(request_side.parsed)
    else:
        request_body = _request_json(
            request_side.text, file=file, index=index, where=request_side.where
        )

    response = raw.get("response")
    if response is None:
        return RecordedInteraction(
            file,
            index,
            method,
            url,
            request_headers,
            request_body,
            raw_request_text=request_side.text,
        )
    if not isinstance(response, Mapping):
        raise _wrong_type(
            "the response must be a mapping", response, file=file, index=index, where="response"
        )
    response_headers, response_side = _side(response, "response", file=file, index=index)
    status = _status(response.get("status"), file=file, index=index)
    events, stream_body = _response_events(response_side, response_headers)
    if response_side.is_parsed:
        response_body = response_side.parsed
    elif response_side.binary is not None:
        response_body = stream_body
    else:
        response_body = _json_or_text(response_side.text)
    return RecordedInteraction(
        file=file,
        index=index,
        method=method,
        url=url,
        request_headers=request_headers,
        request_body=request_body,
        status=status,
        response_headers=response_headers,
        response_body=response_body,
        raw_response_text=response_side.text,
        raw_request_text=request_side.text,
        response_events=events,
        raw_response_bytes=response_side.binary,
    )


def _side(
    section: Mapping[str, Any], side: str, *, file: str, index: int
) -> tuple[dict[str, tuple[str, ...]], _Body]:
    """One side of an interaction: its headers and its body.

    vcrpy keeps a request body as the text itself and a response body under ``body.string``; Ruby
    VCR and R ``vcr`` keep both under ``body: {string}`` (R: ``base64_string`` for binary); HAR
    keeps them in ``postData.text`` / ``content.text`` (``encoding: base64`` possible);
    pydantic-ai's serializer stores a ``parsed_body`` mapping instead.
    """
    headers = _headers(section.get("headers"), file=file, index=index, where=f"{side}.headers")
    if "parsed_body" in section:  # pydantic-ai's serializer
        return headers, _Body(parsed=section["parsed_body"], is_parsed=True)
    where = f"{side}.body"
    if "postData" in section or ("content" in section and "body" not in section):  # HAR
        holder = section.get("postData" if side == "request" else "content")
        where = f"{side}.{'postData' if side == 'request' else 'content'}.text"
        body: object = holder.get("text") if isinstance(holder, Mapping) else None
        if isinstance(holder, Mapping) and holder.get("encoding") == "base64":
            body = _base64(body, file=file, index=index, where=where)
    else:
        body = section.get("body")
        if isinstance(body, Mapping):
            if "base64_string" in body:  # R vcr, preserve_exact_body_bytes
                where += ".base64_string"
                body = _base64(body["base64_string"], file=file, index=index, where=where)
            else:
                where += ".string"
                body = body.get("string")
    # repeated lines are one list (RFC 9110 5.3): every coding they name is undone
    encoding = ", ".join(headers.get("content-encoding", ()))
    return headers, _as_body(body, encoding, file=file, index=index, where=where)


def _base64(value: object, *, file: str, index: int, where: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _wrong_type("a base64 body must be text", value, file=file, index=index, where=where)
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RecordingError(f"not base64: {exc}", file=file, index=index, where=where) from None


def _status(value: object, *, file: str, index: int) -> int | None:
    if type(value) is int:  # the common case, told at once
        return value
    code = value.get("code", value.get("status_code")) if isinstance(value, Mapping) else value
    if code is None:
        return None
    if isinstance(code, bool) or not isinstance(code, int | str):
        raise _wrong_type(
            "the status code must be an integer",
            code,
            file=file,
            index=index,
            where="response.status.code",
        )
    try:
        return int(code)
    except ValueError:
        raise RecordingError(
            f"the status code {code!r} is not an integer",
            file=file,
            index=index,
            where="response.status.code",
        ) from None


def _interaction_list(document: object, *, file: str) -> list[object]:
    """The raw interactions of a loaded document, whatever recorder wrote it."""
    if isinstance(document, Mapping):
        for key in ("interactions", "http_interactions"):  # vcrpy; Ruby VCR and R vcr
            if key in document:
                interactions = document[key]
                if not isinstance(interactions, list):
                    raise RecordingError(f"'{key}' must be a list", file=file, where=key)
                return interactions
        log = document.get("log")
        if isinstance(log, Mapping) and "entries" in log:  # HAR 1.2
            entries = log["entries"]
            if not isinstance(entries, list):
                raise RecordingError("'log.entries' must be a list", file=file, where="log.entries")
            return entries
        if isinstance(document.get("request"), Mapping):  # one interaction per file
            return [document]
    raise RecordingError(
        "not a recording: expected 'interactions' (vcrpy), 'http_interactions' (Ruby VCR, "
        "R vcr), 'log.entries' (HAR) or a single {request, response} object",
        file=file,
    )


def read_cassette(path: str | Path) -> list[RecordedInteraction]:
    """Every interaction of one recording file, in order: a vcrpy cassette (YAML or JSON), a Ruby
    VCR or R ``vcr`` cassette, a HAR file or a single-interaction JSON file (optionally ``.gz``)."""
    path = Path(path)
    return interactions_in(_load_document(path), file=str(path))


def interactions_in(document: object, *, file: str) -> list[RecordedInteraction]:
    """Every interaction of an already loaded recording document (what :func:`read_cassette` reads
    from a file), whatever recorder wrote it; ``file`` names it in errors and interactions."""
    out: list[RecordedInteraction] = []
    for index, item in enumerate(_interaction_list(document, file=file)):
        found = _interaction_or_error(item, file, index)
        if isinstance(found, RecordingError):
            raise found
        out.append(found)
    return out


def cassette_items(path: str | Path) -> list[RecordedInteraction | RecordingError]:
    """:func:`read_cassette`, an interaction that cannot be read given as its
    ``RecordingError`` in its place and the others still read (an audit judges them); a file
    that cannot be read at all raises, as there."""
    name = str(path)
    items = _interaction_list(_load_document(Path(path)), file=name)
    return [_interaction_or_error(item, name, index) for index, item in enumerate(items)]


def _interaction_or_error(
    item: object, file: str, index: int
) -> RecordedInteraction | RecordingError:
    try:
        return _interaction(item, file=file, index=index)
    except RecordingError as exc:
        return exc
    except RecursionError:
        return RecordingError("a body is nested too deeply to read", file=file, index=index)


# ------------------------------------------------------------------------------ JSON lines

_BODY_KEYS: Final = ("body", "request_body", "json", "payload")
_URL_KEYS: Final = ("url", "uri", "endpoint")


def read_jsonl_log(path: str | Path) -> list[RecordedInteraction]:
    """Every request of a JSON-lines log: ``{"url", "method", "body", ...}`` or a bare body.

    ``index`` is the 0-based line number (blank lines are skipped but counted, so an error names
    the line an editor shows as ``index + 1``). Lines end at ``\n`` only, as ``ctxconf audit``
    reads them (a ``\r`` before it is JSON white space). A ``body`` given as JSON text is
    parsed. Optional keys: ``headers``, ``status``, ``response`` (body), ``request`` (a nested
    request mapping).
    """
    path = Path(path)
    name = str(path)
    raw = _read_bytes(path)
    out: list[RecordedInteraction] = []
    # a JSON string may hold U+2028, U+0085 or U+001C raw (a logger writing ensure_ascii=False):
    # str.splitlines() ends a line at each, and the request was read as two lines not JSON
    for lineno, line in enumerate(raw.decode("utf-8", errors="replace").split("\n")):
        if not line.strip():
            continue
        try:
            record, strict = read_log_line(line)
        except json.JSONDecodeError as exc:
            raise RecordingError(
                f"line {lineno + 1} is not valid JSON ({json_problem(exc)})", file=name
            ) from None
        except RecursionError:
            raise RecordingError(f"line {lineno + 1}: JSON nested too deeply", file=name) from None
        try:
            out.append(_log_record(record, file=name, index=lineno, strict=strict))
        except RecursionError:
            raise RecordingError(
                f"line {lineno + 1}: the body is nested too deeply to read", file=name
            ) from None
    return out


def read_log_line(line: str) -> tuple[object, bool]:
    """One log line's record, and whether it was strict JSON. A line Python's JSON writer wrote
    with NaN or Infinity in it (``json.dumps`` emits them) is read all the same, so that its
    request is judged: a body holding one is a body that is not JSON (:func:`log_interaction`).
    ``JSONDecodeError`` (an integer too long to read: ``JsonNumberTooLongError``) for a line that
    is not JSON otherwise."""
    try:
        return loads_json(line), True
    except NonFiniteNumberError:
        return loads_json(line, parse_constant=float), False


def log_interaction(
    record: object, *, file: str, index: int, strict: bool = False
) -> RecordedInteraction:
    """One parsed JSON-lines record (line ``index``, 0-based) as an interaction, read as
    :func:`read_jsonl_log` reads each line (for callers that stream a log line by line). A body
    holding NaN or Infinity is a body that is not JSON (``request_body`` ``None``): ``strict``
    says the record was read as strict JSON, so there is none to look for."""
    return _log_record(record, file=file, index=index, strict=strict)


def _log_record(
    record: object, *, file: str, index: int, strict: bool = False
) -> RecordedInteraction:
    if not isinstance(record, Mapping):
        raise RecordingError(
            f"line {index + 1} must hold a JSON object, got {type(record).__name__}", file=file
        )
    nested = record.get("request")
    if (
        nested is not None
        and isinstance(nested, Mapping)
        and any(k in nested for k in (*_URL_KEYS, *_BODY_KEYS))
    ):
        merged = {**record, **nested}
        merged.pop("request", None)
        record = merged
    url = ""
    for key in _URL_KEYS:
        found = record.get(key)
        if isinstance(found, str):
            url = found
            break
    body_key = None
    for key in _BODY_KEYS:
        if key in record:
            body_key = key
            break
    if body_key is None and not url:
        body: object = record  # a bare request body
        headers: dict[str, tuple[str, ...]] = {}
        method = "POST"
        status = None
        response_body = None
    else:
        body = record.get(body_key) if body_key is not None else None
        headers = _headers(record.get("headers"), file=file, index=index, where="headers")
        method = str(record.get("method") or "POST").upper()
        status = _status(record.get("status", record.get("status_code")), file=file, index=index)
        response_body = record.get("response", record.get("response_body"))
    request_text = body if isinstance(body, str) else None
    keys_unique = False
    if isinstance(body, str):
        body, keys_unique = _logged_request_json(body, file=file, where=f"line {index + 1}: body")
    elif not strict:
        body = _sent_body(body)
    if isinstance(response_body, str):
        response_body = _json_or_text(response_body)
    return RecordedInteraction(
        file=file,
        index=index,
        method=method,
        url=url,
        request_headers=headers,
        request_body=body,
        status=status,
        response_body=response_body,
        raw_request_text=request_text,
        request_keys_unique=keys_unique,
    )


def _logged_request_json(text: str, *, file: str, where: str) -> tuple[object | None, bool]:
    """A logged body's JSON text as :func:`_request_json` reads it, by jiter's parser first (the
    audit's hot path: faster, and it stops at a key given twice): the body, and whether that
    parser read it, so that no key repeats in it. Anything it refuses is read by ``json.loads``."""
    if text.lstrip()[:1] in ("{", "[") and unique_reader_agrees():
        with contextlib.suppress(ValueError):  # UnicodeEncodeError too: a lone surrogate
            return read_unique(text.encode("utf-8")), True
    return _request_json(text, file=file, index=None, where=where), False


# ---------------------------------------------------------------------------------- folders


def read_recording(path: str | Path) -> list[RecordedInteraction]:
    """One file, read by its suffix: a cassette (``.yaml``/``.yml``/``.json``) or a ``.jsonl`` log."""
    path = Path(path)
    stem = path.name.removesuffix(".gz")
    if stem.endswith(LOG_SUFFIXES):
        return read_jsonl_log(path)
    if stem.endswith(CASSETTE_SUFFIXES):
        return read_cassette(path)
    raise RecordingError(
        f"unknown recording type; expected one of {', '.join(CASSETTE_SUFFIXES + LOG_SUFFIXES)}"
        " (optionally .gz)",
        file=str(path),
    )


def _is_recording(path: Path) -> bool:
    stem = path.name.removesuffix(".gz")
    return path.is_file() and stem.endswith(CASSETTE_SUFFIXES + LOG_SUFFIXES)


def iter_recordings(root: str | Path) -> Iterator[RecordedInteraction]:
    """Every interaction under ``root`` (a file or a folder, walked in sorted path order).

    Files that are not recordings by their suffix (``PROVENANCE.md``) are skipped; a recording
    that cannot be read raises :class:`RecordingError` naming it.
    """
    for path in iter_recording_files(root):
        yield from read_recording(path)


def iter_recording_files(root: str | Path) -> Iterator[Path]:
    """``root`` itself when it is a file, else every recording under it by suffix, sorted.

    Raises :class:`RecordingError` when ``root`` does not exist.
    """
    root = Path(root)
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise RecordingError(not_a_recording_path(root), file=str(root))
    yield from sorted(p for p in root.rglob("*") if _is_recording(p))


def not_a_recording_path(path: Path) -> str:
    """Why ``path``, neither a regular file nor a folder, cannot be read: a named pipe (reading it
    would wait for a writer), a socket or device, a symbolic link to nothing, or no such path."""
    if path.is_symlink() and not path.exists():
        return "a symbolic link that leads nowhere (to a missing path, or round in a loop)"
    if path.exists():
        return "not a regular file or folder (a named pipe, socket or device); recordings are files"
    return "no such file or folder"


# ------------------------------------------------------------------------------ shape of a body


def _bedrock_count_input(url: str, body: object) -> Mapping[str, Any] | None:
    if not is_bedrock_count_tokens(url) or not isinstance(body, Mapping):
        return None
    wrapped = body.get("input")
    return wrapped if isinstance(wrapped, Mapping) else None


def unwrap_request(url: str, body: object | None) -> object | None:
    """The request a body carries: Bedrock ``count-tokens`` wraps one (``input.converse``, or
    ``input.invokeModel.body`` as base64 JSON); every other body is itself."""
    wrapped = _bedrock_count_input(url, body)
    if wrapped is None:
        return body
    if "converse" in wrapped:
        converse: object = wrapped["converse"]
        return converse
    invoke = wrapped.get("invokeModel")
    raw = invoke.get("body") if isinstance(invoke, Mapping) else None
    if isinstance(raw, str):
        with contextlib.suppress(binascii.Error, ValueError):
            return _json_or_none(base64.b64decode(raw, validate=True).decode("utf-8"))
    return body


def detect_shape(url: str, body: object | None = None) -> ShapeName | None:
    """The wire shape of a request: from the URL path, else from the body's keys, else None.

    The body fallback serves logs without URLs: ``contents`` is Gemini, ``input`` is Responses,
    Converse-only keys (``inferenceConfig``, ``toolConfig``, blocks without ``type``) are Bedrock,
    Anthropic-only markers (top-level ``system``, ``tool_use``/``tool_result``/``thinking``
    blocks, ``anthropic_version``, a tool defined by its ``input_schema``) are Anthropic, and any
    other ``messages`` body is OpenAI Chat, the shape every OpenAI-compatible gateway speaks.
    """
    wrapped = _bedrock_count_input(url, body) if url else None
    if wrapped is not None:
        return "anthropic-messages" if "invokeModel" in wrapped else "bedrock-converse"
    told = url_shape(url) if url else None
    if told is not None:
        return told
    if not isinstance(body, Mapping):
        return None
    if "contents" in body:
        return "gemini"
    if "input" in body and "messages" not in body:
        return "openai-responses"
    if "messages" not in body:
        return None
    if "inferenceConfig" in body or "toolConfig" in body:
        return "bedrock-converse"
    # ``messages`` of another type is still a request, the validators name what is wrong in it
    messages = body["messages"] if isinstance(body["messages"], list) else ()
    block_types = {
        b.get("type") if "type" in b else "<untyped>"
        for m in messages
        if isinstance(m, Mapping) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, Mapping)
    }
    if "<untyped>" in block_types:
        return "bedrock-converse"  # Converse blocks are keyed ({"text": ...}, {"toolUse": ...})
    anthropic_blocks = {"tool_use", "tool_result", "thinking", "redacted_thinking", "document"}
    if "anthropic_version" in body or "system" in body or block_types & anthropic_blocks:
        return "anthropic-messages"
    tools = body.get("tools")
    if isinstance(tools, list) and any(
        isinstance(t, Mapping) and "input_schema" in t for t in tools
    ):
        return "anthropic-messages"  # an OpenAI tool is {"type": "function", "function": {...}}
    return "openai-chat"
