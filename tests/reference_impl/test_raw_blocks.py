"""Wire blocks that no neutral part holds (``shapes.raw_wire_content``) are counted: a search
result, a text document or a server tool block is input the model reads, kept beside the
transcript in its params. The counters add them to the message that carries them
(``raw_costs``, ``count``); the pipeline adds them to that message's unit, so a session of
large search results is trimmed to the budget instead of sent over it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from reference_impl import AssemblyConfig, SessionAssembler, assemble
from reference_impl.assembler import assemble_pipeline
from reference_impl.budget import plan_budget
from reference_impl.errors import TranscriptError
from reference_impl.ledger import Ledger
from reference_impl.shapes import get_shape, raw_blocks_by_message, raw_wire_content
from reference_impl.steps import load_state
from reference_impl.steps.protect import raw_costs_by_message
from reference_impl.summary import DeterministicSummarizer
from reference_impl.token_apis import AnthropicCountTokensCounter
from reference_impl.tokens import (
    AnthropicEstimateCounter,
    RawCosting,
    TiktokenCounter,
    counter_for,
)
from reference_impl.tokens._message_costs import raw_block_content
from reference_impl.tokens.encodings import get_encoding
from reference_impl.transcript import Message, TextPart
from reference_impl.transcript.model import default_id

ANTHROPIC = get_shape("anthropic-messages")
MODEL = "claude-sonnet-4-5"
ENCODING = get_encoding("o200k_base")
_WORDS = ("latency", "region", "owner", "replica", "deploy", "quota", "window", "shard")


def _page(i: int, words: int = 1500) -> str:
    return " ".join(f"{_WORDS[(i + k) % len(_WORDS)]}{k % 97}" for k in range(words))


def _search_result(i: int, words: int = 1500) -> dict[str, Any]:
    return {
        "type": "search_result",
        "source": f"https://docs.example/{i}",
        "title": f"Runbook page {i}",
        "content": [{"type": "text", "text": _page(i, words)}],
    }


def _session_body(results: int, words: int = 1500) -> dict[str, Any]:
    """A research session: each user turn brings a search result and asks about it."""
    messages: list[dict[str, Any]] = []
    for i in range(results):
        messages.append(
            {
                "role": "user",
                "content": [_search_result(i, words), {"type": "text", "text": f"Question {i}?"}],
            }
        )
        messages.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"Answer {i}."}]}
        )
    messages.append({"role": "user", "content": "Which runbook covers failover?"})
    return {"model": MODEL, "max_tokens": 1024, "messages": messages}


def _config(budget: int) -> AssemblyConfig:
    """The default config with an input budget of ``budget`` (summaries never triggered)."""
    default = AssemblyConfig()
    limit = budget + default.output_reserve_tokens + default.safety_margin_tokens
    return default.with_changes(model_input_limit=limit, summarize_trigger_ratio=1.0)


# -- the rule ------------------------------------------------------------------------------------


def test_a_search_result_counts_every_value_but_what_says_what_the_block_is() -> None:
    text, payloads = raw_block_content(_search_result(3, words=5))
    assert payloads == 0
    lines = text.split("\n")
    assert "https://docs.example/3" in lines
    assert "Runbook page 3" in lines
    assert _page(3, words=5) in lines
    assert "search_result" not in text
    assert "text" not in lines


def test_a_text_document_is_text_and_a_base64_one_a_payload() -> None:
    text_source = {"type": "text", "media_type": "text/plain", "data": "Dummy TXT file"}
    assert raw_block_content({"type": "document", "source": text_source}) == ("Dummy TXT file", 0)
    pdf = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}
    assert raw_block_content({"type": "document", "source": pdf, "title": "Q3"}) == ("Q3", 1)
    inline = {"mimeType": "video/mp4", "data": "AAAAIGZ0eXA="}  # Gemini inline data
    assert raw_block_content({"inlineData": inline}) == ("", 1)
    video = {"video": {"format": "mp4", "source": {"bytes": "AAAAIGZ0eXA="}}}  # Bedrock bytes
    assert raw_block_content(video) == ("mp4", 1)


def test_a_cache_point_and_cache_control_cost_nothing() -> None:
    assert raw_block_content({"cachePoint": {"type": "default"}}) == ("", 0)
    block = {"type": "search_result", "cache_control": {"type": "ephemeral"}, "title": "t"}
    assert raw_block_content(block) == ("t", 0)


def test_numbers_are_counted_as_their_json() -> None:
    code = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n", "exitCode": 0}}
    assert raw_block_content(code) == ("OUTCOME_OK\n42\n\n0", 0)


def test_each_payload_costs_the_fetched_allowance() -> None:
    pdf = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}
    block = {"type": "document", "source": pdf}
    tiktoken = TiktokenCounter("o200k_base", "openai-chat", fetched_allowance=1234)
    assert tiktoken.rules.raw_blocks([block, block]) == 2 * 1234
    estimate = AnthropicEstimateCounter(1.3, fetched_allowance=777)
    assert estimate.rules.raw_blocks([block]) == 777


# -- the counters ----------------------------------------------------------------------------------


def test_the_counter_adds_a_search_result_to_the_message_that_carries_it() -> None:
    session = ANTHROPIC.parse_request(_session_body(2, words=400))
    counter = AnthropicEstimateCounter(1.0, model=MODEL)
    raw = counter.raw_costs(session)
    assert raw is not None
    assert len(raw) == len(session.messages)
    carriers = [i for i, cost in enumerate(raw) if cost]
    assert carriers == [0, 2]  # the two user turns with a search result, nothing else
    page_tokens = len(ENCODING.encode_ordinary(_page(0, words=400)))
    assert raw[0] >= page_tokens  # the page's text at least (title, source and frame on top)
    count = counter.count(session)
    neutral = [counter.count_message(m) for m in session.messages]
    assert list(count.messages) == [n + r for n, r in zip(neutral, raw, strict=True)]


def test_the_blocks_go_with_their_message() -> None:
    session = ANTHROPIC.parse_request(_session_body(2, words=400))
    counter = AnthropicEstimateCounter(1.0, model=MODEL)
    whole = counter.count(session).total
    raw = counter.raw_costs(session)
    assert raw is not None
    without_first = session.with_messages(session.messages[2:])  # its turn dropped
    assert counter.count(without_first).total == whole - sum(counter.count(session).messages[:2])
    assert session.messages[0].parts == (TextPart("Question 0?"),)  # the block is beside it
    changed = session.with_messages(
        (Message("user", (TextPart("Question 0, reworded?"),)), *session.messages[1:])
    )  # its content changed: another message, rendered without the block
    assert counter.raw_costs(changed) == [0, *raw[1:]]


def test_a_counter_of_another_shape_does_not_count_them() -> None:
    session = ANTHROPIC.parse_request(_session_body(1, words=50))
    assert raw_blocks_by_message("anthropic-messages", session) is not None
    tiktoken = counter_for("openai-chat", "gpt-4o")
    assert isinstance(tiktoken, RawCosting)
    assert tiktoken.raw_costs(session) is None  # an OpenAI request does not send them
    assert tiktoken.raw_costs(session, "anthropic-messages") is not None


def test_a_session_without_raw_blocks_answers_without_digests() -> None:
    body = _session_body(1, words=50)
    body["messages"][0]["content"] = "Question 0?"
    session = ANTHROPIC.parse_request(body)
    assert raw_blocks_by_message("anthropic-messages", session) is None
    assert counter_for("anthropic-messages", MODEL).raw_costs(session) is None  # type: ignore[attr-defined]


# -- the assembler ---------------------------------------------------------------------------------


def _sent_search_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "search_result"
    ]


@pytest.mark.parametrize("incremental", [False, True])
def test_a_session_of_large_search_results_is_trimmed_to_the_budget(incremental: bool) -> None:
    # 12 pages of ~3,000 tokens each (by tiktoken: the estimate counts more), budget 20,000: the
    # pages alone are ~36,000 tokens, so most must go. Judged on the rendered body, page by page
    # with tiktoken: the neutral transcript does not hold them.
    session = ANTHROPIC.parse_request(_session_body(12))
    budget = 20_000
    if incremental:
        assembler = SessionAssembler(_config(budget), shape="anthropic-messages")
        result = assembler.assemble(session)
        assert assembler.last_path == "full:raw_blocks"
    else:
        result = assemble(session, _config(budget), shape="anthropic-messages")
    sent = _sent_search_results(result.render())
    page_tokens = sum(len(ENCODING.encode_ordinary(b["content"][0]["text"])) for b in sent)
    assert 0 < len(sent) < 12
    assert page_tokens <= budget
    counter = counter_for("anthropic-messages", MODEL)
    assert counter.count(result.view).total <= budget  # and the counter's own view agrees


def test_the_incremental_path_leaves_raw_blocks_to_the_pipeline_with_the_same_result() -> None:
    # the index counts neutral parts only: were the fallback gone, the incremental view would
    # keep pages the pipeline drops
    session = ANTHROPIC.parse_request(_session_body(6))
    config = _config(12_000)
    counter = counter_for("anthropic-messages", MODEL)
    fast = SessionAssembler(config, shape="anthropic-messages", counter=counter).assemble(session)
    slow = assemble_pipeline(session, config, shape="anthropic-messages", counter=counter)
    assert fast.view == slow.view


def test_a_counter_without_raw_costs_leaves_them_uncounted() -> None:
    class Plain:
        name = "plain"

        def count_message(self, message: Message) -> int:
            return 1

    session = ANTHROPIC.parse_request(_session_body(1, words=50))
    assert raw_costs_by_message(Plain(), session, "anthropic-messages") == {}  # type: ignore[arg-type]
    counter = counter_for("anthropic-messages", MODEL)
    found = raw_costs_by_message(counter, session, "anthropic-messages")
    assert set(found) == {(session.messages[0].id, session.messages[0].digest)}
    assert len(raw_wire_content("anthropic-messages", session).blocks) == 1


class _CountTokensLikeLocal(AnthropicCountTokensCounter):
    """A count-tokens counter whose provider answers with the local estimate of the body it
    was sent (no network): the raw blocks are in that body, so the provider counts them."""

    def _call(self, body: Mapping[str, Any]) -> int:
        parsed = ANTHROPIC.parse_request({"max_tokens": 1, **body})
        return counter_for("anthropic-messages", MODEL).count(parsed).total


def test_a_provider_counter_gives_the_pipeline_the_raw_costs_of_its_local_counter() -> None:
    # The provider's total holds the blocks; without their per-message costs the pipeline kept
    # every page and the final recount refused the request (47,340 over 20,000).
    counter = _CountTokensLikeLocal(object(), MODEL)  # type: ignore[arg-type]
    assert isinstance(counter, RawCosting)
    session = ANTHROPIC.parse_request(_session_body(12))
    assert counter.raw_costs(session) == counter_for("anthropic-messages", MODEL).raw_costs(session)  # type: ignore[attr-defined]
    result = assemble_pipeline(
        session, _config(20_000), shape="anthropic-messages", counter=counter
    )
    sent = _sent_search_results(result.render())
    assert 0 < len(sent) < 12


def test_a_record_in_any_json_spelling_is_read() -> None:
    # params hold JSON; a record not in canonical spelling (spaces after separators) is the
    # same record: its blocks are counted and the incremental path still leaves it
    session = ANTHROPIC.parse_request(_session_body(1, words=300))
    key = "anthropic-messages.extras"
    spaced = tuple(
        (k, json.dumps(json.loads(v), separators=(", ", " : ")) if k == key else v)
        for k, v in session.params
    )
    respelled = replace(session, params=spaced)
    counter = counter_for("anthropic-messages", MODEL)
    assert counter.count(respelled).total == counter.count(session).total
    assembler = SessionAssembler(_config(100_000), shape="anthropic-messages")
    assembler.assemble(respelled)
    assert assembler.last_path == "full:raw_blocks"


def test_a_record_that_is_not_json_is_named() -> None:
    session = ANTHROPIC.parse_request(_session_body(1, words=5))
    broken = replace(session, params=(("anthropic-messages.extras", "{not json"),))
    with pytest.raises(TranscriptError, match="not a JSON extras record") as info:
        counter_for("anthropic-messages", MODEL).count(broken)
    assert info.value.where == "params['anthropic-messages.extras']"


@pytest.mark.parametrize("occurrences", [["m1"], {"abc": "m1"}, {"abc": [1, 2]}])
def test_a_record_whose_occurrences_are_not_lists_of_ids_is_named(occurrences: Any) -> None:
    session = ANTHROPIC.parse_request(_session_body(1, words=5))
    key = "anthropic-messages.extras"
    record = {**json.loads(dict(session.params)[key]), "occurrences": occurrences}
    broken = replace(session, params=((key, json.dumps(record)),))
    with pytest.raises(TranscriptError, match="not an extras record") as info:
        ANTHROPIC.render_request(broken)
    assert info.value.where == "params['anthropic-messages.extras']"
    with pytest.raises(TranscriptError, match="not an extras record"):
        counter_for("anthropic-messages", MODEL).count(broken)


def test_the_blocks_handed_out_are_the_callers_to_change() -> None:
    session = ANTHROPIC.parse_request(_session_body(1, words=300))
    counter = AnthropicEstimateCounter(1.3, model=MODEL)
    before = counter.raw_costs(session)
    found = raw_blocks_by_message("anthropic-messages", session)
    assert found is not None
    found[0][0]["content"][0]["text"] = "x"  # a caller's copy
    again = raw_blocks_by_message("anthropic-messages", session)
    assert again is not None
    assert again[0][0]["content"][0]["text"] == _page(0, words=300)
    assert AnthropicEstimateCounter(1.3, model=MODEL).raw_costs(session) == before


# -- merged neighbours -------------------------------------------------------------------------------

BEDROCK = get_shape("bedrock-converse")
GEMINI = get_shape("gemini")


def test_user_turns_merged_for_bedrock_keep_their_guard_and_cache_blocks_in_place() -> None:
    # B3 merges the three user turns into one: each turn's blocks stay where they were among its
    # own parts (a guardContent was dropped, and the count charged it for nothing)
    second_guard = {"guardContent": {"text": {"text": "second guard"}}}
    turns = [
        [{"text": "a"}, {"guardContent": {"text": {"text": "check this"}}}, {"text": "b"}],
        [{"text": "c"}, second_guard, {"cachePoint": {"type": "default"}}],
        [{"text": "d"}],
    ]
    body = {"messages": [{"role": "user", "content": content} for content in turns]}
    session = BEDROCK.parse_request(body)
    result = assemble(session, _config(50_000), shape="bedrock-converse")
    assert "normalize" in result.report.steps
    assert result.render()["messages"] == [
        {"role": "user", "content": [block for content in turns for block in content]}
    ]
    counter = counter_for("bedrock-converse", BEDROCK.default_model)
    merged = counter.raw_costs(result.view)  # type: ignore[attr-defined]
    assert merged is not None
    assert merged[0] > 0  # the merged turn is counted with its blocks


def test_a_model_turn_merged_for_gemini_keeps_its_code_execution_parts() -> None:
    code = {"executableCode": {"code": "print(1)", "language": "PYTHON"}}
    outcome = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
    call = {"functionCall": {"name": "lookup", "args": {"q": "x"}}}
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "compute"}]},
            {"role": "model", "parts": [{"text": "running"}, code, outcome]},
            {"role": "model", "parts": [call]},  # G1: merged into the turn before
            {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {}}}]},
            {"role": "user", "parts": [{"text": "thanks"}]},
        ],
        "tools": [{"functionDeclarations": [{"name": "lookup"}]}],
    }
    session = GEMINI.parse_request(body)
    result = assemble(session, _config(50_000), shape="gemini")
    assert "normalize" in result.report.steps
    model_turns = [c for c in result.render()["contents"] if c["role"] == "model"]
    assert model_turns == [{"role": "model", "parts": [{"text": "running"}, code, outcome, call]}]


def test_a_signed_model_turn_merged_for_gemini_moves_the_next_turn_s_fields_by_its_wire_parts() -> (
    None
):
    # a thought signature rides on the part after it: the earlier turn is three wire parts, where
    # its parts and raw blocks are four, and the later turn's part member lands on its call
    earlier = [
        {"text": "running", "thoughtSignature": "c2lnbmF0dXJl"},
        {"executableCode": {"code": "print(1)", "language": "PYTHON"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
    ]
    later = [{"functionCall": {"name": "lookup", "args": {}}, "videoMetadata": {"fps": 1}}]
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": earlier},
            {"role": "model", "parts": later},
            {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {}}}]},
        ],
        "tools": [{"functionDeclarations": [{"name": "lookup"}]}],
    }
    session = GEMINI.parse_request(body)
    assert len(session.messages[1].parts) == 2  # the signature is a part of its own
    result = assemble(session, _config(50_000), shape="gemini")
    model_turns = [c for c in result.render()["contents"] if c["role"] == "model"]
    assert model_turns == [{"role": "model", "parts": [*earlier, *later]}]


def test_a_merge_without_extras_leaves_the_params_as_they_were() -> None:
    body = {"messages": [{"role": "user", "content": [{"text": t}]} for t in ("a", "b")]}
    session = BEDROCK.parse_request(body)
    result = assemble(session, _config(50_000), shape="bedrock-converse")
    assert "normalize" in result.report.steps
    assert result.view.params == session.params


def test_a_message_with_the_content_of_a_merged_one_keeps_its_blocks() -> None:
    # "a" then "a" + a guard block: one content, occurrences #0 and #1. The first "a" merges
    # with "b", so the second becomes #0 of its content: the record is rebuilt for that
    guard = {"guardContent": {"text": {"text": "check this"}}}
    body = {
        "messages": [
            {"role": "user", "content": [{"text": "a"}]},
            {"role": "user", "content": [{"text": "b"}]},
            {"role": "assistant", "content": [{"text": "ok"}]},
            {"role": "user", "content": [{"text": "a"}, guard]},
        ]
    }
    session = BEDROCK.parse_request(body)
    assert session.messages[0].digest == session.messages[3].digest
    sent = assemble(session, _config(50_000), shape="bedrock-converse").render()["messages"]
    assert sent[-1] == {"role": "user", "content": [{"text": "a"}, guard]}
    assert sent[0] == {"role": "user", "content": [{"text": "a"}, {"text": "b"}]}


def test_blocks_of_messages_no_merge_touches_stay_where_they_are() -> None:
    guard = {"guardContent": {"text": {"text": "check this"}}}
    body = {
        "messages": [
            {"role": "user", "content": [{"text": "a"}]},
            {"role": "user", "content": [{"text": "b"}]},  # merged into "a"
            {"role": "assistant", "content": [{"text": "ok"}]},
            {"role": "user", "content": [{"text": "c"}, guard]},
        ]
    }
    session = BEDROCK.parse_request(body)
    result = assemble(session, _config(50_000), shape="bedrock-converse")
    assert result.render()["messages"][-1] == {"role": "user", "content": [{"text": "c"}, guard]}
    assert result.view.params == session.params  # nothing to carry: the record as it was


# -- messages of equal content -------------------------------------------------------------------


def _document(title: str, text: str) -> dict[str, Any]:
    source = {"type": "text", "media_type": "text/plain", "data": text}
    return {"type": "document", "source": source, "title": title}


def _equal_turns_body(first: list[Any], second: list[Any]) -> dict[str, Any]:
    """A task, a long answer, two user turns whose neutral parts are alike (``first`` and
    ``second``: their wire content) with a long answer between them, and a question: a budget
    that holds the second turn but not the answers drops the first of the two
    (``_equal_turns_config``: the suffix holds the newest user turn only)."""
    messages = [
        {"role": "user", "content": "Compare the runbooks."},
        {"role": "assistant", "content": _page(7, 1200)},
        {"role": "user", "content": first},
        {"role": "assistant", "content": _page(8, 300)},
        {"role": "user", "content": second},
        {"role": "assistant", "content": "Read."},
        {"role": "user", "content": "Which one covers failover?"},
    ]
    return {"model": MODEL, "max_tokens": 1024, "messages": messages}


_READ = {"type": "text", "text": "Read this one."}


def _equal_turns_config(budget: int) -> AssemblyConfig:
    return _config(budget).with_changes(recent_user_turns=1)


@pytest.mark.parametrize("incremental", [False, True])
def test_a_kept_message_is_sent_with_its_own_document_when_an_equal_one_before_it_goes(
    incremental: bool,
) -> None:
    # Both turns parse to one text part "Read this one." (the documents have no neutral part):
    # one content, occurrences #0 and #1. Dropping the first made the second #0, so it was sent
    # with the first's document (the one the assembly had just dropped) and without its own.
    body = _equal_turns_body(
        [_document("Runbook A", _page(1, 1500)), _READ],
        [_document("Runbook B", _page(2, 40)), _READ],
    )
    session = ANTHROPIC.parse_request(body)
    assert session.messages[2].digest == session.messages[4].digest
    config = _equal_turns_config(800)
    if incremental:
        result = SessionAssembler(config, shape="anthropic-messages").assemble(session)
    else:
        result = assemble(session, config, shape="anthropic-messages")
    ids = [m.id for m in result.view.messages]
    assert session.messages[2].id not in ids
    assert session.messages[4].id in ids
    sent = [
        block["title"]
        for message in result.render()["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "document"
    ]
    assert sent == ["Runbook B"]
    # and what the counters charge the kept turn is its own document
    by_message = raw_blocks_by_message("anthropic-messages", result.view)
    assert by_message is not None
    kept = ids.index(session.messages[4].id)
    assert [b["title"] for b in by_message[kept]] == ["Runbook B"]
    blocks = raw_wire_content("anthropic-messages", result.view).blocks
    # the dropped turn's document is in the record, addressed by no message of the view
    assert [(role, block["title"]) for role, block in blocks] == [
        ("user", "Runbook B"),
        (None, "Runbook A"),
    ]


@pytest.mark.parametrize("incremental", [False, True])
def test_a_cache_breakpoint_stays_on_its_message_when_an_equal_one_after_it_is_kept(
    incremental: bool,
) -> None:
    # The first turn carries the breakpoint (a field, #0), the second none: kept alone, the
    # second used to take the first's breakpoint. The incremental path takes fields-only
    # sessions itself (no raw block to count), so both paths are tried.
    marked = {**_READ, "cache_control": {"type": "ephemeral"}}
    session = ANTHROPIC.parse_request(_equal_turns_body([marked], [_READ]))
    config = _equal_turns_config(200)
    if incremental:
        assembler = SessionAssembler(config, shape="anthropic-messages")
        result = assembler.assemble(session)
        assert assembler.last_path == "incremental"
    else:
        result = assemble(session, config, shape="anthropic-messages")
    ids = [m.id for m in result.view.messages]
    assert session.messages[2].id not in ids
    kept = result.render()["messages"][ids.index(session.messages[4].id)]
    assert kept == {"role": "user", "content": [_READ]}


def test_the_record_names_the_ids_of_a_repeated_content_only_when_one_carries_extras() -> None:
    marked = {**_READ, "cache_control": {"type": "ephemeral"}}
    record = json.loads(
        dict(ANTHROPIC.parse_request(_equal_turns_body([marked], [_READ])).params)[
            "anthropic-messages.extras"
        ]
    )
    session = ANTHROPIC.parse_request(_equal_turns_body([marked], [_READ]))
    assert record["occurrences"] == {
        session.messages[2].digest[:16]: [session.messages[2].id, session.messages[4].id]
    }
    # "Read." and the other repeated turns carry nothing: no record at all without the field
    plain = ANTHROPIC.parse_request(_equal_turns_body([_READ], [_READ]))
    assert "anthropic-messages.extras" not in dict(plain.params)


def test_a_record_without_occurrences_and_a_view_with_new_ids_go_by_order() -> None:
    # A record written before occurrences were kept, and a view whose messages an assembler gave
    # new ids: the n-th message of a content in the view is #n, as before.
    marked = {**_READ, "cache_control": {"type": "ephemeral"}}
    session = ANTHROPIC.parse_request(_equal_turns_body([marked], [_READ]))
    key = "anthropic-messages.extras"
    record = json.loads(dict(session.params)[key])
    del record["occurrences"]
    old = replace(
        session, params=tuple(sorted({**dict(session.params), key: json.dumps(record)}.items()))
    )
    assert ANTHROPIC.render_request(old) == ANTHROPIC.render_request(session)
    renamed = session.with_messages(
        tuple(m.with_id(f"new-{i}") for i, m in enumerate(session.messages))
    )
    view = renamed.with_messages(renamed.messages[4:])  # the first marked turn gone
    assert "cache_control" in json.dumps(ANTHROPIC.render_request(view))


def test_a_view_made_again_without_ids_cannot_take_another_message_s_extras() -> None:
    # Messages made again without ids take the ids of their new positions (``default_id``):
    # the record's ids carry an occurrence number after the position id, so the turn that moved
    # to the place the first document turn had is not taken for it.
    body = _equal_turns_body(
        [_document("Runbook A", _page(1, 40)), _READ], [_document("Runbook B", _page(2, 40)), _READ]
    )
    session = ANTHROPIC.parse_request(body)
    first, second = session.messages[2], session.messages[4]
    assert (first.id, second.id) == (
        f"{default_id(2, first)}.0",
        f"{default_id(4, second)}.1",
    )
    view = session.with_messages(tuple(Message(m.role, m.parts) for m in session.messages[2:]))
    assert view.messages[2].id == default_id(2, second)  # the position id the first one had
    sent = [
        [b["title"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "document"]
        for m in ANTHROPIC.render_request(view)["messages"]
    ]
    assert sent == [["Runbook A"], [], ["Runbook B"], [], []]


def test_the_pipeline_charges_each_unit_its_own_messages_raw_blocks_and_nothing_more() -> None:
    # a unit's cost is its messages' counts plus the raw blocks each of them carries: the turns
    # without blocks cost what the counter gives them (the turn equal to the one with the
    # document too), the one with a document its count plus the document's
    body = _equal_turns_body([_document("Runbook A", _page(1, 40)), _READ], [_READ])
    session = ANTHROPIC.parse_request(body)
    counter = counter_for("anthropic-messages", MODEL)
    config = _config(100_000)
    state = load_state(
        session,
        config=config,
        counter=counter,
        summarizer=DeterministicSummarizer(),
        ledger=Ledger(),
        plan=plan_budget(config, 100_000),
        shape="anthropic-messages",
        injections=(),
    )
    raw = counter.raw_costs(session, "anthropic-messages")
    assert raw is not None
    assert [bool(cost) for cost in raw] == [False, False, True, False, False, False, False]
    by_id = {m.id: cost for m, cost in zip(session.messages, raw, strict=True)}
    for unit in state.units:
        expected = sum(counter.count_message(m) + by_id[m.id] for m in unit.messages)
        assert state.cost(unit) == expected
