"""A profile or dialect name the catalog does not know is named with the closest known one."""

from __future__ import annotations

import pytest

from conformance.errors import UnknownProfileError
from conformance.providers.catalog import resolve_profile
from reference_impl.wording import did_you_mean


def test_a_misspelled_profile_is_named_with_the_closest_known_one() -> None:
    with pytest.raises(UnknownProfileError) as caught:
        resolve_profile("openai-chat", None, "openai-defualt")
    assert "no profile 'openai-defualt' for shape openai-chat (did you mean 'openai-default'?)" in (
        str(caught.value)
    )


def test_a_misspelled_dialect_is_named_with_the_closest_known_one() -> None:
    with pytest.raises(UnknownProfileError) as caught:
        resolve_profile("openai-chat", "mistrall", None)
    assert "no dialect 'mistrall' for shape openai-chat (did you mean 'mistral'?)" in str(
        caught.value
    )


def test_no_hint_for_a_name_close_to_nothing() -> None:
    assert did_you_mean("zzzz", ["openai-default", "mistral"]) == ""
    assert did_you_mean("mistrl", ["openai-default", "mistral"]) == " (did you mean 'mistral'?)"
