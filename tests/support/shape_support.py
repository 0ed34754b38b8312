"""What the shape tests share: the public recordings, what a request body means to each provider,
and fuzzing bodies into parse errors.

The ``*_meaning`` functions are written from the raw JSON and each API reference (not from the
shapes' own code): a recorded body and our rendering of it are compared through them, so
equivalent spellings of the same request count as equal.

Imported by the shape tests (``tests/reference_impl/test_shapes_*.py``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest
from hypothesis import strategies as st
from paths import RECORDINGS

from reference_impl.errors import ParseError, ShapeError
from reference_impl.shapes.base import ShapeAdapter
from reference_impl.transcript import Message, TextPart, Transcript

__all__ = [
    "FUZZ_EXAMPLES",
    "after_question",
    "anthropic_meaning",
    "assert_parsed_or_located",
    "assert_raises_at",
    "assert_round_trips_in_meaning",
    "assert_transcript_or_parse_error",
    "bedrock_meaning",
    "chat_meaning",
    "chat_ring",
    "gemini_meaning",
    "needs_recordings",
    "parse_outcome",
    "plain_json",
    "recorded_of_shape",
    "recorded_replies",
    "recorded_requests",
    "responses_meaning",
    "sorted_json",
    "split_refused",
    "vocabulary_json",
    "wireish_json",
]

needs_recordings = pytest.mark.skipif(
    not RECORDINGS.is_dir(),
    reason=f"{RECORDINGS} is absent: the public recordings live next to the repo in ../shared/recordings",
)


FUZZ_EXAMPLES = 150
"""Examples for a garbage-in property: it needs fewer than a round trip, as most draws die at the
first wrong type."""


def recorded_of_shape(shape: str, in_file: str = "") -> list[Any]:
    """Every recorded interaction of ``shape``, wherever it is filed (gateways included), from the
    files whose path contains ``in_file``."""
    from conformance.traffic.reading import iter_recordings

    return [i for i in iter_recordings(RECORDINGS) if i.shape == shape and in_file in i.file]


def assert_round_trips_in_meaning(
    adapter: ShapeAdapter, interactions: Iterable[Any], skeleton: Callable[[Any], object]
) -> list[dict[str, Any]]:
    """Each recorded request parses, renders back to a body with the same ``skeleton`` (what it
    means to the provider), and that render parses to the same transcript; the rendered bodies,
    in the order of ``interactions``."""
    renders: list[dict[str, Any]] = []
    for interaction in interactions:
        body = interaction.request_body
        assert isinstance(body, dict), interaction
        transcript = adapter.parse_request(body)
        rendered = adapter.render_request(transcript)
        assert skeleton(rendered) == skeleton(body), interaction
        assert adapter.parse_request(rendered) == transcript, interaction
        renders.append(rendered)
    return renders


def split_refused(interactions: Iterable[Any], answer: str) -> tuple[list[Any], list[Any]]:
    """The interactions whose recorded response contains ``answer`` (requests the provider
    refused, which the shape must refuse too), and the others."""
    refused: list[Any] = []
    others: list[Any] = []
    for interaction in interactions:
        (refused if answer in str(interaction.response_body) else others).append(interaction)
    return refused, others


def recorded_requests(folder: str) -> list[Any]:
    """The recorded interactions under ``RECORDINGS/folder`` whose request body is an object."""
    from conformance.traffic.reading import iter_recordings

    return [i for i in iter_recordings(RECORDINGS / folder) if isinstance(i.request_body, dict)]


def recorded_replies(interactions: Iterable[Any], key: str | None = None) -> list[dict[str, Any]]:
    """The response bodies of the interactions the provider answered: status 200 and a JSON
    object (that holds ``key``, when given)."""
    return [
        i.response_body
        for i in interactions
        if i.status == 200
        and isinstance(i.response_body, dict)
        and (key is None or key in i.response_body)
    ]


# ------------------------------------------------------------------- what a body means


def chat_call(
    call_id: str, *, name: str = "f", arguments: str = "{}", content: str | None = None
) -> dict[str, Any]:
    """A Chat Completions assistant message (its ``content`` as given) with one call of ``name``."""
    function = {"name": name, "arguments": arguments}
    call = {"id": call_id, "type": "function", "function": function}
    return {"role": "assistant", "content": content, "tool_calls": [call]}


def chat_ring(
    call_id: str, *, content: str | None = "", arguments: str = "{}"
) -> list[dict[str, Any]]:
    """Chat Completions messages of one answered call: the assistant message with one call of
    function ``f`` (its ``content`` as given) and the tool message that answers it with ``ok``."""
    return [
        chat_call(call_id, arguments=arguments, content=content),
        {"role": "tool", "tool_call_id": call_id, "content": "ok"},
    ]


def chat_unanswered(call_id: str, *, name: str = "f") -> list[dict[str, Any]]:
    """Chat Completions messages that break C1: a user turn, a call of ``name``, and a user turn
    where its result should be."""
    return [
        {"role": "user", "content": "hi"},
        chat_call(call_id, name=name),
        {"role": "user", "content": "and?"},
    ]


def chat_meaning(body: dict[str, Any]) -> dict[str, Any]:
    """Meaning of a Chat body, computed straight from the JSON (content forms normalised)."""

    def texts(content: Any) -> list[Any]:
        if content is None:
            return []
        if isinstance(content, str):
            return [("text", content)]
        return [json.dumps(p, sort_keys=True) for p in content]

    messages = [
        (
            m["role"],
            m.get("name"),
            texts(m.get("content")),
            m.get("reasoning_content"),
            [
                (c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in m.get("tool_calls") or []
            ],
            m.get("tool_call_id"),
        )
        for m in body["messages"]
    ]
    tools = [
        json.dumps(
            {"description": "", "parameters": {"type": "object"}} | t["function"], sort_keys=True
        )
        for t in body.get("tools", [])
    ]
    rest = {k: v for k, v in body.items() if k not in ("messages", "tools")}
    return {"messages": messages, "tools": tools, "rest": rest}


def responses_meaning(body: dict[str, Any]) -> dict[str, Any]:
    """Meaning of a Responses body from the raw JSON: instructions count as a leading system item."""

    def texts(content: Any) -> list[Any]:
        if isinstance(content, str):
            return [("text", content)]
        return [
            ("text", p["text"])
            if p["type"] in ("input_text", "output_text")
            else json.dumps(p, sort_keys=True)
            for p in content
        ]

    given = body["input"]
    items: list[Any] = []
    if body.get("instructions") is not None:
        items.append(("message", "system", None, [("text", body["instructions"])]))
    for item in [{"role": "user", "content": given}] if isinstance(given, str) else given:
        kind = item.get("type", "message")
        if kind == "message":
            items.append(("message", item["role"], item.get("id"), texts(item["content"])))
        elif kind == "function_call":
            items.append((kind, item["call_id"], item["name"], item["arguments"], item.get("id")))
        elif kind == "function_call_output":
            items.append((kind, item["call_id"], texts(item["output"]), item.get("id")))
        else:
            items.append((kind, json.dumps(item, sort_keys=True)))
    tools = [json.dumps({"description": ""} | t, sort_keys=True) for t in body.get("tools", [])]
    rest = {k: v for k, v in body.items() if k not in ("input", "instructions", "tools")}
    return {"items": items, "tools": tools, "rest": rest}


def anthropic_meaning(body: dict[str, Any]) -> dict[str, Any]:
    """A body with Anthropic's equivalent spellings normalised (string content = one text block,
    ``is_error: false`` = absent, ``description: ""`` = absent), written from the API reference."""
    out = copy.deepcopy(body)

    def blocks(content: Any) -> list[Any]:
        return [{"type": "text", "text": content}] if isinstance(content, str) else content

    if "system" in out:
        out["system"] = blocks(out["system"])
    for message in out.get("messages", []):
        message["content"] = blocks(message["content"])
        for block in message["content"]:
            if block.get("type") == "tool_result":
                if block.get("is_error") is False:
                    del block["is_error"]
                if "content" in block:
                    block["content"] = blocks(block["content"])
    for tool in out.get("tools", []):
        if tool.get("description") == "":
            del tool["description"]
    return out


_CAMEL = {
    "system_instruction": "systemInstruction",
    "function_declarations": "functionDeclarations",
    "parameters_json_schema": "parametersJsonSchema",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "thought_signature": "thoughtSignature",
    "inline_data": "inlineData",
    "file_data": "fileData",
}


def gemini_meaning(body: dict[str, Any]) -> dict[str, Any]:
    """Protobuf JSON accepts snake_case and camelCase field names alike: normalise to camelCase
    for the structural keys (never inside args, responses or schemas)."""
    out = {_CAMEL.get(k, k): copy.deepcopy(v) for k, v in body.items()}
    for content in out.get("contents", []):
        content["parts"] = [{_CAMEL.get(k, k): v for k, v in p.items()} for p in content["parts"]]
    for tool in out.get("tools", []):
        for key in list(tool):
            tool[_CAMEL.get(key, key)] = tool.pop(key)
        tool["functionDeclarations"] = [
            {_CAMEL.get(k, k): v for k, v in d.items()}
            for d in tool.get("functionDeclarations", [])
        ]
    return out


def bedrock_meaning(body: dict[str, Any]) -> dict[str, Any]:
    """``system: []`` is the same as no system (Converse API reference: system is optional)."""
    return {k: v for k, v in body.items() if not (k == "system" and v == [])}


def after_question(*messages: Message) -> Transcript:
    """A session that opens with the user's question ``q``, then ``messages``."""
    return Transcript((Message("user", (TextPart("q"),)), *messages))


def sorted_json(value: object) -> str:
    """Canonical JSON written independently of ``transcript.canonical_json``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_outcome(parse: Callable[[Any], object], body: Any) -> object:
    """The parse result, or the ParseError it raised; anything else propagates and fails."""
    try:
        return parse(body)
    except ParseError as exc:
        return exc


def assert_parsed_or_located(
    parse: Callable[[Any], object], body: Any, result: type[Transcript | Message]
) -> None:
    """``parse(body)`` gives a ``result`` or a ParseError that says where."""
    outcome = parse_outcome(parse, body)
    assert isinstance(outcome, result) or (isinstance(outcome, ParseError) and outcome.where)


def assert_raises_at(
    error: type[ShapeError], where: str, function: Callable[[Any], object], value: Any
) -> None:
    """``function(value)`` raises ``error`` located at ``where`` (the provider's own path)."""
    with pytest.raises(error) as info:
        function(value)
    assert info.value.where == where


def assert_transcript_or_parse_error(adapter: ShapeAdapter, body: Any) -> None:
    """Both parsers of ``adapter`` give a result or a ParseError that says where."""
    for parse in (adapter.parse_request, adapter.parse_response):
        outcome = parse_outcome(parse, body)
        if isinstance(outcome, ParseError):
            assert outcome.where
        else:
            assert isinstance(outcome, Transcript | Message)


def vocabulary_json(words: Sequence[str], *, floats: bool = False) -> st.SearchStrategy[Any]:
    """JSON values whose keys and strings are often the shape's own words."""
    vocabulary = st.sampled_from(list(words))
    scalars: list[st.SearchStrategy[Any]] = [st.none(), st.booleans(), st.integers()]
    if floats:
        scalars.append(st.floats(allow_nan=False))
    return st.recursive(
        st.one_of(*scalars, st.text(max_size=5), vocabulary),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(vocabulary | st.text(max_size=3), inner, max_size=5)
        ),
        max_leaves=30,
    )


plain_json: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
"""Any JSON value (keys and strings random)."""


def wireish_json(keys: Sequence[str], atoms: Sequence[str]) -> st.SearchStrategy[Any]:
    """Objects keyed by the shape's own keys, with its own atoms (roles, types) among the values."""
    return st.recursive(
        plain_json | st.sampled_from(list(atoms)),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(list(keys)), inner, max_size=5)
        ),
        max_leaves=30,
    )
