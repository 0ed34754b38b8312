"""What one message and one tool list cost, per shape, in tokens of a local encoding.

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
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from typing_extensions import assert_never

from reference_impl._image_tokens import (
    AnthropicImageRule,
    PatchRule,
    TileRule,
    anthropic_image_tokens,
    patch_image_tokens,
    tile_image_tokens,
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
    "OpenAIRules",
    "ToolConstants",
    "file_tokens",
]

TextTokens = Callable[[str], int]

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
# No official rule for tool calls (section 2): 3 stands for the recipient header around a call.
TOOL_CALL_OVERHEAD: Final = 3
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_TEXT_MEDIA = ("text/", "application/json", "application/xml", "application/x-yaml")


def file_tokens(part: FilePart, text_tokens: TextTokens) -> int:
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


# ------------------------------------------------------------------------------------ OpenAI


@dataclass(frozen=True, slots=True)
class ToolConstants:
    """[vendor] cookbook ``num_tokens_for_tools`` (section 3a): gpt-4o class 7/3/3/-3/3/12,
    gpt-3.5-turbo/gpt-4 (cl100k_base) 10/3/3/-3/3/12."""

    func_init: int
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12

    @staticmethod
    def for_encoding(encoding: str) -> ToolConstants:
        return ToolConstants(func_init=10 if encoding == "cl100k_base" else 7)


def _strip_period(text: str) -> str:
    return text.removesuffix(".")


# Schema keys the cookbook line covers; anything else in a property (nested ``properties``,
# ``items``, ``anyOf`` …) is not in the cookbook, and we count its JSON text so nesting never
# makes a schema look free. That extension does not touch the cookbook's golden example.
_COOKBOOK_PROPERTY_KEYS: Final = frozenset({"type", "description", "enum"})


@dataclass(frozen=True, slots=True)
class OpenAIRules:
    """Chat Completions and Responses accounting.

    Messages follow the cookbook (section 2). Nothing official exists for tool calls, tool results,
    content arrays or reasoning items (section 2, last paragraph; section 7 rule 2), so:

    * a content array costs the sum of its parts (text encoded, images by formula, files by
      ``file_tokens``);
    * a tool call costs ``tokens(name) + tokens(arguments) + TOOL_CALL_OVERHEAD`` (langchain-openai
      counts name + arguments; the overhead stands for the ``functions.<name>`` recipient header);
    * each tool result is its own message on the wire (Chat ``role: tool``, Responses
      ``function_call_output``): the 3-token frame, the role, the output, and the call id, which the
      cookbook's "every value is counted" loop would count;
    * a Responses reasoning item costs its summary text (its encrypted content is opaque to us);
      DeepSeek ``reasoning_content`` costs its text.
    """

    text_tokens: TextTokens
    image_rule: TileRule | PatchRule
    tool_constants: ToolConstants
    responses: bool = False

    def image(self, part: ImagePart) -> int:
        if isinstance(self.image_rule, PatchRule):
            return patch_image_tokens(part.width, part.height, self.image_rule)
        return tile_image_tokens(part.width, part.height, part.detail, self.image_rule)

    def _content(self, part: TextPart | ImagePart | FilePart | SummaryPart) -> int:
        match part:
            case TextPart(text=text):
                return self.text_tokens(text)
            case SummaryPart():
                return self.text_tokens(part.wire_text())
            case ImagePart():
                return self.image(part)
            case FilePart():
                return file_tokens(part, self.text_tokens)
            case _:
                assert_never(part)

    def _frame(self, role: str, name: str | None = None) -> int:
        tokens = TOKENS_PER_MESSAGE + self.text_tokens(role)
        if name is not None:
            tokens += self.text_tokens(name) + TOKENS_PER_NAME
        return tokens

    def _reasoning(self, part: ReasoningPart) -> int:
        value = part.value()
        if part.origin == "deepseek":
            return self.text_tokens(str(value.get("reasoning_content") or ""))
        if part.origin == "openai-responses":
            summary = value.get("summary")
            texts = (
                [s.get("text", "") for s in summary if isinstance(s, dict)]
                if isinstance(summary, list)
                else []
            )
            return TOKENS_PER_MESSAGE + sum(self.text_tokens(str(t)) for t in texts)
        return 0  # other shapes' artifacts cannot travel in an OpenAI body (render raises)

    def _call(self, part: ToolCallPart) -> int:
        tokens = TOOL_CALL_OVERHEAD + self.text_tokens(part.name)
        tokens += self.text_tokens(part.arguments)
        if self.responses:  # a function_call item carries its call_id as a value
            tokens += self.text_tokens(part.id)
        return tokens

    def message(self, message: Message) -> int:
        if message.role == "tool":
            tokens = 0
            trailing: list[TextPart | ImagePart | FilePart | SummaryPart] = []
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    tokens += self._frame("tool") + self.text_tokens(part.call_id)
                    tokens += sum(self._content(p) for p in part.content)
                elif isinstance(part, TextPart | ImagePart | FilePart | SummaryPart):
                    trailing.append(part)
            if trailing:  # text after the results travels as its own user message
                tokens += self._frame("user") + sum(self._content(p) for p in trailing)
            return tokens
        content = [
            p for p in message.parts if isinstance(p, TextPart | ImagePart | FilePart | SummaryPart)
        ]
        tokens = sum(self._call(c) for c in message.tool_calls)
        tokens += sum(self._reasoning(p) for p in message.parts if isinstance(p, ReasoningPart))
        if self.responses and message.tool_calls and not content:
            return tokens  # Responses: function_call items only, no message item
        return tokens + self._frame(message.role, message.name) + sum(map(self._content, content))

    def tools(self, tools: Sequence[ToolSpec]) -> int:
        """[vendor] cookbook ``num_tokens_for_tools`` (section 3a), plus nested schema text."""
        if not tools:
            return 0
        c = self.tool_constants
        tokens = 0
        for tool in tools:
            tokens += c.func_init
            tokens += self.text_tokens(f"{tool.name}:{_strip_period(tool.description)}")
            properties = tool.parameters_value().get("properties")
            if isinstance(properties, dict) and properties:
                tokens += c.prop_init
                for key, schema in properties.items():
                    tokens += c.prop_key
                    spec = schema if isinstance(schema, dict) else {}
                    enum = spec.get("enum")
                    if isinstance(enum, list):
                        tokens += c.enum_init
                        for item in enum:
                            tokens += c.enum_item + self.text_tokens(str(item))
                    p_type = spec.get("type", "")
                    p_desc = _strip_period(str(spec.get("description", "")))
                    tokens += self.text_tokens(f"{key}:{p_type}:{p_desc}")
                    extra = {k: v for k, v in spec.items() if k not in _COOKBOOK_PROPERTY_KEYS}
                    if extra:
                        tokens += self.text_tokens(json.dumps(extra, sort_keys=True))
        return tokens + c.func_end


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
                return 0, anthropic_image_tokens(part.width, part.height, self.image_rule)
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
