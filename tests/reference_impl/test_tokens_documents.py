"""Documents, fetched references and Gemini images in the token counters
(``reference_impl/tokens/_pdf.py``, ``_message_costs.file_costs``, ``GeminiImageRule``)."""

from __future__ import annotations

import base64
import tracemalloc
import zlib

import pytest

from reference_impl.errors import TokenCountError
from reference_impl.tokens import EstimateCounter, counter_for
from reference_impl.tokens._estimate_constants import SHIPPED
from reference_impl.tokens._image_tokens import (
    AnthropicImageRule,
    GeminiImageRule,
    gemini_image_tokens,
)
from reference_impl.tokens._message_costs import FETCHED_FILE_TOKENS
from reference_impl.tokens._pdf import MAX_INFLATED_BYTES, pdf_page_count, pdf_text
from reference_impl.tokens.counters import gemini_generation
from reference_impl.tokens.encodings import get_encoding
from reference_impl.transcript import FilePart, ImagePart, Message, TextPart

O200K = get_encoding("o200k_base")


def _pdf(*contents: bytes, compress: bool = True, pages: int | None = None) -> bytes:
    """A small PDF: one page per content stream (or ``pages`` page objects)."""
    objects = [b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"]
    kids = pages if pages is not None else len(contents)
    objects.append(b"2 0 obj << /Type /Pages /Count %d >> endobj\n" % kids)
    objects.extend(
        b"%d 0 obj << /Type /Page /Parent 2 0 R >> endobj\n" % (10 + i) for i in range(kids)
    )
    for i, content in enumerate(contents):
        data = zlib.compress(content) if compress else content
        flt = b" /Filter /FlateDecode" if compress else b""
        objects.append(
            b"%d 0 obj << /Length %d%s >>\nstream\n" % (100 + i, len(data), flt)
            + data
            + b"\nendstream\nendobj\n"
        )
    return b"%PDF-1.4\n" + b"".join(objects) + b"%%EOF\n"


def _file(raw: bytes, media: str = "application/pdf") -> FilePart:
    return FilePart("base64", base64.b64encode(raw).decode(), media, "doc")


# ---------------------------------------------------------------------------------- PDF text


def test_pdf_text_reads_the_text_operators_of_plain_and_flate_streams() -> None:
    page = (
        b"BT /F1 24 Tf 100 700 Td (Hello, \\(small\\) world\\041) Tj "
        b"[(Kern) -120 (ing) 5 <20546578>] TJ (next) ' ET"
    )
    for compress in (True, False):
        assert pdf_text(_pdf(page, compress=compress)) == "Hello, (small) world! Kerning Tex next"


def test_pdf_text_skips_images_and_unknown_filters() -> None:
    image = b"1 0 obj << /Subtype /Image /Filter /DCTDecode /Length 12 >>\nstream\n(x) Tj junk\nendstream\n"
    assert pdf_text(b"%PDF-1.4\n" + image) == ""
    broken = b"1 0 obj << /Filter /FlateDecode >>\nstream\nnot zlib (x) Tj\nendstream\n"
    assert pdf_text(b"%PDF-1.4\n" + broken) == ""


def test_pdf_pages_are_the_page_objects() -> None:
    assert pdf_page_count(_pdf(b"", b"", b"")) == 3
    assert pdf_page_count(b"%PDF-1.4 nothing") == 1  # a document has at least one page


@pytest.mark.timeout(60)
def test_a_crafted_pdf_is_read_with_bounded_memory() -> None:
    bomb = zlib.compress(b"\x00" * (64 * 1024 * 1024), 9)
    crafted = (
        b"%PDF-1.4\n<< /Filter /FlateDecode >>\nstream\n"
        + bomb
        + b"\nendstream\n"
        + b"(" * 200_000
        + b"stream\nendstream" * 100_000
    )
    # Bounded work, without timing it: the 64 MiB the bomb inflates to is never held (at most
    # MAX_INFLATED_BYTES of it, beside the input and a copy), and the nested parentheses and the
    # 100,000 empty streams end (the test's timeout fails a run that backtracks for long).
    tracemalloc.start()
    try:
        assert pdf_text(crafted) == ""
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_INFLATED_BYTES < 64 * 1024 * 1024  # the inflated text and a copy


# ------------------------------------------------------------------------- what a file costs


def test_a_pdf_page_costs_its_image_plus_its_text() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    doc = _file(_pdf(b"BT (" + text.encode() + b") Tj ET", b"BT (end) Tj ET"))
    words = len(O200K.encode_ordinary(text + " end"))
    message = Message("user", (doc,))
    empty = Message("user", ())
    # Claude: the page image at the standard tier's cap, not multiplied by the safety factor;
    # the text is.
    for factor in (1.0, 1.3):
        claude = EstimateCounter(
            "anthropic-messages", safety_factor=factor, model="claude-sonnet-4-5"
        )
        cost = claude.count_message(message) - claude.count_message(empty)
        assert cost - 2 * AnthropicImageRule().max_tokens == pytest.approx(factor * words, abs=1)
    # OpenAI: the fitted page figure plus the text
    openai = counter_for("openai-chat", "gpt-4o")
    framed = openai.count_message(message) - openai.count_message(Message("user", (TextPart(""),)))
    assert framed == 2 * SHIPPED.openai_pdf_page + words
    # Gemini 3: its media-resolution page budget
    gemini = EstimateCounter("gemini", safety_factor=1.0, model="gemini-3-pro-preview")
    assert gemini.count_message(message) - gemini.count_message(empty) == 2 * 560 + words


def test_a_referenced_file_costs_the_allowance_and_the_allowance_is_configurable() -> None:
    url = Message("user", (FilePart("url", "https://example.com/a.pdf"),))
    image = Message("user", (ImagePart("url", "https://example.com/a.png"),))
    empty = Message("user", ())
    for shape, model in (("openai-chat", "gpt-4o"), ("anthropic-messages", "claude-sonnet-4-5")):
        default = counter_for(shape, model, safety_factor=None if "openai" in shape else 1.0)
        assert default.count_message(url) - default.count_message(empty) == FETCHED_FILE_TOKENS
        mine = counter_for(
            shape, model, safety_factor=None if "openai" in shape else 1.0, fetched_allowance=777
        )
        assert mine.count_message(url) - mine.count_message(empty) == 777
        assert mine.count_message(image) - mine.count_message(empty) == 777
    # without an allowance an image by URL costs the largest image its rule allows
    gpt = counter_for("openai-chat", "gpt-4o")
    assert gpt.count_message(image) - gpt.count_message(empty) == 85 + 8 * 170
    with pytest.raises(TokenCountError, match="fetched_allowance"):
        counter_for("openai-chat", "gpt-4o", fetched_allowance=-1)


def test_undecodable_or_binary_inline_files_cost_the_allowance() -> None:
    counter = EstimateCounter("anthropic-messages", safety_factor=1.0)
    empty = counter.count_message(Message("user", ()))
    docx = _file(b"PK\x03\x04 zipped", "application/vnd.openxmlformats")
    assert counter.count_message(Message("user", (docx,))) - empty == FETCHED_FILE_TOKENS


# ---------------------------------------------------------------------------- Gemini images


@pytest.mark.parametrize(
    ("model", "generation"),
    [
        ("gemini-3-pro-preview", 3),
        ("gemini-3.1-pro-preview", 3),
        ("models/gemini-2.5-flash", 2),
        ("gemini-2.0-flash", 2),
        ("gemini-pro", 0),
        (None, 0),
    ],
)
def test_gemini_generation(model: str | None, generation: int) -> None:
    assert gemini_generation(model) == generation


def test_gemini_image_rules() -> None:
    old = GeminiImageRule.for_generation(2)
    assert gemini_image_tokens(384, 384, old) == 258
    assert gemini_image_tokens(1000, 600, old) == 2 * 258  # two 768-px tiles
    new = GeminiImageRule.for_generation(3)
    assert gemini_image_tokens(128, 128, new) == 1120  # the recordings: 1,089 for a 128x128 PNG
    assert gemini_image_tokens(None, None, old) == 1120
