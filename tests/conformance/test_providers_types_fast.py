"""The fast type checker (``_types.conforms``) gives the same judgement as the walk that names
the mismatch (``_types.walk_mismatch``), for every shape's body spec, on drawn JSON."""

from __future__ import annotations

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
from conformance.providers.validators._types import Spec, conforms, walk_mismatch
from conformance.providers.validators._wording import snake_case

SPECS = [
    (openai_chat.BODY, str, False),
    (openai_responses.BODY, str, False),
    (anthropic_messages.BODY, str, False),
    (bedrock_converse.BODY, str, False),
    (gemini.BODY, snake_case, True),
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


NAMES = sorted(set().union(*(_names(spec, set()) for spec, _, _ in SPECS)) | {"type", "x"})
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


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(range(len(SPECS))), JSON)
def test_conforms_agrees_with_the_walk(which: int, value: Any) -> None:
    spec, key, numeric_text = SPECS[which]
    walked = walk_mismatch(value, spec, key=key, numeric_text=numeric_text)
    assert conforms(value, spec, key=key, numeric_text=numeric_text) is (walked is None)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(range(len(SPECS))), st.data())
def test_conforms_agrees_on_bodies_with_the_specs_top_level_keys(which: int, data: Any) -> None:
    spec, key, numeric_text = SPECS[which]
    body = data.draw(st.dictionaries(st.sampled_from(sorted(spec.fields)), JSON, max_size=6))
    walked = walk_mismatch(body, spec, key=key, numeric_text=numeric_text)
    assert conforms(body, spec, key=key, numeric_text=numeric_text) is (walked is None)
