"""Pixel size of an inline image, read from its header bytes (PNG, GIF, JPEG, WebP).

The token formulas need width and height; wire formats carry only the bytes. Decoding the first
few kilobytes of base64 is enough for every format here, so a large image is never decoded whole.
An unreadable header gives ``None`` and the counters fall back to the formula's upper bound.
"""

from __future__ import annotations

import base64
import binascii
import struct

from reference_impl.transcript import ImagePart

__all__ = ["image_size", "image_size_from_base64", "part_size"]

# Base64 decoded, each window only when the header was not in the one before: 48 bytes (a PNG,
# GIF or WebP header: 30 bytes at most), a few kilobytes (a JPEG's SOF marker unless large
# EXIF/ICC segments come before it), then enough for any header we read.
_WINDOWS = (64, 4 * 1024, 64 * 1024)


def part_size(part: ImagePart) -> tuple[int | None, int | None]:
    """The size the formulas should use: given on the part, else read from inline bytes."""
    if part.width is not None and part.height is not None:
        return part.width, part.height
    if part.source == "base64":
        size = image_size_from_base64(part.data)
        if size is not None:
            return size
    elif part.source == "url" and part.data.startswith("data:"):
        _, _, payload = part.data.partition(",")
        size = image_size_from_base64(payload)
        if size is not None:
            return size
    return part.width, part.height


def image_size_from_base64(data: str) -> tuple[int, int] | None:
    """``(width, height)`` read from the header of base64 image data; None when not a known format.

    The first 64 characters are decoded first, a longer head only when the header is not in
    them (``_WINDOWS``): every image of a session is sized, so this is on the counting path."""
    size: tuple[int, int] | None = None
    shorter = 0
    for chars in _WINDOWS:
        if len(data) <= shorter:
            break
        size = _size_of_head(data, chars)
        if size is not None:
            break
        shorter = chars
    return size


def _size_of_head(data: str, chars: int) -> tuple[int, int] | None:
    head = data[:chars]
    try:
        raw = base64.b64decode(head + "=" * (-len(head) % 4), validate=False)
    except (binascii.Error, ValueError):
        return None
    return image_size(raw)


def image_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from the first bytes of an image, or None when the format is unknown."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return _checked(width, height)
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return _checked(width, height)
    if raw.startswith(b"RIFF") and raw[8:12] == b"WEBP":
        return _webp_size(raw)
    if raw.startswith(b"\xff\xd8"):
        return _jpeg_size(raw)
    return None


def _checked(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8X" and len(raw) >= 30:
        width = 1 + int.from_bytes(raw[24:27], "little")
        height = 1 + int.from_bytes(raw[27:30], "little")
        return _checked(width, height)
    if chunk == b"VP8 " and len(raw) >= 30:
        width, height = struct.unpack("<HH", raw[26:30])
        return _checked(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and len(raw) >= 25:
        bits = int.from_bytes(raw[21:25], "little")
        return _checked((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    return None


# Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # standalone markers
            i += 2
            continue
        length = struct.unpack(">H", raw[i + 2 : i + 4])[0]
        if marker in _SOF_MARKERS:
            height, width = struct.unpack(">HH", raw[i + 5 : i + 9])
            return _checked(width, height)
        i += 2 + length
    return None
