"""The mapping steps the shape modules share (reference_impl/shapes/_mapping.py, _extras.py)."""

from __future__ import annotations

import pytest

from reference_impl.errors import UnsupportedPartError
from reference_impl.shapes._extras import Extras, body_params
from reference_impl.shapes._mapping import (
    call_arguments,
    leading_system_count,
    text_part,
    with_summaries,
)
from reference_impl.transcript import (
    Message,
    SummaryPart,
    TextPart,
    ToolCallPart,
    Transcript,
)


def _call(arguments: str) -> ToolCallPart:
    return ToolCallPart(id="c1", name="lookup", arguments=arguments)


def test_call_arguments_empty_text_is_an_empty_object() -> None:
    assert call_arguments(_call("  "), "gemini", 0, 0, field="args", object_only=True) == {}


def test_call_arguments_not_json_names_the_call_and_position() -> None:
    with pytest.raises(UnsupportedPartError, match=r"'c1'.*not JSON.*args must be an object") as e:
        call_arguments(_call("{oops"), "gemini", 3, 1, field="args", object_only=True)
    assert e.value.where == "messages[3].parts[1]"


def test_call_arguments_object_only_refuses_an_array_but_a_document_shape_takes_it() -> None:
    with pytest.raises(UnsupportedPartError, match="JSON list"):
        call_arguments(_call("[1]"), "anthropic-messages", 0, 0, field="input", object_only=True)
    assert call_arguments(
        _call("[1]"), "bedrock-converse", 0, 0, field="input", object_only=False
    ) == [1]


def test_leading_system_count_stops_at_the_first_other_role() -> None:
    messages = [
        Message(role="system", parts=(TextPart("a"),)),
        Message(role="developer", parts=(TextPart("b"),)),
        Message(role="user", parts=(TextPart("c"),)),
        Message(role="system", parts=(TextPart("d"),)),
    ]
    assert leading_system_count(messages) == 2
    assert leading_system_count(messages[2:]) == 0
    assert leading_system_count([]) == 0


def test_summaries_are_read_only_where_the_role_may_hold_one() -> None:
    wire = SummaryPart(text="earlier work").wire_text()
    assert isinstance(text_part(wire, "user"), SummaryPart)
    assert text_part(wire, "assistant") == TextPart(wire)
    assert with_summaries([TextPart(wire)], "system") == (SummaryPart(text="earlier work"),)
    assert with_summaries([TextPart(wire)], "tool") == (TextPart(wire),)


def test_body_params_skips_consumed_and_shape_private_keys() -> None:
    transcript = Transcript(
        messages=(Message(role="user", parts=(TextPart("hi"),)),),
        params=(("gemini.extras", "{}"), ("messages", "[]"), ("temperature", "0.5")),
    )
    assert body_params(transcript, frozenset({"messages"})) == {"temperature": 0.5}


def test_raw_tools_go_back_at_their_positions_or_at_the_end() -> None:
    extras = Extras("anthropic-messages", raw_tools=[(5, "late"), (0, "first")])
    assert extras.insert_raw_tools(["a", "b"]) == ["first", "a", "b", "late"]
