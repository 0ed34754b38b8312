"""A profile or dialect name the catalog does not know is named with the closest known one; one
that exists for another shape says which, so the shape is changed, not the name."""

from __future__ import annotations

import pytest
from cli_support import invoke

from conformance.errors import UnknownProfileError
from conformance.providers.catalog import known_profiles, resolve_profile
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


def test_a_profile_of_another_shape_names_its_shape_not_a_close_name() -> None:
    with pytest.raises(UnknownProfileError) as caught:
        resolve_profile("openai-chat", None, "anthropic-current")
    said = str(caught.value)
    assert (
        "no profile 'anthropic-current' for shape openai-chat: 'anthropic-current' is a profile "
        "of shape anthropic-messages, for anthropic-messages requests only (to use it, change "
        "the shape, not the name); known: openai-default, "
    ) in said
    assert "did you mean" not in said


@pytest.mark.parametrize(
    ("shape", "dialect", "named"),
    [
        (
            "openai-chat",
            "vertex",
            "'vertex' is a dialect of shape gemini, for gemini requests only",
        ),
        (
            "anthropic-messages",
            "deepseek",
            (
                "'deepseek' is a dialect of shapes openai-chat and openai-responses, for their "
                "requests only"
            ),
        ),
        # another spelling of a dialect of another shape (lmstudio) is named as that one
        ("gemini", "lm-studio", "'lm-studio' is a dialect of shape openai-chat"),
    ],
)
def test_a_dialect_of_other_shapes_names_them(shape: str, dialect: str, named: str) -> None:
    with pytest.raises(UnknownProfileError) as caught:
        resolve_profile(shape, dialect, None)
    said = str(caught.value)
    assert f"no dialect {dialect!r} for shape {shape}: {named}" in said
    assert "(to use it, change the shape, not the name); known dialects: " in said


def test_no_hint_for_a_name_close_to_nothing() -> None:
    assert did_you_mean("zzzz", ["openai-default", "mistral"]) == ""
    assert did_you_mean("mistrl", ["openai-default", "mistral"]) == " (did you mean 'mistral'?)"


def test_a_misspelled_profile_of_another_shape_is_suggested_with_its_shape() -> None:
    with pytest.raises(UnknownProfileError) as caught:
        resolve_profile("openai-chat", None, "anthropc-current")
    assert (
        "no profile 'anthropc-current' for shape openai-chat (did you mean 'anthropic-current', "
        "a profile of shape anthropic-messages?)"
    ) in str(caught.value)


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--port", "0"],
        ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"],
    ],
)
def test_serve_and_proxy_name_the_closest_profile(command: list[str]) -> None:
    code, out, err = invoke([*command, "--profile", "anthropc-current"])
    assert code == 2, out
    assert "unknown profile 'anthropc-current' (did you mean 'anthropic-current'?); known:" in err


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--port", "0"],
        ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"],
    ],
)
@pytest.mark.timeout(60)  # before: serve and proxy started listening with the second ignored
def test_two_profiles_for_one_shape_are_refused_by_name(command: list[str]) -> None:
    """Each applies to its shape; before, the second of one shape was ignored without a word."""
    code, out, err = invoke([*command, "--profile", "openai-default", "--profile", "openai-2024"])
    assert code == 2, out
    assert "profiles 'openai-default' and 'openai-2024' are both for shape openai-chat," in err
    assert "listening" not in out


def test_profiles_of_one_shape_and_other_dialects_apply_side_by_side() -> None:
    both = ("openai-default", "azure-default", "openai-default")
    assert known_profiles(both, UnknownProfileError) == both
    with pytest.raises(UnknownProfileError, match="shape openai-chat, dialect deepseek,"):
        known_profiles(("deepseek-default", "deepseek-thinking"), UnknownProfileError)
