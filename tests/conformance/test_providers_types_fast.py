"""The fast type checker (``_types.conforms``) gives the same judgement as the walk that names
the mismatch (``_types.walk_mismatch``), for every shape's body spec, on drawn JSON, with and
without ``null_optional`` (OpenAI's reading of ``null`` as "not given", C0 and R0)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.providers.validators import (
    anthropic_messages,
    bedrock_converse,
    gemini,
    openai_chat,
    openai_responses,
)
from conformance.providers.validators._types import Reading, Spec, conforms, walk_mismatch
from conformance.providers.validators._wording import snake_case

SPECS = [
    (openai_chat.BODY, Reading()),
    (openai_responses.BODY, Reading()),
    (anthropic_messages.BODY, Reading()),
    (bedrock_converse.BODY, Reading()),
    (gemini.BODY, Reading(key=snake_case, numeric_text=True)),
]


def _names(spec: Spec, out: set[str]) -> set[str]:
    for name, sub in spec.fields.items():
        if name not in out:
            out.add(name)
            _names(sub, out)
    for tag, variant in spec.variants.items():
        out.add(tag)
        _names(variant, out)
    if spec.items is not None:
        _names(spec.items, out)
    return out


NAMES = sorted(set().union(*(_names(spec, set()) for spec, _ in SPECS)) | {"type", "x"})
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.sampled_from([*NAMES, "1.5", "7", "text"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(NAMES), inner, max_size=6)
    ),
    max_leaves=30,
)


def _agree(value: Any, which: int, null_optional: bool) -> None:
    spec, as_read = SPECS[which]
    reading = replace(as_read, null_optional=null_optional)
    walked = walk_mismatch(value, spec, reading)
    assert conforms(value, spec, reading) is (walked is None)


@settings(max_examples=160, deadline=None)
@given(st.sampled_from(range(len(SPECS))), JSON, st.booleans())
def test_conforms_agrees_with_the_walk(which: int, value: Any, null_optional: bool) -> None:
    _agree(value, which, null_optional)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(range(len(SPECS))), st.data(), st.booleans())
def test_conforms_agrees_on_bodies_with_the_specs_top_level_keys(
    which: int, data: Any, null_optional: bool
) -> None:
    spec = SPECS[which][0]
    body = data.draw(st.dictionaries(st.sampled_from(sorted(spec.fields)), JSON, max_size=6))
    _agree(body, which, null_optional)


def test_null_optional_takes_null_for_an_optional_field_only() -> None:
    """C0: a recorded 200 carries ``"name": null`` on a message; a tool's function ``name``
    (required) may not be ``null``, and without ``null_optional`` neither may the message's."""
    spec = openai_chat.BODY
    named = {"messages": [{"role": "user", "content": "hi", "name": None}]}
    lenient = Reading(null_optional=True)
    assert conforms(named, spec, lenient)
    assert walk_mismatch(named, spec, lenient) is None
    assert not conforms(named, spec)
    tool = {"type": "function", "function": {"name": None}}
    nameless = {"messages": [], "tools": [tool]}
    assert not conforms(nameless, spec, lenient)
    found = walk_mismatch(nameless, spec, lenient)
    assert found is not None
    assert found.path == ("tools", 0, "function", "name")
