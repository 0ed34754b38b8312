"""Skeletons, the skeleton matcher, scrubbing, metadata, and the secrets guard over cassettes/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import CASSETTES
from shape_support import chat_call
from vcr.request import Request

from conformance.errors import CassetteError
from conformance.traffic.cassette import (
    CassetteMetadata,
    RecordMode,
    _CtxconfYamlSerializer,
    parse_record_mode,
)
from conformance.traffic.scrubbing import find_secrets, scrub_request, scrub_response
from conformance.traffic.skeleton import (
    closest_skeleton,
    model_family,
    request_skeleton,
    skeleton,
    skeleton_matcher,
)


def _chat(
    user: str = "hi", call_id: str = "call_abc", result: str = "18C", model: str = "gpt-4o-mini"
) -> dict[str, Any]:
    return {
        "model": model,
        "temperature": 0.3,
        "messages": [
            {"role": "user", "content": user},
            chat_call(call_id, name="get_weather", arguments='{"city":"Paris"}'),
            {"role": "tool", "tool_call_id": call_id, "content": result},
        ],
    }


# ----------------------------------------------------------------------------------- skeleton


@settings(max_examples=50)
@given(user=st.text(min_size=1), result=st.text(min_size=1), temperature=st.floats(0, 2))
def test_content_and_sampling_knobs_do_not_change_the_skeleton(
    user: str, result: str, temperature: float
) -> None:
    body = _chat(user=user, result=result)
    body["temperature"] = temperature
    assert skeleton(body, shape="openai-chat") == skeleton(_chat(), shape="openai-chat")


@settings(max_examples=50)
@given(new_id=st.from_regex(r"call_[A-Za-z0-9]{6,24}", fullmatch=True))
def test_consistent_id_renaming_keeps_the_skeleton(new_id: str) -> None:
    assert skeleton(_chat(call_id=new_id), shape="openai-chat") == skeleton(
        _chat(), shape="openai-chat"
    )


def test_broken_linkage_changes_the_skeleton() -> None:
    broken = _chat()
    broken["messages"][2]["tool_call_id"] = "call_other"
    assert skeleton(broken, shape="openai-chat") != skeleton(_chat(), shape="openai-chat")


def test_structure_changes_the_skeleton() -> None:
    base = skeleton(_chat(), shape="openai-chat")
    swapped = _chat()
    swapped["messages"][0]["role"] = "system"
    assert skeleton(swapped, shape="openai-chat") != base
    empty = _chat(user="")
    assert skeleton(empty, shape="openai-chat") != base  # A11/B8: empty content matters
    assert skeleton(_chat(), shape="openai-chat", dialect="mistral") != base


def test_id_forms_are_kept_for_mistral_and_anthropic_rules() -> None:
    mistral = skeleton(_chat(call_id="abcDEF123"), shape="openai-chat")
    assert mistral["body"]["messages"][2]["tool_call_id"] == "c1~a9"
    openai_form = skeleton(_chat(), shape="openai-chat")
    assert openai_form["body"]["messages"][2]["tool_call_id"] == "call_c1"
    bad = skeleton(_chat(call_id="call a.b"), shape="openai-chat")
    assert bad["body"]["messages"][2]["tool_call_id"].endswith("!")


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o-mini", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("claude-haiku-4-5", "claude-haiku"),
        ("claude-3-5-sonnet-20241022", "claude-sonnet"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash"),
        ("o1-mini", "o1"),
        ("amazon.nova-pro-v1:0", "nova-pro"),
        ("deepseek-chat", "deepseek-chat"),
    ],
)
def test_model_family(model: str, family: str) -> None:
    assert model_family(model) == family


def test_skeleton_survives_garbage() -> None:
    reduced = {
        "none": (None, None),
        "list": ([], []),
        "string": ("text", "*"),
        "number": (3, "#"),
        "messages": ({"messages": "x"}, {"messages": "*"}),
        "model": ({"model": 5}, {"model": "#"}),
    }
    for name, (body, wanted) in reduced.items():
        skel = skeleton(body, shape="openai-chat")
        assert (skel["shape"], skel["model"], skel["body"]) == ("openai-chat", None, wanted), name


def test_matcher_matches_across_hosts_and_names_the_difference() -> None:
    a = Request("POST", "http://127.0.0.1:9/v1/chat/completions", json.dumps(_chat()), {})
    b = Request(
        "POST", "https://api.openai.com/v1/chat/completions", json.dumps(_chat(user="other")), {}
    )
    skeleton_matcher(a, b)
    broken = _chat()
    broken["messages"].pop()
    c = Request("POST", "https://api.openai.com/v1/chat/completions", json.dumps(broken), {})
    with pytest.raises(AssertionError, match=r"messages has 2 items in the request, 3 recorded"):
        skeleton_matcher(c, a)


def test_gemini_model_comes_from_the_url() -> None:
    request = Request(
        "POST", "http://x/v1beta/models/gemini-2.5-flash-lite:generateContent", b"{}", {}
    )
    assert request_skeleton(request)["model"] == "gemini-2.5-flash"


def test_closest_skeleton_names_the_nearest_recording() -> None:
    wanted = skeleton(_chat(), shape="openai-chat")
    shorter = _chat()
    shorter["messages"].pop()
    other = skeleton({"model": "gpt-4o", "messages": []}, shape="openai-chat")
    found = closest_skeleton(
        wanted, [("far", other), ("near", skeleton(shorter, shape="openai-chat"))]
    )
    assert found is not None
    assert found[0] == "near"
    assert "messages" in found[1]


# ------------------------------------------------------------------------------ record modes


def test_record_modes_are_validated_loudly() -> None:
    assert parse_record_mode("none") is RecordMode.NONE
    with pytest.raises(CassetteError, match="once, new_episodes, all"):
        parse_record_mode("sometimes")


# ---------------------------------------------------------------------------------- secrets


def test_scrubbing_removes_keys_cookies_and_key_shaped_text() -> None:
    request = Request(
        "POST",
        "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=AIzaSyA1234567890abcdefghijklmnopqrstuvw&alt=json",
        b'{"note": "my key is sk-proj-abcdefghijklmnop1234"}',
        {
            "Authorization": "Bearer sk-live-abcdefghijklmnop",
            "x-api-key": "sk-ant-api03-secretsecret",
            "x-goog-api-key": "AIzaSy",
            "OpenAI-Organization": "org-123",
            "Cookie": "a=b",
            "content-type": "application/json",
        },
    )
    scrubbed = scrub_request(request)
    assert set(scrubbed.headers) == {"content-type"}
    assert "key=" not in scrubbed.uri
    assert "alt=json" in scrubbed.uri
    assert b"sk-proj" not in scrubbed.body
    response = scrub_response(
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {
                "Set-Cookie": ["x=y"],
                "openai-project": ["proj_1"],
                "anthropic-organization-id": ["o"],
                "x-request-id": ["r"],
            },
            "body": {"string": "ok"},
        }
    )
    assert set(response["headers"]) == {"x-request-id"}


def test_scrubbing_drops_the_sdks_per_request_headers() -> None:
    # boto3's invocation id is new on every request (a re-recording would never be unchanged),
    # and its SigV4 date and signature go with the keys; the user agent stays.
    request = Request(
        "POST",
        "http://emulator.invalid/model/m/converse",
        b"{}",
        {
            "amz-sdk-invocation-id": "5f0c0b9e-0d3c-4c55-a0c2-8c2b8f0e9b3a",
            "amz-sdk-request": "attempt=1; max=1",
            "X-Amz-Date": "20261202T010000Z",
            "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDCTXCONFTEST/20261202/us-east-1",
            "x-stainless-retry-count": "0",
            "User-Agent": "Boto3/1.44.8",
        },
    )
    assert set(scrub_request(request).headers) == {"User-Agent"}


def test_scrubbing_keeps_the_user_agent_without_what_it_says_of_the_recording_process() -> None:
    agent = (
        "Boto3/1.44.8 md/Botocore#1.44.8 ua/2.1 os/linux#6.18.44-fc-v1098 md/arch#x86_64 "
        "lang/python#3.11.7 md/pyimpl#CPython m/N,Z,E,b,e cfg/retry-mode#standard Botocore/1.44.8"
    )
    request = Request(
        "POST", "http://emulator.invalid/model/m/converse", b"{}", {"User-Agent": agent}
    )
    assert scrub_request(request).headers["User-Agent"] == (
        "Boto3/1.44.8 md/Botocore#1.44.8 ua/2.1 os/linux md/arch#x86_64 "
        "lang/python#3.11.7 md/pyimpl#CPython cfg/retry-mode#standard Botocore/1.44.8"
    )
    plain = Request(
        "POST", "http://emulator.invalid/v1/messages", b"{}", {"user-agent": "python-httpx/0.28.1"}
    )
    assert scrub_request(plain).headers["user-agent"] == "python-httpx/0.28.1"


def test_secret_finder_catches_what_scrubbing_removes() -> None:
    leaky = {
        "interactions": [
            {
                "request": {
                    "uri": "https://x/y?key=abc",
                    "headers": {"Authorization": ["Bearer abcdefghijkl"]},
                    "body": "AKIAABCDEFGHIJKLMNOP",
                },
                "response": {
                    "headers": {"set-cookie": ["a"]},
                    "body": {"string": "sk-ant-api03-abcdefgh"},
                },
            }
        ]
    }
    found = find_secrets(leaky)
    assert any("Authorization" in f for f in found)
    assert any("set-cookie" in f for f in found)
    assert any("'key'" in f for f in found)
    assert any("AKIA" in f for f in found)
    assert any("sk-ant" in f for f in found)
    assert find_secrets(
        {"interactions": [{"request": {"headers": {"authorization": ["Bearer REDACTED"]}}}]}
    ) == ["interaction 0: request header 'authorization'"]


def _committed() -> list[Path]:
    return sorted(CASSETTES.rglob("*.yaml"))


def test_committed_cassettes_exist() -> None:
    assert _committed(), f"no cassettes under {CASSETTES}"


@pytest.mark.parametrize("path", _committed(), ids=lambda p: str(p.relative_to(CASSETTES)))
def test_committed_cassette_holds_no_secret_and_honest_metadata(path: Path) -> None:
    document = yaml.safe_load(path.read_text("utf-8"))
    assert find_secrets(document) == []
    metadata = CassetteMetadata.from_dict(document["ctxconf"], source=str(path))
    assert metadata.shape == path.parent.name
    assert metadata.scenario == path.stem
    if metadata.source == "emulator":
        # Emulated answers say so; a cassette that claims otherwise would be dishonest.
        for interaction in document["interactions"]:
            assert interaction["response"]["headers"]["x-ctxconf-provenance"] == ["emulated"]
    assert next(iter(document)) == "ctxconf", "the metadata header comes first"


# --------------------------------------------------------------------------------- metadata


def test_metadata_is_validated() -> None:
    with pytest.raises(CassetteError, match="recorded_against"):
        CassetteMetadata(recorded_against="prod", shape="gemini", model="m", scenario="s")
    with pytest.raises(CassetteError, match="version"):
        CassetteMetadata.from_dict({"version": 9})
    meta = CassetteMetadata(
        recorded_against="emulator:anthropic-current",
        shape="anthropic-messages",
        model="m",
        scenario="s",
    )
    assert meta.profile == "anthropic-current"
    assert CassetteMetadata.from_dict(meta.to_dict()) == meta


def test_serializer_lifts_the_header_to_the_top_and_back() -> None:
    meta = {"version": 1, "recorded_against": "live"}
    text = _CtxconfYamlSerializer.serialize(
        {"version": 1, "interactions": [], "metadata": {"ctxconf": meta}}
    )
    assert text.startswith("ctxconf:")
    assert _CtxconfYamlSerializer.deserialize(text)["metadata"] == {"ctxconf": meta}
