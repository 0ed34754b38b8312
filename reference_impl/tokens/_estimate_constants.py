"""The fitted constants of the token counters: one home.

Where no published rule exists, a counter adds a measured constant for input the provider adds
and the request does not carry. Each constant has a name, a value fitted on half of the public
recordings, and a *feature*: how many times a request incurs it (``fitted_features``). A counter
built with ``constants`` counts ``content + sum(value x feature)``, where content is what the
published rules and the rendered text give; ``ZERO`` gives the content alone, which is what the
calibration bench fits from.

The constants (``make calibrate`` prints the evidence request by request):

* ``<family>.request`` / ``<family>.with_tools`` (estimate shapes: Claude, Gemini, Nova):
  tokens the provider adds per request. Claude with tools: the hidden tool-use system prompt
  ([vendor] docs.anthropic.com tool-use pricing: "we also automatically include a special system
  prompt for the model which enables tool use"); Nova: its tool template. Gemini and Claude without
  tools: a few tokens. A text ratio fitted on one half did worse on the other half than an additive
  constant, so none is applied (the counter's ``safety_factor`` is the margin).
* ``claude.thinking``: a request with extended or adaptive thinking (Anthropic ``thinking``,
  Bedrock ``additionalModelRequestFields.thinking``/``reasoning_config``): 28-38 tokens more in
  every recording, whatever the conversation: the thinking instructions.
* ``claude.tool_call``: per ``tool_use`` block in the history. Claude renders a call and its
  result in a wrapper the JSON does not show; the recordings grow by 10-45 tokens more than the
  content per call and result.
* ``openai.pdf_page``: per PDF page for the OpenAI models: the page's image (the text the page
  draws is counted apart). Nothing published gives it.

**How the values below were obtained.** ``bench/calibrate_tokens.py`` splits the recordings in two
halves by file (a stable hash of the file name) and fits every constant on half ``FIT_HALF`` only,
by medians over the requests that incur it (``fit_constants`` there); the other half is the test
half. The bench prints the fit next to these values and the out-of-sample error both ways round;
the calibration tests check that these numbers equal the fit. Requests with input no local
counter can know (a URL the provider fetches, server-side state, server tools) are not fitted on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from reference_impl.tokens._message_costs import inline_pdf_pages
from reference_impl.transcript import FilePart, ToolCallPart, ToolResultPart, Transcript

__all__ = [
    "ESTIMATE_OVERHEADS",
    "FIT_HALF",
    "SHIPPED",
    "ZERO",
    "FamilyOverhead",
    "FittedConstants",
    "estimate_family",
    "estimate_overhead",
    "fitted_features",
    "thinking_enabled",
]

FIT_HALF: Final = 0
"""The half of the recordings (by file hash) the constants are fitted on; the other is the test."""

_FAMILIES: Final = ("claude", "gemini", "nova", "llama", "mistral")
_ESTIMATE_SHAPES: Final = ("anthropic-messages", "gemini", "bedrock-converse")
_OPENAI_SHAPES: Final = ("openai-chat", "openai-responses")


@dataclass(frozen=True, slots=True)
class FamilyOverhead:
    """Tokens the provider adds per request for a model family, without and with tools."""

    request: int
    with_tools: int


@dataclass(frozen=True, slots=True)
class FittedConstants:
    """One set of fitted constants (see the module docstring for what each one stands for)."""

    overheads: Mapping[str, FamilyOverhead] = field(default_factory=dict)
    claude_thinking: int = 0
    claude_tool_call: int = 0
    openai_pdf_page: int = 0

    def values(self) -> dict[str, int]:
        """Every constant by name (``claude.with_tools``, ``openai.pdf_page``...)."""
        out: dict[str, int] = {}
        for family, found in sorted(self.overheads.items()):
            out[f"{family}.request"] = found.request
            out[f"{family}.with_tools"] = found.with_tools
        out["claude.thinking"] = self.claude_thinking
        out["claude.tool_call"] = self.claude_tool_call
        out["openai.pdf_page"] = self.openai_pdf_page
        return out

    @staticmethod
    def from_values(values: Mapping[str, int]) -> FittedConstants:
        """The constants named in ``values`` (0 for any not named)."""
        families = sorted(
            {name.split(".", 1)[0] for name in values if name.endswith((".request", ".with_tools"))}
        )
        return FittedConstants(
            overheads={
                f: FamilyOverhead(values.get(f"{f}.request", 0), values.get(f"{f}.with_tools", 0))
                for f in families
            },
            claude_thinking=values.get("claude.thinking", 0),
            claude_tool_call=values.get("claude.tool_call", 0),
            openai_pdf_page=values.get("openai.pdf_page", 0),
        )

    def overhead(self, shape: str, model: str | None, *, tools: bool) -> int:
        """The family's per-request overhead for ``model`` (0 for a family without one)."""
        found = self.overheads.get(estimate_family(shape, model))
        if found is None:
            return 0
        return found.with_tools if tools else found.request


# Fitted on half 0 of ../shared/recordings + recordings-more (make calibrate); see the docstring.
SHIPPED: Final = FittedConstants(
    overheads={
        "claude": FamilyOverhead(request=-1, with_tools=541),
        "gemini": FamilyOverhead(request=-5, with_tools=-2),
        # Half 0 holds only nova-2-lite (and no Nova request without tools); nova-micro's template
        # is about 350 tokens, so this over-counts it (make calibrate prints the error).
        "nova": FamilyOverhead(request=0, with_tools=868),
    },
    claude_thinking=37,
    claude_tool_call=7,
    openai_pdf_page=216,
)
ZERO: Final = FittedConstants()
"""No fitted constant: the counters then count what the published rules and the text give."""

ESTIMATE_OVERHEADS: Final[Mapping[str, FamilyOverhead]] = SHIPPED.overheads


def estimate_family(shape: str, model: str | None) -> str:
    """The model family the constants are keyed by: claude (every Anthropic Messages request),
    gemini, nova, llama, mistral or other."""
    if shape == "anthropic-messages":
        return "claude"
    name = (model or "").lower().split("/")[-1]
    for family in _FAMILIES:
        if family in name:
            return family
    return "other"


def estimate_overhead(shape: str, model: str | None, *, tools: bool) -> int:
    """The shipped per-request overhead for ``model`` (0 for a family without constants)."""
    return SHIPPED.overhead(shape, model, tools=tools)


def _enabled(setting: object) -> bool:
    return isinstance(setting, Mapping) and setting.get("type") in ("enabled", "adaptive")


def thinking_enabled(transcript: Transcript) -> bool:
    """Whether the request turns Claude's extended (or adaptive) thinking on: Anthropic
    ``thinking``, Bedrock ``additionalModelRequestFields.thinking`` or ``reasoning_config``."""
    for key, text in transcript.params:
        if key not in ("thinking", "additionalModelRequestFields"):
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if key == "thinking" and _enabled(value):
            return True
        if isinstance(value, Mapping) and any(
            _enabled(value.get(k)) for k in ("thinking", "reasoning_config")
        ):
            return True
    return False


def _files(transcript: Transcript) -> Iterator[FilePart]:
    for message in transcript.messages:
        for part in message.parts:
            if isinstance(part, FilePart):
                yield part
            elif isinstance(part, ToolResultPart):
                yield from (p for p in part.content if isinstance(p, FilePart))


def fitted_features(shape: str, model: str | None, transcript: Transcript) -> dict[str, int]:
    """How many times ``transcript`` incurs each fitted constant, by name (only those it does):
    a counter built with ``constants`` counts what ``ZERO`` gives plus ``value x feature``."""
    out: dict[str, int] = {}
    if shape in _OPENAI_SHAPES:
        pages = sum(inline_pdf_pages(f) for f in _files(transcript))
        if pages:
            out["openai.pdf_page"] = pages
        return out
    if shape not in _ESTIMATE_SHAPES:
        return out
    family = estimate_family(shape, model)
    out[f"{family}.{'with_tools' if transcript.tools else 'request'}"] = 1
    if family == "claude":
        if thinking_enabled(transcript):
            out["claude.thinking"] = 1
        calls = sum(isinstance(p, ToolCallPart) for m in transcript.messages for p in m.parts)
        if calls:
            out["claude.tool_call"] = calls
    return out
