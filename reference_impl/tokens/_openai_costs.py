"""What OpenAI Chat Completions and Responses requests cost, modelled on how the model reads them.

The model never sees JSON: the server renders a request into one prompt of framed messages
(``<|start|>{header}<|message|>{content}<|end|>``) and tokenizes it. Counting that prompt needs a
model of the rendering. Two families exist:

* **ChatML** (gpt-3.5, gpt-4, gpt-4o, gpt-4.1 …). [vendor] cookbook "How to count tokens with
  tiktoken" section 6: 3 tokens per message (the frame), the role, the content, a name costs 1
  more, and the reply is primed with ``<|start|>assistant<|message|>`` (3). Matches the API on the
  notebook examples (124/129).
* **Harmony** (reasoning models: o1/o3/o4, gpt-5 except ``*-chat*``, gpt-oss). [vendor]
  openai-cookbook ``articles/openai-harmony.md`` documents the format for gpt-oss: the same
  3-token frame; an assistant message in the history carries its channel
  (``<|channel|>final``, 2 tokens); the reply primer is ``<|start|>assistant`` (2 tokens: the
  model writes the channel itself). Calibrated, not vendor-documented for the hosted models:
  gpt-5 on openai_responses/400_reasoning_without_following_item #0 (13 = 11 + 2) and #2
  (142, two assistant messages with their channel) matches exactly.

Tool calls and results (nothing official for ChatML; harmony documents them for gpt-oss):

* a call is an assistant message addressed to the function: ChatML
  ``<|start|>assistant to=functions.NAME<|message|>ARGS<|end|>``; harmony
  ``<|start|>assistant<|channel|>commentary to=functions.NAME<|message|>ARGS<|call|>`` (the
  guide's optional ``<|constrain|>json`` is left out: gpt-5-mini's history grew by 35 tokens for
  one call and its result in openai_chat/single_tool_followup #0 -> #1; 36 without it, 39 with it);
* a result is a message *authored by the function* (harmony guide: "The specific tool name will be
  used as the role inside a message"): ChatML ``<|start|>functions.NAME<|message|>OUT<|end|>``,
  harmony ``<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>OUT<|end|>``. The
  ``tool_call_id`` is API plumbing and is not rendered;
* ChatML parallel calls (two or more in one assistant turn) are one call to
  ``multi_tool_use.parallel`` whose arguments are
  ``{"tool_uses":[{"recipient_name":"functions.NAME","parameters":ARGS},…]}`` with each call's
  arguments re-serialized compactly ([community]: models leak this pseudo-tool, e.g. opencode's
  system prompt and its removal in anomalyco/opencode#39042). Calibrated on
  openai_chat/parallel_2_tools_followup_otel #1: 99 reported, 99 counted (separate call messages
  would give 85, the verbatim argument text 101). A single call keeps its argument text verbatim
  (openai_chat/three_turn_tool_history_openllmetry: 39 counted, 40 reported).

**Ring attribution.** A result's header names the function, which only its call knows. Rings
travel whole (kept or dropped as a unit, provider rules C1/R1), so the header of each result is
charged to the assistant message that made the call, and a ``tool`` message costs its frames and
outputs. The sum over a valid request is the same; each message's count stays a function of that
message alone, so it can be memoized by digest.

Tool schemas: the TypeScript-namespace rendering (``_tool_namespace``). ChatML: ``tokens(namespace)
+ 9``, 4 fewer when a system message exists ([lib] litellm, [community] hmarr/openai-chat-tokens;
reproduces the cookbook's 101/105). We read the 4 as the frame and role of a system message of the
tools' own, not needed when one exists. ``count_tools`` gives the larger ``namespace + 9`` (a caller
that budgets tools apart from the messages then never counts low) and the request overhead takes
the 4 back when a system message carries them, so ``overhead`` can be negative.
Harmony: a developer message ``# Tools\\n\\n## functions\\n\\n<namespace>`` (harmony guide).

**The harmony system message.** [vendor] The harmony guide renders a system message first
(identity, knowledge cutoff, date, reasoning effort, the valid channels and, with tools, the line
sending tool calls to the commentary channel): 61 tokens with its frame, 75 with the tools line.
gpt-oss's open chat template always sends it (a gateway's gpt-oss-120b: 79 reported, 18 + 61
counted). OpenAI's hosted reasoning models show it in Chat Completions when tools are offered
(gpt-5-mini/nano: 72-90 tokens over the content, 75 predicted) and not otherwise: not without
tools (gpt-5-mini 15 reported, 15 counted) and not in Responses, where requests with tools match
within 2 tokens without it.

**Reasoning items** (Responses). The item's text is encrypted; the model reads its reasoning
tokens, which the response that produced the item reported (``ReasoningPart.tokens``, carried by
the Responses parser). A replayed item costs exactly that count, frame included: three replayed
items in one recording cost 45, 143 and 339 tokens against 45, 98 + 45 and 196 + 143 reported.
The summary is not input. Items before the last user message are dropped by the server
([community] openai-agents-python#2203: "if thinking tokens are sent back, most reasoning models
will drop them server-side"; a replayed item from an earlier turn cost 0 in the recordings) unless
``reasoning.context`` is ``all_turns``; the per-message count charges every item (it cannot see
the turn) and the request overhead takes the earlier ones back. An item whose count is unknown
(built from a request body, not a response) falls back to its frame and summary text, which
undercounts: the calibration bench reports such requests.

**Files.** A PDF page costs ``page_tokens`` (the fitted ``openai.pdf_page``: the page's image;
the text is counted apart); a file or image the request only references (URL, file id) costs
the ``fetched`` allowance (an image: the rule's largest image unless ``fetched_image`` is given).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Final

from reference_impl.tokens._image_size import part_size
from reference_impl.tokens._image_tokens import (
    PatchRule,
    TileRule,
    patch_image_tokens,
    tile_image_tokens,
)
from reference_impl.tokens._message_costs import (
    FETCHED_FILE_TOKENS,
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TextTokens,
    file_costs,
    raw_blocks_tokens,
)
from reference_impl.tokens._tool_namespace import render_namespace
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from reference_impl.transcript.model import INSTRUCTION_ROLES

__all__ = [
    "HARMONY_CHANNEL",
    "HARMONY_REPLY_PRIMING",
    "HARMONY_SYSTEM",
    "HARMONY_SYSTEM_TOOLS_LINE",
    "TOOLS_OWN_MESSAGE",
    "TOOLS_SHARE_SYSTEM",
    "OpenAIRules",
    "harmony_system_policy",
    "is_harmony_model",
]

# Harmony (see module docstring): ``<|channel|>final`` on every assistant message in the history,
# and the reply primed with ``<|start|>assistant`` only.
HARMONY_CHANNEL: Final = 2
HARMONY_REPLY_PRIMING: Final = 2
# ChatML tools ([lib] litellm, [community] hmarr): +9 on top of the namespace text, -4 when a
# system message is present (the namespace joins it: no frame and role of its own).
TOOLS_OWN_MESSAGE: Final = 9
TOOLS_SHARE_SYSTEM: Final = -4
_HARMONY_TOOLS_HEADER: Final = "# Tools\n\n## functions\n\n"

_REASONING_PREFIXES: Final = ("o1", "o3", "o4", "gpt-5", "gpt-oss")

# [vendor] openai-cookbook articles/openai-harmony.md, the rendered system message (the date and
# cutoff vary; their token counts do not). The tools line follows when functions are offered.
HARMONY_SYSTEM: Final = (
    "You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n"
    "Current date: 2025-06-28\n\n"
    "Reasoning: medium\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message."
)
HARMONY_SYSTEM_TOOLS_LINE: Final = (
    "\nCalls to these tools must go to the commentary channel: 'functions'."
)


def is_harmony_model(model: str | None) -> bool:
    """Reasoning models (o-series, gpt-5 except its ``-chat`` variants, gpt-oss) use harmony."""
    if not model:
        return False
    bare = model.strip().rsplit("/", 1)[-1]
    return bare.startswith(_REASONING_PREFIXES) and "-chat" not in bare


def harmony_system_policy(model: str | None, shape: str) -> str:
    """When the harmony system message is part of the prompt: ``always`` (gpt-oss, whose open
    template sends it), ``with_tools`` (hosted reasoning models in Chat Completions), ``never``."""
    if not is_harmony_model(model):
        return "never"
    if (model or "").strip().rsplit("/", 1)[-1].startswith("gpt-oss"):
        return "always"
    return "with_tools" if shape == "openai-chat" else "never"


def _compact_arguments(arguments: str) -> object:
    """Call arguments as the server re-serializes them inside ``multi_tool_use.parallel``."""
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments  # not JSON: the text travels as a string


@dataclass(slots=True, eq=False)
class OpenAIRules:
    """Per-message and per-tool-list token counts for the OpenAI shapes (see module docstring).

    Counts of constant strings (roles, headers built from tool names) are cached: they repeat on
    every message of a session.
    """

    text_tokens: TextTokens
    image_rule: TileRule | PatchRule
    _: KW_ONLY
    harmony: bool = False
    responses: bool = False
    harmony_system: str = "never"
    page_tokens: int = 0
    fetched: int = FETCHED_FILE_TOKENS
    fetched_image: int | None = None
    saw_reasoning: bool = field(default=False, init=False)
    """Set once a Responses reasoning item is counted: until then no request can hold one,
    and ``earlier_reasoning`` has nothing to look for."""
    _const: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    # -- small pieces ------------------------------------------------------------------------

    def constant(self, text: str) -> int:
        """Tokens of a string that repeats across messages (role, call header), cached."""
        found = self._const.get(text)
        if found is None:
            found = self.text_tokens(text)
            if len(self._const) < 4096:  # bounded: tool names come from requests
                self._const[text] = found
        return found

    @property
    def reply_priming(self) -> int:
        """Tokens the reply's priming adds once per request (Harmony models prime differently)."""
        return HARMONY_REPLY_PRIMING if self.harmony else REPLY_PRIMING

    def image(self, part: ImagePart) -> int:
        """Tokens of one image under the model's tile or patch rule (``fetched_image`` for an
        image the request only references, when given)."""
        if part.source != "base64" and self.fetched_image is not None:
            return self.fetched_image
        if isinstance(self.image_rule, PatchRule):
            return patch_image_tokens(*part_size(part), self.image_rule)
        return tile_image_tokens(*part_size(part), part.detail, self.image_rule)

    def raw_blocks(self, blocks: Sequence[object]) -> int:
        """Tokens of a message's wire blocks that no neutral part holds (``raw_block_content``):
        their text framed like a part, each binary payload at ``fetched``."""
        counted, payloads = raw_blocks_tokens(blocks, self.text_tokens)
        return counted + payloads * self.fetched

    def _content(self, part: Part) -> int:
        if isinstance(part, TextPart):
            return self.text_tokens(part.text) if part.text else 0
        if isinstance(part, SummaryPart):
            return self.text_tokens(part.wire_text())
        if isinstance(part, ImagePart):
            return self.image(part)
        if isinstance(part, FilePart):
            return sum(file_costs(part, self.text_tokens, self.page_tokens, self.fetched))
        return 0  # calls, results and reasoning are counted by their own rules

    def _frame(self, role: str, name: str | None = None) -> int:
        tokens = TOKENS_PER_MESSAGE + self.constant(role)
        if name is not None:
            tokens += self.text_tokens(name) + TOKENS_PER_NAME
        if role == "assistant" and self.harmony:
            tokens += HARMONY_CHANNEL
        return tokens

    # -- calls, results, reasoning -------------------------------------------------------------

    def _result_header(self, name: str) -> int:
        """The header of the result message that answers a call to ``name`` (ring attribution)."""
        if self.harmony:  # functions.NAME to=assistant<|channel|>commentary
            return self.constant(f"functions.{name} to=assistant") + 1 + self.constant("commentary")
        return self.constant(f"functions.{name}")

    def _calls(self, calls: Sequence[ToolCallPart]) -> int:
        if self.harmony:  # one commentary message per call
            return sum(
                TOKENS_PER_MESSAGE
                + 1  # <|channel|>
                + self.constant("assistant")
                + self.constant(f"commentary to=functions.{c.name}")
                + self.text_tokens(c.arguments)
                + self._result_header(c.name)
                for c in calls
            )
        headers = sum(self._result_header(c.name) for c in calls)
        if len(calls) == 1:
            call = calls[0]
            return (
                TOKENS_PER_MESSAGE
                + self.constant(f"assistant to=functions.{call.name}")
                + self.text_tokens(call.arguments)
                + headers
            )
        wrapper = {
            "tool_uses": [
                {
                    "recipient_name": f"functions.{c.name}",
                    "parameters": _compact_arguments(c.arguments),
                }
                for c in calls
            ]
        }
        text = json.dumps(wrapper, separators=(",", ":"), ensure_ascii=False)
        return (
            TOKENS_PER_MESSAGE
            + self.constant("assistant to=multi_tool_use.parallel")
            + self.text_tokens(text)
            + headers
        )

    def _reasoning(self, part: ReasoningPart) -> int:
        value = part.value()
        if part.origin == "deepseek":
            return self.text_tokens(str(value.get("reasoning_content") or ""))
        if part.origin == "openai-responses":
            self.saw_reasoning = True
            if part.tokens is not None:  # the reasoning tokens, frame included (module docstring)
                return part.tokens
            # Unknown count: an analysis-channel message whose summary stands in (undercounts).
            summary = value.get("summary")
            texts = (
                [str(s.get("text", "")) for s in summary if isinstance(s, dict)]
                if isinstance(summary, list)
                else []
            )
            return self._frame("assistant") + sum(map(self.text_tokens, texts))
        return 0  # other shapes' artifacts cannot travel in an OpenAI body (render raises)

    # -- messages -----------------------------------------------------------------------------

    def _tool_message(self, message: Message) -> int:
        tokens = 0
        trailing = 0
        has_trailing = False
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                # The header naming the function is charged to its call (ring attribution).
                tokens += TOKENS_PER_MESSAGE + sum(self._content(p) for p in part.content)
            else:  # text after the results travels as its own user message
                trailing += self._content(part)
                has_trailing = True
        if has_trailing:
            tokens += self._frame("user") + trailing
        return tokens

    def message(self, message: Message) -> int:
        """Tokens of one message as OpenAI counts it, per-message overhead included."""
        parts = message.parts
        role = message.role
        if role == "tool":
            return self._tool_message(message)
        if len(parts) == 1 and isinstance(parts[0], TextPart):  # the common case, kept cheap
            return self._frame(role, message.name) + self._content(parts[0])
        tokens = 0
        calls: list[ToolCallPart] = []
        run_open = False  # a run of content parts is one message (Responses: one item)
        for part in parts:
            if isinstance(part, ToolCallPart):
                calls.append(part)
                run_open = False
            elif isinstance(part, ReasoningPart):
                tokens += self._reasoning(part)
                run_open = False
            else:
                if not run_open:
                    tokens += self._frame(role, message.name)
                    run_open = True
                tokens += self._content(part)
        if calls:
            tokens += self._calls(calls)
        elif not parts:
            tokens += self._frame(role, message.name)  # an empty message is still a message
        return tokens

    # -- tools ----------------------------------------------------------------------------------

    def tools(self, tools: Sequence[ToolSpec]) -> int:
        """The namespace text plus the frame of a message of its own; ChatML's -4 when a system
        message carries the tools instead is in ``overhead`` (it depends on the messages)."""
        if not tools:
            return 0
        namespace = render_namespace(tools)
        if self.harmony:  # a developer message of its own
            return (
                TOKENS_PER_MESSAGE
                + self.constant("developer")
                + self.text_tokens(_HARMONY_TOOLS_HEADER + namespace)
            )
        return self.text_tokens(namespace) + TOOLS_OWN_MESSAGE

    def harmony_system_tokens(self, tools: bool) -> int:
        """The harmony system message with its frame, when this model gets it (module docstring)."""
        if self.harmony_system == "never" or (self.harmony_system == "with_tools" and not tools):
            return 0
        text = HARMONY_SYSTEM + (HARMONY_SYSTEM_TOOLS_LINE if tools else "")
        return self._frame("system") + self.constant(text)

    def earlier_reasoning(self, messages: Sequence[Message]) -> int:
        """What the per-message counts charge for reasoning items before the last user message,
        which the server drops (module docstring)."""
        if not self.saw_reasoning:  # every message was counted first: none holds an item
            return 0
        last_user = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), -1
        )
        return sum(
            self._reasoning(part)
            for message in messages[:last_user]
            if message.role == "assistant"
            for part in message.parts
            if isinstance(part, ReasoningPart) and part.origin == "openai-responses"
        )

    def overhead(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        all_turns_reasoning: bool = False,
    ) -> int:
        """Reply priming, (ChatML) -4 when the tools share an existing system message, the
        harmony system message, and (Responses) minus the earlier turns' reasoning items."""
        tokens = self.reply_priming + self.harmony_system_tokens(bool(tools))
        if tools and not self.harmony and any(m.role in INSTRUCTION_ROLES for m in messages):
            tokens += TOOLS_SHARE_SYSTEM
        if self.responses and not all_turns_reasoning:
            tokens -= self.earlier_reasoning(messages)
        return tokens
