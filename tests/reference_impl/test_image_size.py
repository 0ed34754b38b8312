"""Image sizes read from header bytes, checked against files written by a real encoder."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from reference_impl.tokens._image_size import image_size, image_size_from_base64


def _png(width: int, height: int) -> bytes:
    """A valid 1-bit grayscale PNG of the given size (zlib-compressed zero rows)."""
    row = b"\0" + b"\0" * ((width + 7) // 8)
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def _gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def _jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    dqt = b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + b"\x01" * 64
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + dqt + sof + b"\xff\xd9"


@pytest.mark.parametrize("make", [_png, _gif, _jpeg])
@pytest.mark.parametrize(("width", "height"), [(1, 1), (1024, 1024), (2048, 4096), (1800, 2400)])
def test_formats(make, width: int, height: int) -> None:
    raw = make(width, height)
    assert image_size(raw) == (width, height)
    assert image_size_from_base64(base64.b64encode(raw).decode()) == (width, height)


def test_png_written_by_zlib_round_trips_through_a_decoder() -> None:
    # Independent check of the PNG writer itself: the IDAT decompresses to height rows.
    raw = _png(17, 5)
    idat_len = struct.unpack(">I", raw[33:37])[0]
    rows = zlib.decompress(raw[41 : 41 + idat_len])
    assert len(rows) == 5 * (1 + 3)


def test_webp_vp8x() -> None:
    body = (
        b"VP8X"
        + struct.pack("<I", 10)
        + b"\x00\x00\x00\x00"
        + (639).to_bytes(3, "little")
        + (479).to_bytes(3, "little")
    )
    raw = b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body
    assert image_size(raw) == (640, 480)


@pytest.mark.parametrize(
    "data", ["", "not base64 at all!!", base64.b64encode(b"plain text").decode()]
)
def test_unknown_gives_none(data: str) -> None:
    assert image_size_from_base64(data) is None


@settings(max_examples=examples(200))
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(raw: bytes) -> None:
    size = image_size(raw)
    assert size is None or (size[0] > 0 and size[1] > 0)


def test_large_image_is_not_decoded_whole() -> None:
    raw = _png(4000, 3000) + b"\0" * (5 * 2**20)
    encoded = base64.b64encode(raw).decode()
    assert image_size_from_base64(encoded) == (4000, 3000)
    # Only the head is decoded: a truncated copy of the same data gives the same answer.
    assert image_size_from_base64(encoded[:4096]) == (4000, 3000)


def _webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    body = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + bits.to_bytes(4, "little")
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


@pytest.mark.parametrize("make", [_png, _gif, _webp_vp8l])
def test_a_png_gif_or_webp_size_is_read_from_the_first_64_characters_alone(
    make, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every image of a session is sized on the counting path: these headers fit in 48 bytes, so
    # one decode of 64 characters reads them, however large the image.
    from reference_impl.tokens import _image_size

    decoded: list[int] = []
    real = base64.b64decode

    def spy(data: str, validate: bool = False) -> bytes:
        decoded.append(len(data))
        return real(data, validate=validate)

    monkeypatch.setattr(_image_size.base64, "b64decode", spy)
    encoded = base64.b64encode(make(1800, 2400) + b"\0" * 100_000).decode()
    assert image_size_from_base64(encoded) == (1800, 2400)
    assert decoded == [64]


@pytest.mark.parametrize("exif_bytes", [0, 10, 30, 2_900, 3_040])
def test_a_jpeg_size_past_each_window_is_read_from_the_next(exif_bytes: int) -> None:
    # Around the first windows' ends (48 bytes, then 3 KiB): the SOF marker just inside, just
    # outside; a longer window is decoded only when the shorter one held no header.
    app1 = b"\xff\xe1" + struct.pack(">H", exif_bytes + 2) + b"\x00" * exif_bytes
    raw = _jpeg(1800, 2400)
    raw = raw[:2] + app1 + raw[2:]
    assert image_size_from_base64(base64.b64encode(raw).decode()) == (1800, 2400)


@pytest.mark.parametrize("exif_bytes", [100, 3_000, 3_100, 20_000, 47_000])
def test_a_jpeg_whose_size_comes_after_a_large_exif_segment(exif_bytes: int) -> None:
    # The first bytes decoded hold no SOF marker when an APP1 (EXIF) segment fills them: the
    # size is still read, from a longer head (up to 48 KiB of bytes).
    app1 = b"\xff\xe1" + struct.pack(">H", exif_bytes + 2) + b"\x00" * exif_bytes
    raw = _jpeg(1800, 2400)
    raw = raw[:2] + app1 + raw[2:] + b"\0" * 100_000
    assert image_size_from_base64(base64.b64encode(raw).decode()) == (1800, 2400)


def test_a_header_beyond_what_is_read_gives_none() -> None:
    app1 = b"\xff\xe1" + struct.pack(">H", 60_002) + b"\x00" * 60_000
    raw = _jpeg(1800, 2400)
    assert image_size_from_base64(base64.b64encode(raw[:2] + app1 + raw[2:]).decode()) is None


@pytest.mark.parametrize(
    ("width", "height", "detail", "expected"),
    # token-counting.md section 4a (cookbook tile formula, gpt-4o class): 765, 1105, 85
    [(1024, 1024, "high", 765), (2048, 4096, "high", 1105), (1024, 1024, "low", 85)],
)
def test_inline_image_reaches_the_tile_formula_golden_vectors(
    width: int, height: int, detail: str, expected: int
) -> None:
    from reference_impl.tokens import counter_for
    from reference_impl.transcript import ImagePart, Message, TextPart

    counter = counter_for("openai-chat", "gpt-4o")
    image = ImagePart("base64", base64.b64encode(_png(width, height)).decode(), "image/png", detail)  # type: ignore[arg-type]
    with_image = Message("user", (TextPart("x"), image))
    without = Message("user", (TextPart("x"),))
    assert counter.count_message(with_image) - counter.count_message(without) == expected
