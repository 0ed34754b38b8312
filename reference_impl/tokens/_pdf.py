"""What a PDF holds for token counting: its page count and the text its pages draw.

Providers put each page of a PDF into the model's context twice: as an image of the page and as
the text extracted from it ([vendor] Anthropic's PDF support page; OpenAI's file inputs guide says
the same of its models). The image part is a per-page figure that the counting rules supply; this
module finds what varies with the document: how many pages, and the text.

The text is read from the page content streams: literal and hex strings shown by the text
operators ``Tj``, ``TJ``, ``'`` and ``"``, in streams that are uncompressed or ``FlateDecode``.
That is the text of the standard fonts, which is most of what simple generated PDFs hold. Text in
fonts with their own encodings comes out as their byte codes; counted as text, those overcount a
little, which errs on the safe side. Other filters (images, JPEG) are skipped. Decompression is
bounded, so a crafted stream cannot expand without limit.
"""

from __future__ import annotations

import itertools
import re
import zlib
from typing import Final

__all__ = ["MAX_INFLATED_BYTES", "MAX_STREAMS", "pdf_page_count", "pdf_text"]

MAX_INFLATED_BYTES: Final = 8 * 1024 * 1024
"""The most bytes all of a document's content streams are read to (some thousands of pages of
text); the text beyond is not read (its pages still cost their image)."""

MAX_STREAMS: Final = 20_000
"""The most streams of a document that are looked at (fonts and images included)."""

_PAGE: Final = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_STREAM: Final = re.compile(rb"(?<!end)stream\r?\n")
_ENDSTREAM: Final = b"endstream"
_DICT_START: Final = b"<<"
_HEAD_LOOKBACK: Final = 1024
"""How far before ``stream`` its dictionary is looked for (a stream dictionary is short)."""
_WHITESPACE: Final = b" \t\r\n\f\x00"
_ESCAPES: Final = {
    ord("n"): b"\n",
    ord("r"): b"\r",
    ord("t"): b"\t",
    ord("b"): b"\b",
    ord("f"): b"\f",
    ord("("): b"(",
    ord(")"): b")",
    ord("\\"): b"\\",
}


def pdf_page_count(raw: bytes) -> int:
    """Pages in the document (``/Type /Page`` objects); at least 1."""
    return max(1, len(_PAGE.findall(raw)))


def pdf_text(raw: bytes) -> str:
    """The text the document's content streams show, one string per text operator, joined by
    spaces (empty when none can be read)."""
    budget = MAX_INFLATED_BYTES
    shown: list[str] = []
    for stream in _streams(raw):
        if budget <= 0:
            break
        inflated = _inflate(stream, budget)
        if inflated is None:
            continue
        budget -= len(inflated)
        shown.extend(_shown_strings(inflated))
    return " ".join(s for s in shown if s)


def _streams(raw: bytes) -> list[tuple[bytes, bool]]:
    """(stream bytes, compressed with FlateDecode) for every stream whose dictionary names no
    other filter."""
    out: list[tuple[bytes, bool]] = []
    for match in itertools.islice(_STREAM.finditer(raw), MAX_STREAMS):
        start = match.end()
        end = raw.find(_ENDSTREAM, start)
        if end < 0:
            break
        before = raw[max(0, match.start() - _HEAD_LOOKBACK) : match.start()]
        head = before[before.rfind(_DICT_START) :]
        filters = re.findall(rb"/([A-Za-z0-9]+Decode)", head)
        if all(f == b"FlateDecode" for f in filters) and b"/Subtype" not in head:
            out.append((raw[start:end], bool(filters)))
    return out


def _inflate(stream: tuple[bytes, bool], budget: int) -> bytes | None:
    data, compressed = stream
    if not compressed:
        return data[:budget]
    try:
        return zlib.decompressobj().decompress(data, budget)
    except zlib.error:
        return None


# A literal string (one level of nested parentheses, escapes kept) or a hex string.
_STRING: Final = rb"\((?:\\.|[^\\()]|\((?:\\.|[^\\()])*\))*\)|<[0-9A-Fa-f\s]*>"
_SHOW: Final = re.compile(
    rb"(" + _STRING + rb")\s*(?:Tj|'|\")|\[((?:" + _STRING + rb"|[^\]()<])*)\]\s*TJ", re.DOTALL
)
_IN_ARRAY: Final = re.compile(_STRING, re.DOTALL)


def _shown_strings(content: bytes) -> list[str]:
    """The strings that text operators show in one content stream (regular expressions, so a
    large stream is scanned at C speed)."""
    shown: list[str] = []
    for match in _SHOW.finditer(content):
        single, array = match.group(1), match.group(2)
        pieces = [single] if single is not None else _IN_ARRAY.findall(array or b"")
        shown.append("".join(_decode(_string_bytes(p)) for p in pieces))
    return shown


def _string_bytes(token: bytes) -> bytes:
    if token.startswith(b"<"):
        return _hex(token[1:-1])
    return _literal(token[1:-1])


_ESCAPE: Final = re.compile(rb"\\([0-7]{1,3}|\r\n|.)", re.DOTALL)


def _unescape(match: re.Match[bytes]) -> bytes:
    code = match.group(1)
    if code[:1].isdigit():
        return bytes([int(code, 8) & 0xFF])
    if code in (b"\r\n", b"\r", b"\n"):
        return b""  # a line continuation
    return _ESCAPES.get(code[0], code)


def _literal(body: bytes) -> bytes:
    """The bytes of a literal string's body (between its outer parentheses), escapes resolved
    (an unknown escape is the character itself)."""
    return _ESCAPE.sub(_unescape, body) if b"\\" in body else body


def _hex(digits: bytes) -> bytes:
    cleaned = bytes(d for d in digits if d not in _WHITESPACE)
    if len(cleaned) % 2:
        cleaned += b"0"
    try:
        return bytes.fromhex(cleaned.decode("ascii"))
    except ValueError:
        return b""


def _decode(data: bytes) -> str:
    """Shown bytes as text: UTF-16BE when they carry its byte-order mark, Latin-1 otherwise
    (the standard fonts' encodings agree with it on the printable ASCII range)."""
    if data.startswith(b"\xfe\xff"):
        return data[2:].decode("utf-16-be", errors="replace")
    return data.decode("latin-1")
