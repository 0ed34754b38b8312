"""Token counting: the ``TokenCounter`` protocol, its local counters, and ``counter_for``.

A counter is bound to one shape (per-message overhead differs per shape) and says who it is in
``name``, so reports can state which counter produced a number:

* ``tiktoken:o200k_base/openai-chat``: the cookbook formula over a verified offline encoding;
* ``estimate:anthropic(x1.30,o200k)``: a tiktoken count of the rendered content times an explicit
  safety factor (no public Claude tokenizer exists, token-counting.md section 5);
* ``anthropic:count_tokens(claude-…)`` / ``openai:responses.input_tokens(gpt-…)``: the providers'
  count endpoints (``reference_impl.tokens.apis``), used only when configured.

Per-message counts are memoized by ``Message.digest`` in a bounded LRU, so one request never encodes
the same message twice and the next turn costs only its new messages.

>>> counter = counter_for("openai-chat", "gpt-4o")
>>> counter.name
'tiktoken:o200k_base/openai-chat'
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Final, Generic, Protocol, TypeVar, cast, runtime_checkable

from reference_impl.errors import TokenCountError
from reference_impl.shapes import raw_block_texts_by_message
from reference_impl.tokens._estimate_constants import (
    SHIPPED,
    FittedConstants,
    estimate_family,
    thinking_enabled,
)
from reference_impl.tokens._image_tokens import (
    AnthropicImageRule,
    GeminiImageRule,
    claude_version,
    openai_image_rule,
)
from reference_impl.tokens._message_costs import FETCHED_FILE_TOKENS, EstimateRules
from reference_impl.tokens._openai_costs import (
    OpenAIRules,
    harmony_system_policy,
    is_harmony_model,
)
from reference_impl.tokens.encodings import (
    OFFLINE_ENCODINGS,
    EncodingChoice,
    count_text,
    count_texts,
    encoding_for_model,
    get_encoding,
)
from reference_impl.transcript import (
    SHAPE_NAMES,
    Message,
    TextPart,
    ToolSpec,
    Transcript,
    canonical_json,
)
from reference_impl.transcript.model import kind_codes, message_digests, plain_texts

__all__ = [
    "DEFAULT_SAFETY_FACTORS",
    "MEMO_SIZE",
    "AnthropicEstimateCounter",
    "EstimateCounter",
    "RawCosting",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "counter_for",
    "encoding_for_model",
]

MEMO_SIZE: Final = 100_000


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Tokens of one request: per message (overhead included), tool schemas, fixed overhead.

    ``overhead`` is request-level: reply priming, ``tool_choice``, hidden prompts, and adjustments
    that depend on the whole request (ChatML tools sharing a system message: -4), so it can be
    negative; ``total`` is always the sum of the three.
    """

    total: int
    messages: tuple[int, ...]
    tools: int
    overhead: int
    counter: str
    encoding: str | None = None
    """The local encoding behind the number (None for a provider count API)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the input tokens of a request for one shape (see the module docstring)."""

    @property
    def name(self) -> str:
        """How reports name this counter (method and encoding)."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens of one message including its per-message overhead (memoized by content hash)."""
        ...

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        """Tokens of the tool schemas as the shape sends them (0 for no tools)."""
        ...

    def count(self, transcript: Transcript) -> TokenCount:
        """Tokens of a whole request: messages + tools + fixed reply overhead."""
        ...


@runtime_checkable
class RawCosting(Protocol):
    """A counter that also counts the wire blocks no neutral part holds (an Anthropic
    ``search_result`` or text ``document``, a server tool block, a Gemini code part: what a
    shape's parser keeps in the transcript's extras). The reference counters do, in ``count``
    and here; the assembler adds them to their messages' costs. A counter without this method
    leaves them uncounted."""

    def raw_costs(self, transcript: Transcript, shape: str | None = None) -> list[int] | None:
        """Tokens of the raw blocks of each message, in message order (None: none carries any)."""
        ...


# ------------------------------------------------------------------------------------- memo

_K = TypeVar("_K")


class _Memo(Generic[_K]):
    """A thread-safe bounded LRU of ints (counts are small; 100k entries are a few MB)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[_K, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: _K, compute: Callable[[], int]) -> int:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        value = compute()  # outside the lock: encoding is the slow part
        with self._lock:
            self._data[key] = value
            if len(self._data) > self._size:
                self._data.popitem(last=False)
        return value

    def lookup_all(self, keys: Sequence[_K]) -> list[int | None]:
        """The memoized values of ``keys`` (None where absent), under one lock."""
        data = self._data
        with self._lock:
            if not data:  # a new memo: nothing to look up
                self.misses += len(keys)
                return [None] * len(keys)
            found = list(map(data.get, keys))
            misses = found.count(None)
            if misses < len(keys):  # the hits become the most recently used
                for key in compress(keys, map(operator.is_not, found, repeat(None))):
                    data.move_to_end(key)
            self.hits += len(keys) - misses
            self.misses += misses
        return found

    def store_all(self, items: Iterable[tuple[_K, int]]) -> None:
        with self._lock:
            self._data.update(items)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class _Rules(Protocol):
    """What a local counter counts with: the tokens of one message and of a tool list."""

    def message(self, message: Message) -> int: ...

    def tools(self, tools: Sequence[ToolSpec]) -> int: ...

    def raw_blocks(self, blocks: Sequence[object]) -> int: ...


_R = TypeVar("_R", bound=_Rules)


class _MemoizedCounter(Generic[_R]):
    """Shared plumbing: memoized message/tool counts, each computed by the counter's ``rules``,
    and the whole-request sum."""

    _memo: _Memo[str]
    _tool_memo: _Memo[tuple[str, ...]]
    _raw_memo: _Memo[str]
    _encoding_name: str
    rules: _R
    shape: str

    def __init__(self, memo_size: int, encoding: str, fetched_allowance: int | None) -> None:
        self._memo = _Memo(memo_size)
        self._tool_memo = _Memo(1024)
        self._raw_memo = _Memo(1024)
        self._encoding_name = _check_encoding(encoding)
        _check_allowance(fetched_allowance)
        # What the rules charge a file or an image the request only references: the allowance,
        # or (None) 3,000 for a file and the image rule's largest image for an image.
        self._fetched_file = FETCHED_FILE_TOKENS if fetched_allowance is None else fetched_allowance
        self._fetched_image = fetched_allowance

    @property
    def name(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def encoding(self) -> str:
        return self._encoding_name

    @property
    def memo(self) -> _Memo[str]:
        """The per-message memo (exposed for tests and benchmarks: ``hits``/``misses``)."""
        return self._memo

    def _message(self, message: Message) -> int:
        return self.rules.message(message)

    def _tools(self, tools: Sequence[ToolSpec]) -> int:
        return self.rules.tools(tools)

    def _overhead(self, transcript: Transcript) -> int:  # noqa: ARG002 - subclasses read it
        return 0

    def count_message(self, message: Message) -> int:
        return self._memo.get_or_compute(message.digest, lambda: self._message(message))

    def count_messages(self, messages: Sequence[Message]) -> list[int]:
        """``count_message`` of each message, in one memo lookup and one store: each distinct
        new content is counted once (``_count_new``)."""
        digests = message_digests(messages)
        memo = self._memo
        found = memo.lookup_all(digests)
        if None not in found:
            return found  # type: ignore[return-value]  # no None left
        if found.count(None) == len(found) and len(set(digests)) == len(digests):
            counts = self._count_new(list(messages))  # all new, all different: the usual batch
            memo.store_all(zip(digests, counts, strict=True))
            return counts
        todo: dict[str, Message] = {}
        for digest, known, message in zip(digests, found, messages, strict=True):
            if known is None and digest not in todo:
                todo[digest] = message
        new = dict(zip(todo, self._count_new(list(todo.values())), strict=True))
        self._memo.store_all(list(new.items()))
        return [new[d] if known is None else known for d, known in zip(digests, found, strict=True)]

    def _count_new(self, messages: list[Message]) -> list[int]:
        """Tokens of messages not in the memo (``_message`` of each)."""
        return [self._message(m) for m in messages]

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        if not tools:
            return 0
        key = tuple(canonical_json([t.name, t.description, t.parameters]) for t in tools)
        return self._tool_memo.get_or_compute(key, lambda: self._tools(tools))

    def raw_costs(self, transcript: Transcript, shape: str | None = None) -> list[int] | None:
        """Tokens of the wire blocks no neutral part holds that each message of ``transcript``
        carries in ``shape``'s extras (this counter's shape by default), in message order
        (``shapes.raw_blocks_by_message``, ``rules.raw_blocks``); None when none does. Each
        message's blocks are counted once (memoized by their JSON's digest)."""
        found = raw_block_texts_by_message(shape or self.shape, transcript)
        if found is None:
            return None
        return [self._raw_cost(texts) if texts else 0 for texts in found]

    def _raw_cost(self, texts: tuple[str, ...]) -> int:
        key = hashlib.sha256("\n".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
        return self._raw_memo.get_or_compute(
            key, lambda: self.rules.raw_blocks([json.loads(text) for text in texts])
        )

    def count(self, transcript: Transcript) -> TokenCount:
        # One memo lookup for all messages and one store for the new ones (two lock round trips
        # per request, not two per message); known messages cost a digest read and a dict hit.
        # A message's raw wire blocks are its own: they go when it goes (``raw_costs``).
        per_message = tuple(self.count_messages(transcript.messages))
        raw = self.raw_costs(transcript)
        if raw is not None:
            per_message = tuple(map(operator.add, per_message, raw))
        tools = self.count_tools(transcript.tools)
        overhead = self._overhead(transcript)
        return TokenCount(
            total=sum(per_message) + tools + overhead,
            messages=per_message,
            tools=tools,
            overhead=overhead,
            counter=self.name,
            encoding=self._encoding_name,
        )


def _check_encoding(encoding: str) -> str:
    if encoding not in OFFLINE_ENCODINGS:
        raise TokenCountError(
            f"encoding {encoding!r} is not available offline; use one of {', '.join(OFFLINE_ENCODINGS)}"
        )
    return encoding


def _text_counter(encoding: str) -> Callable[[str], int]:
    enc = get_encoding(encoding)
    return functools.partial(count_text, enc)


# --------------------------------------------------------------------------- OpenAI shapes


class TiktokenCounter(_MemoizedCounter[OpenAIRules]):
    """OpenAI Chat Completions / Responses, counted locally with a tiktoken encoding.

    Messages: the cookbook formula (3 per message, 1 per name, 3 reply priming), or the harmony
    format for reasoning models. Tools: the TypeScript-namespace rendering. Images: the tile
    formula for gpt-4o class models, the patch formula for the mini/nano class (picked from
    ``model``). Tool calls, tool results and reasoning items: see ``reference_impl.tokens._openai_costs``,
    which says which parts are documented and which are calibrated on the public recordings.
    ``constants`` are the fitted constants (``_estimate_constants``; ``ZERO`` leaves them out);
    ``fetched_allowance`` is what a file or image the request only references (URL, file id)
    is charged (None: 3,000 for a file, the image rule's largest image for an image).
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        shape: str = "openai-chat",
        *,
        model: str | None = None,
        memo_size: int = MEMO_SIZE,
        constants: FittedConstants = SHIPPED,
        fetched_allowance: int | None = None,
    ) -> None:
        if shape not in ("openai-chat", "openai-responses"):
            raise TokenCountError(
                f"TiktokenCounter counts the OpenAI shapes, not {shape!r}; "
                "use counter_for(shape) for an estimate counter"
            )
        super().__init__(memo_size, encoding, fetched_allowance)
        self.shape = shape
        self.model = model
        self.rules = OpenAIRules(
            _text_counter(encoding),
            openai_image_rule(model),
            harmony=is_harmony_model(model),
            responses=shape == "openai-responses",
            harmony_system=harmony_system_policy(model, shape),
            page_tokens=constants.openai_pdf_page,
            fetched=self._fetched_file,
            fetched_image=self._fetched_image,
        )
        self._frames: list[int] = []
        self._texts = functools.partial(count_texts, get_encoding(encoding))

    @property
    def name(self) -> str:
        """How reports name this counter."""
        return f"tiktoken:{self._encoding_name}/{self.shape}"

    def _count_new(self, messages: list[Message]) -> list[int]:
        # A message of one text part and no name (most of a session) costs its role's frame plus
        # its text: the frames are taken from the rules (``message`` of an empty text of that
        # role), the texts encoded in one pass (``count_texts``); the others one by one.
        texts = plain_texts(messages)
        kinds = kind_codes(messages)
        frames = self._kind_frames()
        if None not in texts:  # all of one text part, none named: one pass
            known = cast("list[str]", texts)
            return list(map(operator.add, map(frames.__getitem__, kinds), self._texts(known)))
        plain = list(compress(range(len(messages)), map(operator.is_not, texts, repeat(None))))
        picked = cast("list[str]", list(map(texts.__getitem__, plain)))
        counts = map(
            operator.add,
            map(frames.__getitem__, map(kinds.__getitem__, plain)),
            self._texts(picked),
        )
        out = [0] * len(messages)
        for i, cost in zip(plain, counts, strict=True):
            out[i] = cost
        for i in compress(range(len(messages)), map(operator.is_, texts, repeat(None))):
            out[i] = self.rules.message(messages[i])  # the others, one by one
        return out

    def _kind_frames(self) -> list[int]:
        """The frame of a message of one text part, by kind code (system ... assistant)."""
        if not self._frames:
            self._frames = [
                self.rules.message(Message(role, (TextPart(""),)))
                for role in ("system", "developer", "user", "assistant")
            ]
        return self._frames

    def _overhead(self, transcript: Transcript) -> int:
        # Reply priming (cookbook; harmony for reasoning models) and the tools' share of a system
        # message. ``tool_choice``: litellm's constants ("none" 1, named 7 + name).
        reasoning = transcript.param("reasoning")
        overhead = self.rules.overhead(
            transcript.messages,
            transcript.tools,
            all_turns_reasoning=isinstance(reasoning, dict)
            and reasoning.get("context") == "all_turns",
        )
        choice = transcript.param("tool_choice")
        if choice == "none":
            overhead += 1
        elif isinstance(choice, dict):
            named = choice.get("name") or (choice.get("function") or {}).get("name")
            if isinstance(named, str):
                overhead += 7 + self.rules.text_tokens(named)
        return overhead


# ---------------------------------------------------------------------- estimate counters

# Anthropic: [community] Claude 3.5 Sonnet vs GPT-4o is +16% (English), +21% (math), +30% (code)
# (token-counting.md section 5); tool output is mostly code and JSON, so 1.30 covers all three.
# Opus 4.7's tokenizer yields up to 1.35x more than earlier Claude models: 1.30 * 1.35 = 1.76.
# Gemini and Bedrock (Nova, Llama, Claude): no published ratio; Bedrock Claude models get the
# Anthropic factors, everything else 1.30 as well, and the calibration bench reports the error.
DEFAULT_SAFETY_FACTORS: Final[dict[str, float]] = {
    "anthropic": 1.30,
    "anthropic-opus-4.7+": 1.76,
    "gemini": 1.30,
    "bedrock": 1.30,
}
_ESTIMATE_PROVIDER: Final[dict[str, str]] = {
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
    "bedrock-converse": "bedrock",
}


def gemini_generation(model: str | None) -> int:
    """The major version of a Gemini model name (``gemini-3.1-pro-preview`` -> 3; 0 if none)."""
    bare = (model or "").rsplit("/", 1)[-1]
    if not bare.startswith("gemini-"):
        return 0
    head = bare.removeprefix("gemini-").split("-", 1)[0].split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def default_safety_factor(shape: str, model: str | None = None) -> float:
    """The factor ``counter_for`` uses for an estimate shape when none is given."""
    provider = _ESTIMATE_PROVIDER.get(shape, "anthropic")
    is_claude = provider == "anthropic" or "claude" in (model or "")
    if is_claude and model and claude_version(model) >= (4, 7):
        return DEFAULT_SAFETY_FACTORS["anthropic-opus-4.7+"]
    return DEFAULT_SAFETY_FACTORS["anthropic" if is_claude else provider]


class EstimateCounter(_MemoizedCounter[EstimateRules]):
    """A local estimate for a shape without a public tokenizer: tiktoken count x ``safety_factor``.

    Images use Anthropic's ``w*h/750`` rule (section 4c), Gemini's tiles or media-resolution
    budgets for Gemini models (``GeminiImageRule``). ``overhead`` is
    the model family's fitted per-request input (the hidden tool-use prompt of Claude and Nova,
    Claude's thinking instructions), from ``constants`` (``_estimate_constants``: measured
    constants, not multiplied by the factor). With ``safety_factor=1.0`` the count is the
    calibrated point estimate that ``make calibrate`` compares with the providers' counts.
    ``fetched_allowance``: as for ``TiktokenCounter``.
    """

    def __init__(
        self,
        shape: str,
        *,
        safety_factor: float,
        encoding: str = "o200k_base",
        model: str | None = None,
        memo_size: int = MEMO_SIZE,
        constants: FittedConstants = SHIPPED,
        fetched_allowance: int | None = None,
    ) -> None:
        provider = _ESTIMATE_PROVIDER.get(shape)
        if provider is None:
            raise TokenCountError(
                f"no estimate counter for shape {shape!r}; estimates exist for "
                f"{', '.join(_ESTIMATE_PROVIDER)}"
            )
        if not safety_factor >= 1.0 or safety_factor > 10:
            raise TokenCountError(
                f"safety_factor must be between 1.0 and 10 (an estimate that may count low is "
                f"not a safety margin), got {safety_factor!r}"
            )
        super().__init__(memo_size, encoding, fetched_allowance)
        self.shape = shape
        self.provider = provider
        self.model = model
        self.safety_factor = safety_factor
        self.constants = constants
        self.family = estimate_family(shape, model)
        generation = gemini_generation(model) if self.family == "gemini" else 0
        image_rule: AnthropicImageRule | GeminiImageRule = (
            GeminiImageRule.for_generation(generation)
            if self.family == "gemini"
            else AnthropicImageRule.for_model(model)
        )
        self.rules = EstimateRules(
            text_tokens=_text_counter(encoding),
            safety_factor=safety_factor,
            image_rule=image_rule,
            page_tokens=(
                image_rule.page
                if isinstance(image_rule, GeminiImageRule)
                else AnthropicImageRule().max_tokens
            ),
            fetched=self._fetched_file,
            fetched_image=self._fetched_image,
            tool_call_tokens=constants.claude_tool_call if self.family == "claude" else 0,
            billed_reasoning=generation >= 3,
        )

    @property
    def name(self) -> str:
        """How reports name this counter."""
        short = self._encoding_name.removesuffix("_base")
        return f"estimate:{self.provider}(x{self.safety_factor:.2f},{short})"

    def _overhead(self, transcript: Transcript) -> int:
        # Measured constants, not tokenizer uncertainty: they are not multiplied by the factor.
        tokens = self.constants.overhead(self.shape, self.model, tools=bool(transcript.tools))
        if self.family == "claude" and thinking_enabled(transcript):
            tokens += self.constants.claude_thinking
        return tokens - self.rules.earlier_reasoning(transcript.messages)


class AnthropicEstimateCounter(EstimateCounter):
    """Anthropic Messages estimate with an explicit, configurable safety factor (default 1.30)."""

    def __init__(
        self,
        safety_factor: float | None = None,
        *,
        encoding: str = "o200k_base",
        model: str | None = None,
        memo_size: int = MEMO_SIZE,
        constants: FittedConstants = SHIPPED,
        fetched_allowance: int | None = None,
    ) -> None:
        factor = (
            safety_factor
            if safety_factor is not None
            else default_safety_factor("anthropic-messages", model)
        )
        super().__init__(
            "anthropic-messages",
            safety_factor=factor,
            encoding=encoding,
            model=model,
            memo_size=memo_size,
            constants=constants,
            fetched_allowance=fetched_allowance,
        )


def _check_allowance(allowance: int | None) -> None:
    if allowance is not None and (isinstance(allowance, bool) or allowance < 0):
        raise TokenCountError(
            f"fetched_allowance must be a token count of 0 or more, got {allowance!r}"
        )


# ------------------------------------------------------------------------------------ factory


def counter_for(
    shape: str,
    model: str | None = None,
    *,
    safety_factor: float | None = None,
    fetched_allowance: int | None = None,
) -> TokenCounter:
    """The reference counter for ``shape`` (and ``model``): one instance per arguments per process,
    so its memo carries over from one turn to the next.

    OpenAI shapes get a ``TiktokenCounter`` with the model's encoding (token-counting.md section 1;
    unknown models get o200k_base, see ``encoding_for_model(model).reason``). The other shapes get an
    ``EstimateCounter`` with ``safety_factor`` or the documented default. ``fetched_allowance`` is
    what each file or image the request only references (a URL or file id the provider fetches)
    is charged; None keeps the documented defaults (``TiktokenCounter``).
    """
    if shape not in SHAPE_NAMES:
        raise TokenCountError(f"unknown shape {shape!r}; known shapes: {', '.join(SHAPE_NAMES)}")
    if safety_factor is None and shape not in ("openai-chat", "openai-responses"):
        safety_factor = default_safety_factor(shape, model)
    _check_allowance(fetched_allowance)
    return _cached_counter(shape, model, safety_factor, fetched_allowance)


@functools.lru_cache(maxsize=64)
def _cached_counter(
    shape: str, model: str | None, safety_factor: float | None, fetched_allowance: int | None
) -> TokenCounter:
    if shape in ("openai-chat", "openai-responses"):
        choice: EncodingChoice = encoding_for_model(model)
        return TiktokenCounter(
            choice.encoding, shape, model=model, fetched_allowance=fetched_allowance
        )
    assert safety_factor is not None
    if shape == "anthropic-messages":
        return AnthropicEstimateCounter(
            safety_factor, model=model, fetched_allowance=fetched_allowance
        )
    return EstimateCounter(
        shape, safety_factor=safety_factor, model=model, fetched_allowance=fetched_allowance
    )
