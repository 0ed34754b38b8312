"""Token counting: vendor golden vectors, offline encodings, hazards of untrusted text, memo, factory.

Expected numbers come from vendor material quoted in ../shared/design/token-counting.md (the
openai-cookbook notebook and OpenAI's vision guide), not from this implementation's output.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from assembler_support import Call, parallel_ring
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from conformance.strategies import transcripts
from reference_impl.errors import TokenCountError
from reference_impl.tokens import (
    AnthropicEstimateCounter,
    EstimateCounter,
    TiktokenCounter,
    TokenCount,
    TokenCounter,
    counter_for,
)
from reference_impl.tokens import encodings as _encodings
from reference_impl.tokens._image_tokens import (
    AnthropicImageRule,
    PatchRule,
    TileRule,
    anthropic_image_tokens,
    image_patches,
    openai_image_rule,
    patch_image_tokens,
    tile_image_tokens,
)
from reference_impl.tokens.encodings import (
    count_text,
    count_texts,
    encoding_for_model,
    get_encoding,
    text_chunks,
)
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)

# --------------------------------------------------------------------- cookbook examples

# openai-cookbook "How to count tokens with tiktoken", section 6: the 6-message example.
COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    },
]

# Section 7 of the same notebook: one tool and two messages.
COOKBOOK_TOOL = {
    "name": "get_current_weather",
    "description": "Get the current weather in a given location",
    "parameters": {
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "description": "The city and state, e.g. San Francisco, CA",
            },
            "unit": {
                "type": "string",
                "description": "The unit of temperature to return",
                "enum": ["celsius", "fahrenheit"],
            },
        },
        "required": ["location"],
    },
}
COOKBOOK_TOOL_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful assistant that can answer to questions about the weather.",
    },
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


def _transcript(messages: list[dict[str, str]], tools: tuple[ToolSpec, ...] = ()) -> Transcript:
    return Transcript(
        tuple(
            Message(m["role"], (TextPart(m["content"]),), name=m.get("name"))  # type: ignore[arg-type]
            for m in messages
        ),
        tools=tools,
    )


def _cookbook_tool() -> ToolSpec:
    return ToolSpec(
        name=COOKBOOK_TOOL["name"],  # type: ignore[arg-type]
        description=COOKBOOK_TOOL["description"],  # type: ignore[arg-type]
        parameters=canonical_json(COOKBOOK_TOOL["parameters"]),
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [("gpt-4o", 124), ("gpt-4o-mini", 124), ("gpt-4", 129), ("gpt-3.5-turbo", 129)],
)
def test_cookbook_message_example(model: str, expected: int) -> None:
    counter = counter_for("openai-chat", model)
    assert counter.count(_transcript(COOKBOOK_MESSAGES)).total == expected


@pytest.mark.parametrize(
    ("model", "expected"),
    [("gpt-4o", 101), ("gpt-4o-mini", 101), ("gpt-4", 105), ("gpt-3.5-turbo", 105)],
)
def test_cookbook_tool_example(model: str, expected: int) -> None:
    counter = counter_for("openai-chat", model)
    assert counter.count(_transcript(COOKBOOK_TOOL_MESSAGES, (_cookbook_tool(),))).total == expected


def test_cookbook_token_ids_prove_the_offline_ranks() -> None:
    # cookbook: "tiktoken is great!" token ids per encoding (token-counting.md section 1)
    assert get_encoding("o200k_base").encode_ordinary("tiktoken is great!") == [
        83,
        8251,
        2488,
        382,
        2212,
        0,
    ]
    assert get_encoding("cl100k_base").encode_ordinary("tiktoken is great!") == [
        83,
        1609,
        5963,
        374,
        2294,
        0,
    ]


def test_rank_file_hash_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_encodings, "_rank_file_bytes", lambda name: b"dGFtcGVyZWQ= 0\n")
    monkeypatch.setattr(_encodings, "_cache", {})
    with pytest.raises(TokenCountError, match="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe"):
        get_encoding("o200k_base")


def test_shipped_rank_file_has_openais_hash() -> None:
    raw = _encodings._rank_file_bytes("o200k_base")
    assert (
        hashlib.sha256(raw).hexdigest()
        == "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    )


def test_unknown_encoding_is_a_named_error() -> None:
    with pytest.raises(TokenCountError, match="not available offline"):
        get_encoding("p50k_base")
    with pytest.raises(TokenCountError, match="not available offline"):
        TiktokenCounter("r50k_base")


# --------------------------------------------------------------------- model -> encoding


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5.1-codex", "o200k_base"),  # prefix "gpt-5" has no dash
        ("o3-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("ft:gpt-4o-mini:org::abc", "o200k_base"),
        ("gpt-oss-120b", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo-0125", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("openai/gpt-4", "cl100k_base"),
    ],
)
def test_encoding_for_model_follows_tiktokens_table(model: str, encoding: str) -> None:
    assert encoding_for_model(model).encoding == encoding


def test_unknown_model_gets_o200k_with_a_reason() -> None:
    choice = encoding_for_model("mistral-large-latest")
    assert choice.encoding == "o200k_base"
    assert "unknown model 'mistral-large-latest'" in choice.reason
    assert encoding_for_model(None).encoding == "o200k_base"


# ---------------------------------------------------------------------------- images


@pytest.mark.parametrize(
    ("width", "height", "detail", "expected"),
    [(1024, 1024, "high", 765), (2048, 4096, "high", 1105), (4096, 8192, "low", 85)],
)
def test_tile_formula_vendor_examples(width: int, height: int, detail: str, expected: int) -> None:
    assert tile_image_tokens(width, height, detail, TileRule(85, 170)) == expected


@pytest.mark.parametrize(("width", "height", "expected"), [(1024, 1024, 1024), (1800, 2400, 1452)])
def test_patch_formula_vendor_examples(width: int, height: int, expected: int) -> None:
    assert image_patches(width, height) == expected


def test_patch_multiplier_applies_per_model() -> None:
    rule = openai_image_rule("gpt-4.1-mini")
    assert rule == PatchRule(1.62)
    assert patch_image_tokens(1024, 1024, rule) == math.ceil(1024 * 1.62)


@pytest.mark.parametrize(
    ("model", "rule"),
    [
        ("gpt-4o", TileRule(85, 170)),
        ("gpt-4o-mini", TileRule(2833, 5667)),
        ("gpt-4.1", TileRule(85, 170)),
        ("gpt-4.1-nano", PatchRule(2.46)),
        ("o4-mini", PatchRule(1.72)),
        ("gpt-5-mini", PatchRule(1.62)),
        ("gpt-5", TileRule(70, 140)),
        ("o3", TileRule(75, 150)),
    ],
)
def test_image_rule_by_model(model: str, rule: TileRule | PatchRule) -> None:
    assert openai_image_rule(model) == rule


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_unknown_size_is_the_upper_bound(width: int, height: int) -> None:
    assert tile_image_tokens(width, height, "high") <= tile_image_tokens(None, None, "high")
    assert image_patches(width, height) <= image_patches(None, None)
    assert anthropic_image_tokens(width, height) <= anthropic_image_tokens(None, None)


def test_anthropic_image_formula() -> None:
    # docs.anthropic.com/en/docs/vision table rows: 200x200 ~ 54, 1000x1000 ~ 1334, 1092x1092 ~ 1590
    assert anthropic_image_tokens(200, 200) == 54
    assert anthropic_image_tokens(1000, 1000) == 1334
    assert anthropic_image_tokens(1092, 1092) == 1590
    assert AnthropicImageRule.for_model("claude-opus-4-7").max_tokens == 4784


def test_image_in_a_chat_message_uses_the_formula_not_base64_text() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o")
    image = ImagePart("base64", "A" * 400_000, "image/png", "high", 1024, 1024)
    with_image = counter.count_message(Message("user", (TextPart("look"), image)))
    without = counter.count_message(Message("user", (TextPart("look"),)))
    assert with_image - without == 765


def test_files_are_counted_never_free() -> None:
    counter = counter_for("openai-chat", "gpt-4o")
    text = "hello world " * 100
    import base64

    doc = FilePart("base64", base64.b64encode(text.encode()).decode(), "text/plain", "a.txt")
    plain = counter.count_message(Message("user", (TextPart(text),)))
    assert counter.count_message(Message("user", (doc,))) == plain
    remote = counter.count_message(Message("user", (FilePart("url", "https://x/y.pdf"),)))
    assert remote >= 1500


# ------------------------------------------------------------------- untrusted text


def test_special_token_text_is_ordinary_text() -> None:
    enc = get_encoding("o200k_base")
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode("<|endoftext|>")  # the hazard: encode() refuses it by default
    assert count_text(enc, "<|endoftext|> and <|endofprompt|>") > 2
    counter = counter_for("openai-chat", "gpt-4o")
    message = Message("tool", (ToolResultPart("call_1", (TextPart("<|endoftext|>"),)),))
    assert counter.count_message(message) > 0


def test_rust_panic_on_one_huge_pretoken_falls_back_to_chunks() -> None:
    # 1,000,000 spaces with o200k_base panics the Rust core (token-counting.md section 1); force
    # the exact path so the panic happens and prove the fallback catches it.
    enc = get_encoding("o200k_base")
    n = count_text(enc, " " * 1_000_000, exact_max_chars=2_000_000)
    assert 0 < n <= 1_000_000 // 8 + 200


def test_long_text_never_takes_the_exact_path() -> None:
    counter = counter_for("openai-chat", "gpt-4o")
    message = Message("tool", (ToolResultPart("c", (TextPart(" " * 1_000_000),)),))
    assert counter.count_message(message) > 0


def test_other_base_exceptions_are_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    class Boom:
        def encode_ordinary(self, text: str) -> list[int]:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        count_text(Boom(), "abc")  # type: ignore[arg-type]


def test_counting_texts_in_one_pass_is_counting_each() -> None:
    # count_texts: one C-speed pass when it can; a text past EXACT_MAX_CHARS, or a panic,
    # sends the batch through count_text one by one: the same counts either way
    enc = get_encoding("o200k_base")
    texts = ["", "hello world", "<|endoftext|>", "部署 😀 " * 50]
    assert count_texts(enc, texts) == [count_text(enc, t) for t in texts]
    long = [*texts, " " * 1_000_000]  # past EXACT_MAX_CHARS: chunked, never the exact path
    assert count_texts(enc, long) == [count_text(enc, t) for t in long]

    panic = type("PanicException", (BaseException,), {})

    class Panicky:
        """An encoding whose Rust core panics once, on the batch's second text."""

        calls = 0

        def encode_ordinary(self, text: str) -> list[int]:
            self.calls += 1
            if self.calls == 2:
                raise panic
            return enc.encode_ordinary(text)

    assert count_texts(Panicky(), texts) == [count_text(enc, t) for t in texts]  # type: ignore[arg-type]

    class Interrupted:
        def encode_ordinary(self, text: str) -> list[int]:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        count_texts(Interrupted(), ["abc"])  # type: ignore[arg-type]


_SPECIAL = st.sampled_from(["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|im_start|>"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(st.text(max_size=80), _SPECIAL, st.sampled_from(["\ud800", "部署 😀", " " * 40])),
        max_size=6,
    ).map("".join),
    st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_counting_through_the_buffer_encoder_is_len_of_encode_ordinary(
    text: str, name: str
) -> None:
    # count_text / count_texts read the Rust core's buffer encoder (no special token allowed):
    # the count must be the length of encode_ordinary's tokens for any text, special-token text
    # and lone surrogates (which the buffer encoder refuses: encode_ordinary's repair) included.
    # Texts from _BUFFER_MIN_CHARS on take the buffer encoder, shorter ones encode_ordinary.
    enc = get_encoding(name)
    assert _encodings._buffer_encoder(enc) is not None  # the fast path is the one tested
    long = (text + " x") * (_encodings._BUFFER_MIN_CHARS // (len(text) + 2) + 1)
    assert len(long) >= _encodings._BUFFER_MIN_CHARS
    texts = [text, long, "hello", long + text, text]
    expected = [len(enc.encode_ordinary(t)) for t in texts]
    assert [count_text(enc, t) for t in texts] == expected
    assert count_texts(enc, texts) == expected


def test_a_buffer_encoder_that_counts_otherwise_is_not_used() -> None:
    enc = get_encoding("o200k_base")

    class Core:
        @staticmethod
        def encode_to_tiktoken_buffer(text: str, allowed: frozenset[str]) -> bytes:
            return b"\0\0\0\0"  # always one token: wrong on the probe text

    class Odd:
        _core_bpe = Core()

        def encode_ordinary(self, text: str) -> list[int]:
            return enc.encode_ordinary(text)

    odd = Odd()
    assert _encodings._buffer_encoder(odd) is None  # type: ignore[arg-type]
    assert count_text(odd, "hello world, again") == len(enc.encode_ordinary("hello world, again"))  # type: ignore[arg-type]
    long = "a b c d " * 100  # past _BUFFER_MIN_CHARS: would take the buffer encoder
    expected = [len(enc.encode_ordinary(long)), 1]
    assert count_texts(odd, [long, "e"]) == expected  # type: ignore[arg-type]


def test_an_unhashable_encoding_like_object_still_counts() -> None:
    # _buffer_encoder remembers its answer per encoding; an object that cannot be a key (it
    # defines __eq__ without __hash__) is looked up each time instead of raising TypeError.
    enc = get_encoding("o200k_base")

    class Unhashable:  # noqa: PLW1641 - unhashable on purpose
        def __eq__(self, other: object) -> bool:
            return self is other

        def encode_ordinary(self, text: str) -> list[int]:
            return enc.encode_ordinary(text)

    odd = Unhashable()
    assert _encodings._buffer_encoder(odd) is None  # type: ignore[arg-type]  # no core: none
    odd._core_bpe = enc._core_bpe  # type: ignore[attr-defined]  # a core that counts right
    found = _encodings._buffer_encoder(odd)  # type: ignore[arg-type]
    assert found == enc._core_bpe.encode_to_tiktoken_buffer
    long = "deploy the service " * 40
    assert count_text(odd, long) == len(enc.encode_ordinary(long))  # type: ignore[arg-type]
    assert count_texts(odd, [long, "a"]) == [len(enc.encode_ordinary(long)), 1]  # type: ignore[arg-type]


def _english_prose() -> str:
    from pydoc_data.topics import topics  # the Python reference manual's English prose

    return "\n\n".join(topics[k] for k in sorted(topics))


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_chunking_error_on_normal_text_is_tiny(encoding: str) -> None:
    """The exactness trade-off of chunking, measured: well under 0.1% on prose and code."""
    enc = get_encoding(encoding)
    code = Path(json.__file__).read_text("utf-8") * 20
    for text in (_english_prose(), code):
        exact = len(enc.encode_ordinary(text))
        chunked = count_text(enc, text, exact_max_chars=0)
        assert abs(chunked - exact) / exact < 0.001, (encoding, exact, chunked)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=3000), st.integers(16, 512))
def test_chunks_cover_the_text_in_order(text: str, size: int) -> None:
    pieces = list(text_chunks(text, size))
    assert "".join(pieces) == text
    assert all(0 < len(p) <= size for p in pieces)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list(" \n\tab<|>endoftx中😀")), max_size=2000))
def test_count_text_never_raises(text: str) -> None:
    enc = get_encoding("o200k_base")
    assert count_text(enc, text) == len(enc.encode_ordinary(text))
    assert count_text(enc, text, exact_max_chars=64) >= 0


# ----------------------------------------------------------------------- counters


def _ring_transcript() -> Transcript:
    return Transcript(
        (
            Message("system", (TextPart("You are deploy-bot."),)),
            Message("user", (TextPart("Roll out v2 to staging."),)),
            *parallel_ring(
                Call("call_a", "get_status", '{"env":"staging"}', "healthy"),
                Call("call_b", "notify_ops", '{"text":"rolling out"}', "error: pager down", True),
            ),
            Message("assistant", (TextPart("Staging is healthy; paging failed."),)),
        ),
        tools=(_cookbook_tool(),),
    )


@pytest.mark.parametrize(
    ("shape", "model", "name"),
    [
        ("openai-chat", "gpt-4o", "tiktoken:o200k_base/openai-chat"),
        ("openai-chat", "gpt-4", "tiktoken:cl100k_base/openai-chat"),
        ("openai-responses", "gpt-5", "tiktoken:o200k_base/openai-responses"),
        ("anthropic-messages", "claude-sonnet-4-5", "estimate:anthropic(x1.30,o200k)"),
        ("anthropic-messages", "claude-opus-4-7", "estimate:anthropic(x1.76,o200k)"),
        ("gemini", "gemini-2.5-pro", "estimate:gemini(x1.30,o200k)"),
        ("bedrock-converse", "amazon.nova-micro-v1:0", "estimate:bedrock(x1.30,o200k)"),
        (
            "bedrock-converse",
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            "estimate:bedrock(x1.30,o200k)",
        ),
    ],
)
def test_counter_for_names_its_counter(shape: str, model: str, name: str) -> None:
    counter = counter_for(shape, model)
    assert isinstance(counter, TokenCounter)
    assert counter.name == name
    result = counter.count(_ring_transcript())
    assert isinstance(result, TokenCount)
    assert result.counter == name
    assert result.total == sum(result.messages) + result.tools + result.overhead
    assert all(n > 0 for n in result.messages)
    assert result.tools > 0


def test_counter_for_returns_one_instance_per_arguments() -> None:
    assert counter_for("openai-chat", "gpt-4o") is counter_for("openai-chat", "gpt-4o")
    assert counter_for("anthropic-messages", safety_factor=1.5).name.startswith(
        "estimate:anthropic(x1.50"
    )


def test_counter_for_unknown_shape() -> None:
    with pytest.raises(TokenCountError, match="unknown shape 'openai-completions'"):
        counter_for("openai-completions")


def test_safety_factor_below_one_is_refused() -> None:
    with pytest.raises(TokenCountError, match="safety_factor"):
        AnthropicEstimateCounter(0.9)
    with pytest.raises(TokenCountError, match="no estimate counter"):
        EstimateCounter("openai-chat", safety_factor=1.2)


def test_estimate_is_tiktoken_times_the_factor() -> None:
    text = "def add(a, b):\n    return a + b\n" * 50
    message = Message("user", (TextPart(text),))
    low = AnthropicEstimateCounter(1.0).count_message(message)
    high = AnthropicEstimateCounter(2.0).count_message(message)
    assert high == pytest.approx(2 * low, abs=1)
    assert low == 3 + len(get_encoding("o200k_base").encode_ordinary("user" + text))


def test_estimate_counts_thinking_and_tool_parts() -> None:
    counter = AnthropicEstimateCounter(1.0)
    bare = counter.count_message(Message("assistant", (TextPart("ok"),)))
    thinking = ReasoningPart(
        "anthropic-messages",
        canonical_json({"type": "thinking", "thinking": "let me think " * 20, "signature": "s"}),
    )
    richer = counter.count_message(
        Message("assistant", (thinking, TextPart("ok"), ToolCallPart("t1", "f", '{"a":1}')))
    )
    assert richer > bare + 40


def test_memo_encodes_each_message_once() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o")
    transcript = _ring_transcript()
    first = counter.count(transcript)
    misses = counter.memo.misses
    assert misses == len(transcript.messages)
    second = counter.count(transcript)
    assert second == first
    assert counter.memo.misses == misses  # nothing re-encoded
    # the next turn costs only its new message
    grown = transcript.with_messages((*transcript.messages, Message("user", (TextPart("next"),))))
    counter.count(grown)
    assert counter.memo.misses == misses + 1


def test_memo_is_bounded() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat", memo_size=10)
    for i in range(50):
        counter.count_message(Message("user", (TextPart(f"message {i}"),)))
    assert len(counter.memo) == 10


def test_tool_schema_counts_are_memoized_and_nesting_is_not_free() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat")
    flat = ToolSpec(
        "f", "d", canonical_json({"type": "object", "properties": {"a": {"type": "object"}}})
    )
    nested = ToolSpec(
        "f",
        "d",
        canonical_json(
            {
                "type": "object",
                "properties": {
                    "a": {
                        "type": "object",
                        "properties": {"deep": {"type": "string", "description": "x" * 50}},
                    }
                },
            }
        ),
    )
    assert counter.count_tools([nested]) > counter.count_tools([flat])
    assert counter.count_tools([]) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=200), min_size=1, max_size=6))
def test_count_is_the_sum_of_its_parts(texts: list[str]) -> None:
    for shape in ("openai-chat", "openai-responses", "anthropic-messages"):
        counter = counter_for(shape, "gpt-4o" if shape.startswith("openai") else None)
        transcript = Transcript(tuple(Message("user", (TextPart(t),)) for t in texts))
        result = counter.count(transcript)
        assert result.messages == tuple(counter.count_message(m) for m in transcript.messages)
        assert result.total == sum(result.messages) + result.overhead


# ------------------------------------------------------------------------ counting in batches


def _fresh_counter(kind: str) -> TiktokenCounter | EstimateCounter:
    if kind == "estimate":
        return EstimateCounter("anthropic-messages", safety_factor=1.3)
    shape, model = kind.split(":")
    return TiktokenCounter("o200k_base", shape, model=model)


@pytest.mark.parametrize("kind", ["openai-chat:gpt-4o", "openai-chat:gpt-5", "openai-responses:o3"])
@pytest.mark.parametrize("named", [None, 2], ids=["all plain", "one named"])
def test_a_batch_of_plain_messages_is_counted_as_one_by_one(kind: str, named: int | None) -> None:
    # TiktokenCounter._count_new takes a batch of messages of one text part each, none named, in
    # one pass; a name anywhere sends the batch the mixed way. Both give count_message's counts.
    roles = ("system", "developer", "user", "assistant") * 2
    messages = [
        Message(
            role, (TextPart(f"{role} says {i} " * (i + 1)),), name="bot" if i == named else None
        )
        for i, role in enumerate(roles)
    ]
    batch, single = _fresh_counter(kind), _fresh_counter(kind)
    assert batch.count_messages(messages) == [single.count_message(m) for m in messages]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    transcripts(max_messages=12),
    st.sampled_from(["openai-chat:gpt-4o", "openai-chat:gpt-5", "openai-responses:o3", "estimate"]),
    st.lists(st.sampled_from(["a", "bot"]) | st.none(), max_size=3),
)
def test_counting_in_a_batch_is_counting_one_by_one(session, kind, names) -> None:
    # count_messages: one memo round trip, and a message of one text part counted as its frame
    # plus its text; the counts are those of count_message, repeats and named messages included
    named = [Message("user", (TextPart(f"hi {n}"),), name=n) for n in names]
    messages = [*session.messages, *named, *session.messages[:2]]
    batch, single = _fresh_counter(kind), _fresh_counter(kind)
    want = [single.count_message(m) for m in messages]
    assert batch.count_messages(messages) == want
    assert batch.count_messages(messages) == want  # the second time from the memo
