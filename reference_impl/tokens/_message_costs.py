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
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from typing_extensions import assert_never

from reference_impl.tokens._image_size import part_size
from reference_impl.tokens._image_tokens import (
    AnthropicImageRule,
    anthropic_image_tokens,
)
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
    "REPLY_PRIMING",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "EstimateRules",
    "TextTokens",
    "file_tokens",
]

TextTokens = Callable[[str], int]
"""Tokens of a text in the counter's encoding."""

# [vendor] openai-cookbook "How to count tokens with tiktoken", section 6 (commit c81359cd):
# every message is <|start|>{role/name}\n{content}<|end|>\n (3), a name costs 1 more, and every
# reply is primed with <|start|>assistant<|message|> (3).
TOKENS_PER_MESSAGE: Final = 3
TOKENS_PER_NAME: Final = 1
REPLY_PRIMING: Final = 3

# Files: nothing in token-counting.md gives a formula. OpenAI and Anthropic both extract the text of a
# PDF and add an image of each page; Anthropic's PDF guide puts a page at 1,500-3,000 tokens. We take
# the upper end per page (an estimate that errs high), decode text-like files and count their text,
# and charge one page for a file we cannot read (URL, file id, unknown type).
PDF_TOKENS_PER_PAGE: Final = 3_000
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_TEXT_MEDIA = ("text/", "application/json", "application/xml", "application/x-yaml")


def file_tokens(part: FilePart, text_tokens: TextTokens) -> int:
    """Estimated tokens of a file part (decoded text for text media, a per-page figure for
    documents)."""
    media = part.media_type or ""
    if part.source != "base64":
        return PDF_TOKENS_PER_PAGE
    try:
        raw = base64.b64decode(part.data, validate=False)
    except (binascii.Error, ValueError):
        return PDF_TOKENS_PER_PAGE
    if media.startswith(_TEXT_MEDIA):
        return text_tokens(raw.decode("utf-8", errors="replace"))
    if media == "application/pdf" or raw.startswith(b"%PDF"):
        return PDF_TOKENS_PER_PAGE * max(1, len(_PDF_PAGE.findall(raw)))
    return PDF_TOKENS_PER_PAGE


# ----------------------------------------------------------------------------------- estimates


@dataclass(frozen=True, slots=True)
class EstimateRules:
    """Local estimate for shapes without a public tokenizer (Anthropic, Gemini, Bedrock).

    The content a provider would render (text, tool names and argument JSON, tool result text,
    visible thinking text) is counted with a tiktoken encoding, framed like an OpenAI message, and
    multiplied by ``safety_factor`` (rounded up per message). Images are counted with Anthropic's
    ``w*h/750`` rule (section 4c) and not multiplied: that formula is already in provider tokens.
    """

    text_tokens: TextTokens
    safety_factor: float
    image_rule: AnthropicImageRule

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
                return 0, anthropic_image_tokens(*part_size(part), self.image_rule)
            case FilePart():
                return file_tokens(part, self.text_tokens), 0
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
                case ToolResultPart():
                    counted += TOKENS_PER_MESSAGE + self.text_tokens(part.call_id)
                    for inner in part.content:
                        a, b = self._attachment(inner)
                        counted += a
                        provider += b
                case ReasoningPart():
                    counted += self.text_tokens(self._reasoning_text(part))
                case TextPart() | SummaryPart() | ImagePart() | FilePart():
                    a, b = self._attachment(part)
                    counted += a
                    provider += b
                case _:
                    assert_never(part)
        return self._scaled(counted) + provider

    def tools(self, tools: Sequence[ToolSpec]) -> int:
        """Name, description and the schema's JSON text per tool, times the safety factor."""
        counted = 0
        for tool in tools:
            counted += TOKENS_PER_MESSAGE + self.text_tokens(tool.name)
            counted += self.text_tokens(tool.description) + self.text_tokens(tool.parameters)
        return self._scaled(counted)
