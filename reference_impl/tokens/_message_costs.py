"""What one message and one tool list cost in tokens of a local encoding: shared constants, files,
and the estimate rules for shapes without a public tokenizer (the OpenAI rules are in
``reference_impl.tokens._openai_costs``).

These are the accounting rules behind the counters in ``reference_impl.tokens``; they work on the
neutral transcript (never on a rendered body) so that a message costs the same wherever it sits
and can be memoized by its digest. Sources are in token-counting.md; where nothing official exists
the rule says what it assumes.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from typing_extensions import assert_never

from reference_impl.tokens._image_size import part_size
from reference_impl.tokens._image_tokens import (
    AnthropicImageRule,
    GeminiImageRule,
    anthropic_image_tokens,
    gemini_image_tokens,
)
from reference_impl.tokens._pdf import pdf_page_count, pdf_text
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)

__all__ = [
    "FETCHED_FILE_TOKENS",
    "REPLY_PRIMING",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "EstimateRules",
    "TextTokens",
    "file_costs",
    "inline_pdf_pages",
    "raw_block_content",
    "raw_blocks_tokens",
]

TextTokens = Callable[[str], int]
"""Tokens of a text in the counter's encoding."""

# [vendor] openai-cookbook "How to count tokens with tiktoken", section 6 (commit c81359cd):
# every message is <|start|>{role/name}\n{content}<|end|>\n (3), a name costs 1 more, and every
# reply is primed with <|start|>assistant<|message|> (3).
TOKENS_PER_MESSAGE: Final = 3
TOKENS_PER_NAME: Final = 1
REPLY_PRIMING: Final = 3

# Files. A PDF page goes into the context as an image of the page plus its text ([vendor]
# Anthropic's PDF support page; OpenAI's file inputs guide): ``page_tokens`` per page (the rule
# set's figure for the page image) plus the tokens of the text the pages draw (``_pdf``).
# Text-like files are decoded and their text counted. A file the request only references (URL,
# provider file id) or that cannot be read is input the provider fetches or decodes and the
# request does not carry: it is charged ``FETCHED_FILE_TOKENS``, a documented allowance (the
# counters take another one as ``fetched_allowance``). The calibration bench reports requests
# with such references apart: nothing local can count them.
FETCHED_FILE_TOKENS: Final = 3_000
_TEXT_MEDIA = ("text/", "application/json", "application/xml", "application/x-yaml")


def _inline_bytes(part: FilePart) -> bytes | None:
    """The bytes of an inline (base64) file; None for a reference or undecodable data."""
    if part.source != "base64":
        return None
    try:
        return base64.b64decode(part.data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _is_pdf(part: FilePart, raw: bytes) -> bool:
    return part.media_type == "application/pdf" or raw.startswith(b"%PDF")


def inline_pdf_pages(part: FilePart) -> int:
    """Pages of an inline PDF (0 for anything else): what a per-page constant is charged for."""
    raw = _inline_bytes(part)
    if raw is None or (part.media_type or "").startswith(_TEXT_MEDIA) or not _is_pdf(part, raw):
        return 0
    return pdf_page_count(raw)


def file_costs(
    part: FilePart, text_tokens: TextTokens, page_tokens: int, fetched: int = FETCHED_FILE_TOKENS
) -> tuple[int, int]:
    """(text tokens in the counter's encoding, tokens given in provider units) of a file part:
    decoded text for text media; for a PDF its pages' text and ``page_tokens`` per page; for
    what the request does not carry (a reference, undecodable data, other binary) ``fetched``."""
    raw = _inline_bytes(part)
    if raw is None:
        return 0, fetched
    if (part.media_type or "").startswith(_TEXT_MEDIA):
        return text_tokens(raw.decode("utf-8", errors="replace")), 0
    if _is_pdf(part, raw):
        text = pdf_text(raw)
        return (text_tokens(text) if text else 0), page_tokens * pdf_page_count(raw)
    return 0, fetched


# ------------------------------------------------------------------------------ raw wire blocks

_PAYLOAD_KEYS: Final = frozenset({"data", "bytes"})
_MEDIA_KEYS: Final = ("media_type", "mimeType", "mime_type")
_FORM_KEYS: Final = frozenset({"type", "cache_control", "cachePoint", *_MEDIA_KEYS})
"""Members that say what a block is or how to cache it, not what the model reads."""


def raw_block_content(block: object) -> tuple[str, int]:
    """(the text to count, the binary payloads) of a wire block that no neutral part holds (an
    Anthropic ``search_result``, text-source ``document`` or server tool block, a Bedrock
    ``guardContent``, a Gemini ``executableCode`` part; ``shapes.raw_wire_content``).

    How a provider renders such a block for the model is not documented per kind, so the text is
    every value in it, one per line (a title, a source, a document's text, a search result's
    content, a server call's input, opaque strings such as ``encrypted_content`` too: an estimate
    from above), but the members that only say what the block is (``type``, a media type,
    ``cache_control``) and its binary payloads: a ``bytes`` string, or a ``data`` string beside
    ``"type": "base64"`` or a media type that is not ``text/*``. Their bytes are no text; the
    counters charge each as a file they cannot read (``fetched``). A Bedrock ``cachePoint`` marks
    a cache boundary: no text."""
    texts: list[str] = []
    payloads = 0
    stack: list[object] = [block]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, inner in reversed(value.items()):
                if key in _FORM_KEYS:
                    continue
                if isinstance(inner, str) and _is_payload(key, value):
                    payloads += 1
                else:
                    stack.append(inner)
        elif isinstance(value, list):
            stack.extend(reversed(value))
        elif isinstance(value, str):
            texts.append(value)
        elif value is not None:
            texts.append(json.dumps(value))
    return "\n".join(texts), payloads


def raw_blocks_tokens(blocks: Sequence[object], text_tokens: TextTokens) -> tuple[int, int]:
    """(text tokens, binary payloads) of a message's raw blocks: each block's text
    (``raw_block_content``) framed like a message part."""
    counted = payloads = 0
    for block in blocks:
        text, found = raw_block_content(block)
        if text:
            counted += TOKENS_PER_MESSAGE + text_tokens(text)
        payloads += found
    return counted, payloads


def _is_payload(key: str, holder: dict[str, object]) -> bool:
    if key not in _PAYLOAD_KEYS:
        return False
    if key == "bytes" or holder.get("type") == "base64":
        return True
    media = next((holder[k] for k in _MEDIA_KEYS if k in holder), None)
    return isinstance(media, str) and not media.startswith("text/")


# ----------------------------------------------------------------------------------- estimates


@dataclass(frozen=True, slots=True)
class EstimateRules:
    """Local estimate for shapes without a public tokenizer (Anthropic, Gemini, Bedrock).

    The content a provider would render (text, tool names and argument JSON, tool result text,
    visible thinking text) is counted with a tiktoken encoding, framed like an OpenAI message, and
    multiplied by ``safety_factor`` (rounded up per message). Images are counted with Anthropic's
    ``w*h/750`` rule (section 4c), or Gemini's (``GeminiImageRule``), and not multiplied: those
    formulas are already in provider tokens. A PDF page costs ``page_tokens`` for its image
    (Claude: the standard tier's image cap, the recordings show a blank letter page at 1,587 and
    1,607 tokens; Gemini: its rule's page figure) plus its text. A file or image the request
    only references costs ``fetched`` (an image: the rule's largest image unless
    ``fetched_image`` is given). ``tool_call_tokens`` is a measured per-call constant (the
    wrapper a Claude call and its result are rendered in), not multiplied either.
    """

    text_tokens: TextTokens
    safety_factor: float
    image_rule: AnthropicImageRule | GeminiImageRule
    page_tokens: int = AnthropicImageRule().max_tokens
    fetched: int = FETCHED_FILE_TOKENS
    fetched_image: int | None = None
    tool_call_tokens: int = 0
    billed_reasoning: bool = False
    """Whether a reasoning artifact with a carried count (``ReasoningPart.tokens``) costs that
    count: Gemini 3 bills the thoughts behind a replayed signature of the current turn (the
    recordings: +138, +132, +49 and +1,009 tokens over the content against 132, 140, 59 and
    1,009 thought tokens reported by the response that produced it) and not those of earlier
    turns (1,001 thought tokens before the last user message: not billed); Gemini 2.5 bills
    none (+10 against 109). The per-message count charges every such artifact; the request
    overhead takes the earlier turns' back (``earlier_reasoning``)."""

    def _scaled(self, tiktoken_count: int) -> int:
        return math.ceil(tiktoken_count * self.safety_factor)

    def _attachment(self, part: TextPart | ImagePart | FilePart | SummaryPart) -> tuple[int, int]:
        """(tiktoken tokens, provider tokens) of one content part."""
        match part:
            case TextPart(text=text):
                return self.text_tokens(text), 0
            case SummaryPart():
                return self.text_tokens(part.wire_text()), 0
            case ImagePart():
                if part.source != "base64" and self.fetched_image is not None:
                    return 0, self.fetched_image
                if isinstance(self.image_rule, GeminiImageRule):
                    return 0, gemini_image_tokens(*part_size(part), self.image_rule)
                return 0, anthropic_image_tokens(*part_size(part), self.image_rule)
            case FilePart():
                return file_costs(part, self.text_tokens, self.page_tokens, self.fetched)
            case _:
                assert_never(part)

    def _reasoning_text(self, part: ReasoningPart) -> str:
        # Visible thinking text only; signatures and redacted data are opaque provider state.
        # Anthropic ignores thinking of earlier turns (section 5); we count it anyway so the
        # estimate errs high for the current tool loop, which does count.
        value = part.value()
        for key in ("thinking", "text", "reasoning_content", "reasoningText"):
            found = value.get(key)
            if isinstance(found, str):
                return found
            if isinstance(found, dict) and isinstance(found.get("text"), str):
                return str(found["text"])
        return ""

    def message(self, message: Message) -> int:
        """Estimated tokens of one message: text, tool parts, attachments and the per-message
        overhead."""
        counted = TOKENS_PER_MESSAGE + self.text_tokens(message.role)
        provider = 0
        for part in message.parts:
            match part:
                case ToolCallPart():
                    counted += TOKENS_PER_MESSAGE + self.text_tokens(part.name)
                    counted += self.text_tokens(part.arguments) + self.text_tokens(part.id)
                    provider += self.tool_call_tokens
                case ToolResultPart():
                    counted += TOKENS_PER_MESSAGE + self.text_tokens(part.call_id)
                    for inner in part.content:
                        a, b = self._attachment(inner)
                        counted += a
                        provider += b
                case ReasoningPart():
                    if self.billed_reasoning and part.tokens is not None:
                        provider += part.tokens
                    else:
                        counted += self.text_tokens(self._reasoning_text(part))
                case TextPart() | SummaryPart() | ImagePart() | FilePart():
                    a, b = self._attachment(part)
                    counted += a
                    provider += b
                case _:
                    assert_never(part)
        return self._scaled(counted) + provider

    def earlier_reasoning(self, messages: Sequence[Message]) -> int:
        """What the per-message counts charge for carried reasoning counts before the last user
        message, which the provider does not bill (``billed_reasoning``)."""
        if not self.billed_reasoning:
            return 0
        last_user = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), -1
        )
        return sum(
            part.tokens
            for message in messages[:last_user]
            if message.role == "assistant"
            for part in message.parts
            if isinstance(part, ReasoningPart) and part.tokens is not None
        )

    def raw_blocks(self, blocks: Sequence[object]) -> int:
        """Tokens of a message's wire blocks that no neutral part holds (``raw_block_content``):
        their text framed like a part and times the safety factor, each binary payload at
        ``fetched``."""
        counted, payloads = raw_blocks_tokens(blocks, self.text_tokens)
        return self._scaled(counted) + payloads * self.fetched

    def tools(self, tools: Sequence[ToolSpec]) -> int:
        """Name, description and the schema's JSON text per tool, times the safety factor."""
        counted = 0
        for tool in tools:
            counted += TOKENS_PER_MESSAGE + self.text_tokens(tool.name)
            counted += self.text_tokens(tool.description) + self.text_tokens(tool.parameters)
        return self._scaled(counted)
