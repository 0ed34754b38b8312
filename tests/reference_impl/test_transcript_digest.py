"""``Message.digest``, the key of the token memo: equal content, equal digest; different content,
different digest; the id never matters; computed once per object (also across ``with_id``)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from reference_impl.shapes._mapping import text_part
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_digest,
    message_to_dict,
)
from reference_impl.transcript.model import default_id, kind_codes, text_message_at

# Small alphabets so that near-equal messages (one field moved to another) are generated often.
_text = st.text(alphabet='ab{}":,\x00é', max_size=4)
_opt = st.none() | _text
_attachment = (
    st.builds(TextPart, _text)
    | st.builds(
        ImagePart,
        st.sampled_from(["url", "base64"]),
        _text,
        _opt,
        st.sampled_from([None, "low", "high"]),
        st.none() | st.integers(1, 3),
        st.none() | st.integers(1, 3),
    )
    | st.builds(FilePart, st.sampled_from(["url", "base64"]), _text, _opt, _opt)
)
_assistant = st.builds(
    Message,
    st.just("assistant"),
    st.lists(
        st.builds(TextPart, _text)
        | st.builds(ToolCallPart, _text, _text, _text, _opt)
        | st.builds(
            ReasoningPart,
            st.sampled_from(["deepseek", "gemini"]),
            st.sampled_from(["{}", "[]"]),
            st.none() | st.integers(0, 2),
        ),
        max_size=3,
    ).map(tuple),
    _opt,
    _opt,
    st.booleans(),
)
_tool = st.builds(
    Message,
    st.just("tool"),
    st.lists(
        st.builds(
            ToolResultPart, _text, st.lists(_attachment, max_size=2).map(tuple), st.booleans(), _opt
        ),
        max_size=3,
    ).map(tuple),
)
_user = st.builds(
    Message,
    st.sampled_from(["user", "system"]),
    st.lists(st.builds(TextPart, _text) | st.builds(SummaryPart, _text), max_size=3).map(tuple),
    _opt,
)
_messages = _assistant | _tool | _user


@settings(max_examples=examples(400), deadline=None)
@given(_messages, _messages)
def test_digest_equal_exactly_when_content_equal(a: Message, b: Message) -> None:
    same = message_to_dict(a, with_id=False) == message_to_dict(b, with_id=False)
    assert (a.digest == b.digest) == same


@settings(max_examples=100, deadline=None)
@given(_messages, _text)
def test_id_is_not_part_of_the_digest_and_with_id_keeps_it(message: Message, new_id: str) -> None:
    digest = message.digest
    renamed = message.with_id("id-" + new_id)
    assert renamed.digest == digest
    assert renamed._digest == digest  # carried over, not recomputed


def test_one_moved_boundary_changes_the_digest() -> None:
    # Length prefixes keep field boundaries: "ab" + "c" differs from "a" + "bc".
    one = Message("assistant", (ToolCallPart("ab", "c", "{}"),))
    two = Message("assistant", (ToolCallPart("a", "bc", "{}"),))
    assert one.digest != two.digest
    assert Message("user", (TextPart(""),)).digest != Message("user", ()).digest


def _field(value: str | None) -> bytes:
    if value is None:
        return b"N"
    raw = value.encode("utf-8")
    return b"S%d:" % len(raw) + raw


@pytest.mark.parametrize(
    ("role", "text", "name", "wire_id"),
    [
        ("user", "hello", None, None),
        ("assistant", "déjà vu 部署", "bot", None),
        ("system", "", None, "msg_1"),
        ("developer", "x" * 300, "a", "b"),
    ],
)
def test_a_one_text_message_digests_the_documented_bytes(role, text, name, wire_id) -> None:
    # The digest of a message of one text part is written without the general walk: it must be
    # the same bytes, spelled out here from the format (tag, fields, then the parts).
    raw = (
        b"ctxconf.message/2F"
        + _field(role)
        + _field(name)
        + _field(wire_id)
        + b"P1:text"
        + _field(text)
    )
    message = Message(role, (TextPart(text),), name=name, wire_id=wire_id)
    assert message.digest == hashlib.sha256(raw).hexdigest()
    # and a message of two parts still takes the walk: the same bytes with P2 and both parts
    two = Message(role, (TextPart(text), TextPart("")), name=name, wire_id=wire_id)
    raw_two = raw.replace(b"P1:", b"P2:") + b"text" + _field("")
    assert two.digest == hashlib.sha256(raw_two).hexdigest()


@settings(max_examples=examples(200), deadline=None)
@given(
    st.sampled_from(["system", "developer", "user", "assistant"]),
    st.text(max_size=40),
    st.integers(0, 10_000),
)
def test_a_message_made_with_its_id_is_the_message_a_transcript_makes(role, text, index) -> None:
    # text_message_at (parsers) builds the message, its digest and its id at once, without
    # the constructor's walk: the same message, digest and id as Message + Transcript give
    part = text_part(text, role)
    made = text_message_at(index, role, part)
    plain = Message(role, (part,))
    assert made == plain
    assert made.digest == message_digest(plain)
    assert made.id == default_id(index, plain) == f"m{index}-{plain.digest[:10]}"
    assert made.tool_calls == ()
    assert made.name is None
    assert not made.empty_tool_calls
    assert kind_codes([made]) == kind_codes([plain])
