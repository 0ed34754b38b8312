"""A body's content codings undone (RFC 9110 8.4), each layer within the input limit.

The one decoder of a compressed body: the proxy judges a request decoded and stores an answer
decoded (:mod:`conformance.providers.proxy`, :mod:`conformance.providers.proxy_cassettes`), and
the recordings reader reads a recorded body decoded (:mod:`conformance.traffic.reading`). Why a
body was not decoded is a value, :class:`Undecodable`; each caller says it in its own way (the
proxy: a named 4xx in enforce mode, ``unjudged=content-encoding`` in observe mode; the reader: a
``RecordingError`` naming the interaction and the field, an ``unreadable`` row of the audit).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["MAX_CONTENT_CODINGS", "TOO_LARGE", "Undecodable", "decoded_body"]

MAX_CONTENT_CODINGS: Final = 5
"""The most content codings one body may list (urllib3 decodes no longer chain either,
``MultiDecoder.max_decode_links``): each gzip layer can multiply the size, and each is decoded
whole within the input limit, so the work a body can ask for stays bounded."""


@dataclass(frozen=True, slots=True)
class Undecodable:
    """Why a body with a content coding was not decoded: ``kind`` (``unsupported``: a coding
    not read; ``corrupt``: data that does not decode, or ends before its end-of-stream marker
    (cut short); ``over_limit``: past the input limit once
    decoded; ``too_many_codings``: more than :data:`MAX_CONTENT_CODINGS` listed) and
    ``reason``, in words."""

    kind: Literal["unsupported", "corrupt", "over_limit", "too_many_codings"]
    reason: str

    @property
    def refusal(self) -> tuple[int, str]:
        """The status and name a server refuses the body with: the proxy in enforce mode and
        the emulator answer the same (``corrupt_content_encoding``, 400 ...)."""
        return _REFUSALS[self.kind]

    @property
    def stored(self) -> str:
        """What a cassette holds instead of the body."""
        return f"<body not stored: {self.reason}>"


TOO_LARGE: Final = (413, "request_too_large")
"""The status and name of a body over the input limit, as sent or once decoded: the proxy and
the emulator refuse both the same (``over_limit`` here; as sent, before it is read whole:
:func:`conformance.providers.emulator.read_body`)."""

_REFUSALS: Final = {
    "unsupported": (415, "unsupported_content_encoding"),
    "too_many_codings": (415, "too_many_content_encodings"),
    "corrupt": (400, "corrupt_content_encoding"),
    "over_limit": TOO_LARGE,
}


def decoded_body(raw: bytes, encoding: str, limit: int | None) -> bytes | Undecodable:
    """The body without its content codings, or why it could not be decoded.

    ``encoding`` is the ``content-encoding`` field value, its repeated lines joined with ", "
    (RFC 9110 5.3: they mean one list). The codings were applied in the order listed (RFC 9110
    8.4), so they are undone last first: ``gzip, gzip`` is a body gzipped twice. Each layer is
    decoded within ``limit``, so no layer, the last included, is held past it; at most
    :data:`MAX_CONTENT_CODINGS` are listed."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    if len(codings) > MAX_CONTENT_CODINGS:
        return Undecodable(
            "too_many_codings",
            f"content-encoding lists {len(codings)} codings, more than the "
            f"{MAX_CONTENT_CODINGS} ctxconf decodes",
        )
    data = raw
    for place, coding in reversed(list(enumerate(codings, start=1))):
        if coding == "identity":
            continue
        # which layer, when there are several: "gzip data (coding 1 of 2) is corrupt"
        layer = f" (coding {place} of {len(codings)})" if len(codings) > 1 else ""
        if coding not in ("gzip", "x-gzip", "deflate"):
            return Undecodable("unsupported", f"content-encoding {coding}{layer}")
        try:
            decoded = _inflated(data, limit)
        except zlib.error as exc:
            return Undecodable("corrupt", f"{coding} data{layer} is corrupt ({exc})")
        except _CutShort:
            return Undecodable("corrupt", f"{coding} data{layer} is cut short")
        if decoded is None:
            return Undecodable("over_limit", f"over the input limit when decoded{layer}")
        data = decoded
    return data


def _inflated(data: bytes, limit: int | None) -> bytes | None:
    """Every member of a gzip (or zlib) stream, decoded: a gzip body may hold several members,
    which a provider's reader decodes one after another (RFC 1952 2.2), so the body judged and
    recorded is the whole of it, not its first member. None when over ``limit``; trailing zero
    bytes are padding (as Python's gzip module reads them). A member that ends before its
    end-of-stream marker raises :class:`_CutShort`.

    Linear in the input: a member is fed in chunks that double from :data:`_FIRST_CHUNK`, so
    the copy zlib makes of what follows its end (``unused_data``) is about its size at most.
    Fed all that follows, each member copied the rest of the body: the work grew with the
    square of the number of members (a body of 20-byte empty members, gzipped again into a
    small request, held the proxy for minutes)."""
    out = bytearray()
    view = memoryview(data)
    at = 0
    while at < len(view):
        inflater = zlib.decompressobj(wbits=47)  # gzip or zlib framing, detected
        size = _FIRST_CHUNK
        while True:
            chunk = view[at : at + size]
            room = (limit + 1 - len(out)) if limit is not None else 0
            out += inflater.decompress(chunk, room)
            if limit is not None and len(out) > limit:
                return None
            # within the limit, decompress took the whole chunk (no unconsumed_tail)
            at += len(chunk) - len(inflater.unused_data)
            if inflater.eof or at >= len(view):
                break
            size = min(size * 2, _LAST_CHUNK)
        if not inflater.eof:
            # Cut short: the stream ends before its end-of-stream marker (gzip.decompress and
            # a provider's reader refuse it), so what was decoded is not the body that was sent.
            raise _CutShort
        if _NOT_ZERO.search(data, at) is None:
            break
    return bytes(out)


class _CutShort(Exception):  # noqa: N818 - control flow inside decoded_body, never escapes
    """A member of the stream ends before its end-of-stream marker."""


_FIRST_CHUNK: Final = 64
_LAST_CHUNK: Final = 1 << 20
_NOT_ZERO: Final = re.compile(rb"[^\0]")
"""The first byte after a member that is not padding (``\\0``), if any."""
