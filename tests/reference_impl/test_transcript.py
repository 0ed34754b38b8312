"""Strict session files and tool lists: a typo or a duplicate is a named error, never lost."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from reference_impl.errors import ParseError, SessionFileError, TranscriptError
from reference_impl.shapes import get_shape
from reference_impl.transcript import (
    ImagePart,
    Message,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolSpec,
    Transcript,
    params_from_mapping,
    transcript_from_dict,
)
from reference_impl.transcript.model import (
    KIND_ASSISTANT,
    KIND_DEVELOPER,
    KIND_OTHER,
    KIND_SYSTEM,
    KIND_USER,
    kind_codes,
    kind_positions,
    plain_texts,
    text_message_at,
)


def _doc(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": "ctxconf.transcript",
        "version": 1,
        "messages": [{"role": "user", "parts": [{"kind": "text", "text": "hi"}]}],
    }
    doc.update(extra)
    return doc


@pytest.mark.parametrize(
    ("document", "where", "key"),
    [
        (_doc(mesages=[]), "$", "mesages"),
        (
            _doc(messages=[{"role": "user", "part": [], "parts": []}]),
            "messages[0]",
            "part",
        ),
        (
            _doc(messages=[{"role": "user", "parts": [{"kind": "text", "text": "x", "txt": "y"}]}]),
            "messages[0].parts[0]",
            "txt",
        ),
        (_doc(tools=[{"name": "f", "schema": {}}]), "tools[0]", "schema"),
    ],
)
def test_unknown_keys_in_a_session_file_are_named(document: Any, where: str, key: str) -> None:
    with pytest.raises(SessionFileError) as caught:
        transcript_from_dict(document)
    assert caught.value.where == where
    assert repr(key) in caught.value.message


def test_ledger_and_memory_may_ride_along_in_a_session_file() -> None:
    transcript = transcript_from_dict(_doc(ledger=[], memory=[]))
    assert len(transcript) == 1


def test_duplicate_tool_names_in_a_transcript() -> None:
    with pytest.raises(TranscriptError) as caught:
        Transcript((Message("user", (TextPart("hi"),)),), tools=(ToolSpec("f"), ToolSpec("f")))
    assert caught.value.where == "tools[1]"
    assert "'f'" in caught.value.message


@pytest.mark.parametrize(
    ("params", "where", "says"),
    [
        ({"max_tokens": 5}, None, "params_from_mapping"),
        ((("max_tokens", 5),), "params[0]", "pair of strings"),
        ((("max_tokens",),), "params[0]", "pair of strings"),
    ],
)
def test_params_of_the_wrong_type_are_named(params: Any, where: str | None, says: str) -> None:
    """A dict (or pairs whose value is not canonical JSON text) is refused where it is given,
    not met later as an unpacking error inside a shape."""
    with pytest.raises(TranscriptError) as caught:
        Transcript((Message("user", (TextPart("hi"),)),), params=params)
    assert caught.value.where == where
    assert says in caught.value.message


@pytest.mark.parametrize(
    ("shape", "body", "where"),
    [
        (
            "openai-chat",
            {
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "f"}}] * 2,
            },
            "tools[1].function.name",
        ),
        (
            "openai-responses",
            {"input": "hi", "tools": [{"type": "function", "name": "f"}] * 2},
            "tools[1].name",
        ),
        (
            "anthropic-messages",
            {
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"name": "f", "input_schema": {"type": "object"}}] * 2,
            },
            "tools.1.name",
        ),
        (
            "gemini",
            {
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "tools": [{"functionDeclarations": [{"name": "f"}, {"name": "f"}]}],
            },
            "tools[0].functionDeclarations[1].name",
        ),
        (
            "bedrock-converse",
            {
                "messages": [{"role": "user", "content": [{"text": "hi"}]}],
                "toolConfig": {
                    "tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {}}}}] * 2
                },
            },
            "toolConfig.tools.1.toolSpec.name",
        ),
    ],
)
def test_duplicate_tool_names_are_a_parse_error_at_the_provider_path(
    shape: str, body: dict[str, Any], where: str
) -> None:
    with pytest.raises(ParseError) as caught:
        get_shape(shape).parse_request(body)
    assert caught.value.where == where
    assert "duplicate tool name 'f'" in caught.value.message


def test_count_says_when_the_model_is_unknown(tmp_path: Any) -> None:
    import json

    from click.testing import CliRunner

    from conformance.cli import cli

    path = tmp_path / "body.json"
    path.write_text(
        json.dumps({"model": "my-finetune", "messages": [{"role": "user", "content": "hi"}]})
    )
    result = CliRunner().invoke(
        cli, ["count", str(path), "--shape", "openai-chat", "--format", "json"]
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["encoding"] == "o200k_base"
    assert "unknown model 'my-finetune'" in result.stderr


def test_kind_codes_mark_the_messages_of_one_text_part_by_role() -> None:
    messages = [
        Message("system", (TextPart("s"),)),
        Message("developer", (TextPart("d"),)),
        Message("user", (TextPart("u"),)),
        Message("assistant", (TextPart("a"),)),
        Message("tool", (TextPart("t"),)),  # one text part, but a tool message
        Message("assistant", (TextPart("a"),), empty_tool_calls=True),
        Message("user", (TextPart("u"), TextPart("v"))),
        Message("user", ()),
        Message("assistant", (ToolCallPart("c", "f", "{}"),)),
        Message("user", (ImagePart("url", "https://x/y.png"),)),
        Message("user", (TextPart("u"),)).with_id("renamed"),  # the kind survives with_id
    ]
    codes = kind_codes(messages)
    assert list(codes) == [
        KIND_SYSTEM,
        KIND_DEVELOPER,
        KIND_USER,
        KIND_ASSISTANT,
        *[KIND_OTHER] * 6,
        KIND_USER,
    ]
    assert kind_positions(codes, KIND_OTHER) == [4, 5, 6, 7, 8, 9]
    assert kind_positions(codes, KIND_OTHER, 5, 8) == [5, 6, 7]
    assert kind_positions(codes, KIND_USER) == [2, 10]
    assert kind_positions(codes, KIND_USER, 3) == [10]
    assert kind_positions(b"", KIND_USER) == []


def test_plain_texts_are_the_texts_of_the_messages_a_counter_frames_by_role() -> None:
    # plain_texts: the text of a message of one text part (kind 0-3) with no name, else None,
    # however the message was made (constructor, with_id, a parser's text_message_at, a copy)
    messages = [
        Message("system", (TextPart("s"),)),
        Message("user", (TextPart(""),)),  # an empty text is still a text
        Message("user", (TextPart("u"),), name="ann"),  # named: framed with its name
        Message("tool", (TextPart("t"),)),
        Message("assistant", (TextPart("a"),), empty_tool_calls=True),
        Message("user", (TextPart("u"), TextPart("v"))),
        Message("assistant", (ToolCallPart("c", "f", "{}"),)),
        Message("user", (TextPart("w"),)).with_id("renamed"),
        Message("user", (TextPart("x"),), name="bo").with_id("renamed-named"),
        text_message_at(3, "assistant", TextPart("y")),
        text_message_at(4, "user", SummaryPart("z")),
        copy.copy(Message("developer", (TextPart("d"),))),
        pickle.loads(pickle.dumps(Message("user", (TextPart("p"),)))),
        dataclasses.replace(Message("user", (TextPart("q"),)), name="cy"),
    ]
    assert plain_texts(messages) == [
        "s", "", None, None, None, None, None, "w", None, "y", None, "d", "p", None
    ]  # fmt: skip


def test_same_messages_means_the_very_same_objects() -> None:
    from reference_impl.transcript.model import same_messages

    a = tuple(Message("user", (TextPart(f"m{i}"),)) for i in range(50))
    assert same_messages(a, a[:])
    assert same_messages((*a[:10], *a[10:]), a)
    assert not same_messages(a, a[:-1])
    # equal but distinct objects (one of them, anywhere): not the same, whatever their ids
    twin = Message("user", (TextPart("m7"),))
    assert twin == a[7]
    assert hash(twin) == hash(a[7])
    assert not same_messages((*a[:7], twin, *a[8:]), a)
    assert not same_messages((*a[:7], a[7].with_id("other"), *a[8:]), a)
    assert not same_messages((*a[:49], Message("user", (TextPart("x"),))), a)
    assert same_messages((), ())


@pytest.mark.parametrize("pointers", [True, False], ids=["memcmp", "slice"])
def test_starts_with_means_a_head_of_the_very_same_objects(
    pointers: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    from reference_impl.transcript import model

    if pointers:  # CPython: the pointer comparison is what runs, not the fallback
        assert model._POINTERS_DIFFER is not None
    else:
        monkeypatch.setattr(model, "_POINTERS_DIFFER", None)
    a = tuple(Message("user", (TextPart(f"m{i}"),)) for i in range(300))
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randrange(0, 301)
        head = (*a[:n],)  # built apart: the same objects in another tuple
        longer = (*a[:n], *a[n : n + rng.randrange(0, 5)])
        assert model.starts_with(longer, head)
        assert model.starts_with(head, head)
        assert model.starts_with(a, head)
        if n:
            k = rng.randrange(n)
            twin = Message("user", (TextPart(f"m{k}"),))  # equal, not the same object
            assert not model.starts_with((*a[:k], twin, *a[k + 1 :]), head)
            assert not model.starts_with((*a[:k], a[(k + 1) % 300], *a[k + 1 :]), head)
            assert not model.starts_with(head[:-1], head)  # shorter
    assert model.starts_with((), ()) is True
    assert model.starts_with(a, ()) is True
    assert model.starts_with((), a[:1]) is False
    twin = Message("user", (TextPart("m0"),))
    assert model.starts_with((twin, *a[1:]), a[:1]) is False  # a head of one message
    assert model.starts_with((a[0], twin), (a[0],)) is True


def test_starts_with_compares_pointers_on_cpython_and_slices_nowhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reference_impl.transcript import model

    def sliced(*_: object) -> bool:
        raise AssertionError("the slice and tuple comparison ran")

    monkeypatch.setattr(model, "same_messages", sliced)
    a = tuple(Message("user", (TextPart(f"m{i}"),)) for i in range(9))
    assert model.starts_with((*a, a[0]), a) is True
    assert model.starts_with(a, (*a[:4], a[5])) is False


def test_the_pointer_comparison_is_memcmp_over_the_item_arrays() -> None:
    from reference_impl.transcript import model

    differ = model._pointer_compare()  # made anew: what the import made is checked above
    assert differ is not None
    x, y, z = object(), object(), object()
    left, right, other = (x, y, z, x), (*(x, y), *(z, x)), (x, y, x, x)
    assert left is not right
    assert differ(id(left), id(right), 4) == 0
    assert differ(id(left), id(other), 4) != 0
    assert differ(id(left), id(other), 2) == 0  # only the first n items are read
    assert differ(id(left), id(other), 3) != 0


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1, 2}])
def test_params_from_mapping_names_a_setting_that_is_not_json(value: object) -> None:
    # canonical_json writes no NaN (JSON has none): a bare ValueError said nothing of where.
    with pytest.raises(TranscriptError) as info:
        params_from_mapping({"max_tokens": 10, "temperature": value})
    assert info.value.where == "params.temperature"
    assert str(info.value).startswith("params.temperature: not JSON data")


def test_params_from_mapping_names_where_a_nan_is_inside_a_setting() -> None:
    with pytest.raises(TranscriptError) as info:
        params_from_mapping({"metadata": {"weights": [0.5, float("nan")]}})
    assert str(info.value) == (
        "params.metadata: not JSON data: NaN at weights.1 is not a JSON number"
    )
