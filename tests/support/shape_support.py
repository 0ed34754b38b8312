"""What the shape tests share: the public recordings, and fuzzing bodies into parse errors.

Imported by the shape tests (``tests/reference_impl/test_shapes_*.py``).
"""

from __future__ import annotations

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
    "assert_parsed_or_located",
    "assert_raises_at",
    "assert_round_trips_in_meaning",
    "assert_transcript_or_parse_error",
    "needs_recordings",
    "parse_outcome",
    "plain_json",
    "recorded_of_shape",
    "recorded_requests",
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


def recorded_of_shape(shape: str) -> list[Any]:
    """Every recorded interaction of ``shape``, wherever it is filed (gateways included)."""
    from conformance.traffic.reading import iter_recordings

    return [i for i in iter_recordings(RECORDINGS) if i.shape == shape]


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
