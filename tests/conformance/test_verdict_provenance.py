"""A recorded verdict is ``recorded-emulated``/``recorded-live`` only for the very request recorded
(canonical JSON equality); a request that only shares its skeleton gets ``recorded-skeleton``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from paths import CASSETTES

from conformance.providers.catalog import profile_for_model
from conformance.traffic.skeleton import skeleton, skeleton_digest
from conformance.traffic.verdicts import (
    CassetteLibrary,
    judge_request,
    load_library,
    recorded_verdict,
)


def _a_recorded_chat_request() -> tuple[dict[str, Any], str | None]:
    library = load_library(CASSETTES)
    for item in library.interactions:
        body = item.request_body
        if item.shape == "openai-chat" and isinstance(body, dict) and item.status == 200:
            texts = [m for m in body.get("messages", []) if isinstance(m.get("content"), str)]
            if texts and item.metadata.content == "full":
                return body, item.skeleton.get("dialect")
    raise AssertionError("no recorded openai-chat request with text content")


def test_the_same_body_is_recorded_emulated_and_another_text_is_recorded_skeleton() -> None:
    library = load_library(CASSETTES)
    body, dialect = _a_recorded_chat_request()
    same = judge_request(copy.deepcopy(body), "openai-chat", dialect=dialect, library=library)
    assert same.verdict.provenance == "recorded-emulated"

    other = copy.deepcopy(body)
    message = next(m for m in other["messages"] if isinstance(m.get("content"), str))
    message["content"] += " (a sentence no cassette holds)"
    digest = skeleton_digest(skeleton(body, shape="openai-chat", dialect=dialect))
    assert skeleton_digest(skeleton(other, shape="openai-chat", dialect=dialect)) == digest
    near = judge_request(other, "openai-chat", dialect=dialect, library=library)
    assert near.verdict.provenance == "recorded-skeleton"
    assert near.cassette is not None
    looked_up = recorded_verdict(other, "openai-chat", dialect=dialect, library=library)
    assert looked_up is not None
    assert looked_up.provenance == "recorded-skeleton"


def test_key_order_does_not_matter_for_the_same_request() -> None:
    library = load_library(CASSETTES)
    body, dialect = _a_recorded_chat_request()
    reordered = dict(reversed(list(copy.deepcopy(body).items())))
    judged = judge_request(reordered, "openai-chat", dialect=dialect, library=library)
    assert judged.verdict.provenance == "recorded-emulated"


def _recorded_in_url(shape: str) -> Any:
    library = load_library(CASSETTES)
    return library, next(
        i
        for i in library.interactions
        if i.shape == shape and i.status == 200 and isinstance(i.request_body, dict)
    )


def test_where_the_model_is_in_the_url_the_same_body_for_another_model_is_not_the_same_request() -> (
    None
):
    # Gemini and Bedrock carry the model in the URL: an equal body sent for another model (of
    # the same family and profile) shares the recording's structure only; with no model given,
    # nothing says it is the request recorded.
    for shape, other in (
        ("gemini", "gemini-2.5-flash-lite"),
        ("bedrock-converse", "anthropic.claude-3-haiku-20240307-v1:0"),
    ):
        library, item = _recorded_in_url(shape)
        assert item.url_model is not None
        body = copy.deepcopy(item.request_body)
        same = judge_request(body, shape, model=item.url_model, library=library)
        assert same.verdict.provenance == "recorded-emulated", shape
        elsewhere = judge_request(body, shape, model=other, library=library)
        assert elsewhere.verdict.provenance in {"recorded-skeleton", "emulated"}, shape
        unknown = recorded_verdict(body, shape, library=library)
        assert unknown is None or unknown.provenance == "recorded-skeleton", shape
        assert item.same_request(body, item.url_model)
        assert not item.same_request(body, other)
        assert not item.same_request(body)


def test_a_live_recording_never_answers_for_a_model_the_catalog_judges_by_other_rules(
    tmp_path: Path,
) -> None:
    # o1 and o1-mini are one family (one skeleton) but two profiles: a live recording of o1
    # accepting a system message is no evidence about o1-mini, which refuses it (C8).
    assert profile_for_model("openai-chat", None, "o1").id != (
        profile_for_model("openai-chat", None, "o1-mini").id
    )
    source = (CASSETTES / "openai-chat" / "probe-text.yaml").read_text(encoding="utf-8")
    live = source.replace("recorded_against: emulator:openai-default", "recorded_against: live")
    live = live.replace('"model":"gpt-4o-mini"', '"model":"o1"')
    live = live.replace("http://emulator.invalid/", "https://api.openai.com/")
    (tmp_path / "openai-chat").mkdir()
    (tmp_path / "openai-chat" / "probe-text-live.yaml").write_text(live, encoding="utf-8")
    library = CassetteLibrary(tmp_path)
    item = library.interactions[0]
    assert item.metadata.source == "live"
    body = copy.deepcopy(item.request_body)
    assert body["model"] == "o1"
    assert judge_request(body, "openai-chat", library=library).verdict.provenance == "recorded-live"
    mini = {**body, "model": "o1-mini"}
    judged = judge_request(mini, "openai-chat", library=library)
    assert judged.verdict.provenance == "emulated"
    assert (judged.verdict.verdict, judged.verdict.rule) == ("reject", "C8")
    assert not judged.stale


_INTERLEAVED = "interleaved-thinking-2025-05-14"


def _live_anthropic_cassette(folder: Path, headers: str) -> CassetteLibrary:
    # A live recording of a request whose thinking budget is over max_tokens: accepted because
    # its anthropic-beta header turned interleaved thinking on (without it: A27).
    (folder / "anthropic-messages").mkdir(parents=True)
    (folder / "anthropic-messages" / "interleaved-live.yaml").write_text(
        "ctxconf: {version: 1, recorded_against: live, date: '2026-12-06', model: "
        "claude-sonnet-4-5, shape: anthropic-messages, dialect: null, scenario: interleaved, "
        "content: full}\n"
        "version: 1\n"
        "interactions:\n"
        "- request:\n"
        "    method: POST\n"
        "    uri: https://api.anthropic.com/v1/messages\n"
        "    body: '" + json.dumps(_THINKING_OVER_MAX, separators=(",", ":")) + "'\n"
        f"    headers: {{{headers}}}\n"
        "  response:\n"
        "    status: {code: 200, message: OK}\n"
        "    headers: {content-type: [application/json]}\n"
        '    body: {string: \'{"type":"message","role":"assistant","content":[]}\'}\n',
        encoding="utf-8",
    )
    return CassetteLibrary(folder)


_THINKING_OVER_MAX: dict[str, Any] = {
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "hi"}],
    "model": "claude-sonnet-4-5",
    "thinking": {"type": "enabled", "budget_tokens": 2048},
}


def test_a_recording_whose_request_named_a_beta_is_not_the_request_without_it(
    tmp_path: Path,
) -> None:
    library = _live_anthropic_cassette(
        tmp_path,
        "anthropic-version: ['2023-06-01'], anthropic-beta: [" + _INTERLEAVED + "]",
    )
    body = copy.deepcopy(_THINKING_OVER_MAX)
    # The same body without the header is another request: the recording says nothing about it
    # (before, it was a recorded-live accept, "stale": "fix the rule catalog").
    judged = judge_request(body, "anthropic-messages", library=library)
    assert judged.verdict.provenance == "emulated"
    assert (judged.verdict.verdict, judged.verdict.rule) == ("reject", "A27")
    assert not judged.stale
    assert recorded_verdict(body, "anthropic-messages", library=library) is None
    # With the same header it is the very request recorded.
    same = judge_request(body, "anthropic-messages", library=library, betas=[_INTERLEAVED])
    assert (same.verdict.provenance, same.verdict.verdict) == ("recorded-live", "accept")
    assert not same.stale


def test_a_recording_without_its_request_headers_is_not_known_to_be_the_same_request(
    tmp_path: Path,
) -> None:
    # A recorder that dropped the anthropic-* headers: the betas sent are not known, so the
    # recording answers for the structure only, and the validators' A27 on this request (no
    # beta) is no contradiction of it (the recorded request may have named the beta).
    library = _live_anthropic_cassette(tmp_path, "content-type: [application/json]")
    body = copy.deepcopy(_THINKING_OVER_MAX)
    assert not library.interactions[0].same_request(body)
    looked_up = recorded_verdict(body, "anthropic-messages", library=library)
    assert looked_up is not None
    assert looked_up.provenance == "recorded-skeleton"
    judged = judge_request(body, "anthropic-messages", library=library)
    assert (judged.verdict.provenance, judged.verdict.rule) == ("emulated", "A27")
    assert not judged.stale


def test_a_skeleton_match_does_not_answer_for_a_value_the_skeleton_leaves_out() -> None:
    # A negative temperature (R14, recorded) is a number like any other to the skeleton: the
    # recorded accept of a request of the same structure is no answer for it, and the cassette
    # is not stale (the validators still accept the recorded request).
    library = load_library(CASSETTES)
    item = next(
        i
        for i in library.interactions
        if i.shape == "openai-responses"
        and i.status == 200
        and isinstance(i.request_body, dict)
        and not i.interaction.is_token_count
    )
    body = {**copy.deepcopy(item.request_body), "temperature": -1}
    judged = judge_request(body, "openai-responses", library=library)
    assert judged.verdict.provenance == "emulated"
    assert (judged.verdict.verdict, judged.verdict.rule) == ("reject", "R14")
    assert not judged.stale


def test_a_live_skeleton_match_does_not_answer_for_a_knob_the_skeleton_ignores(
    tmp_path: Path,
) -> None:
    # `stop` is left out of skeletons, but gpt-5 refuses it (C12, recorded): a live recording
    # of gpt-5 without it is no evidence that the provider takes it, nor a reason to "fix the
    # rule catalog".
    source = (CASSETTES / "openai-chat" / "probe-text.yaml").read_text(encoding="utf-8")
    live = source.replace("recorded_against: emulator:openai-default", "recorded_against: live")
    live = live.replace('"model":"gpt-4o-mini"', '"model":"gpt-5"')
    live = live.replace("http://emulator.invalid/", "https://api.openai.com/")
    (tmp_path / "openai-chat").mkdir()
    (tmp_path / "openai-chat" / "probe-text-live.yaml").write_text(live, encoding="utf-8")
    library = CassetteLibrary(tmp_path)
    item = library.interactions[0]
    assert item.verdict().verdict == "accept"
    body = {**copy.deepcopy(item.request_body), "stop": ["END"]}
    judged = judge_request(body, "openai-chat", library=library)
    assert judged.verdict.provenance == "emulated"
    assert (judged.verdict.verdict, judged.verdict.rule) == ("reject", "C12")
    assert not judged.stale
    # The same structure with a stop it takes still gets the recording, as a skeleton match.
    assert (
        judge_request(
            copy.deepcopy(item.request_body), "openai-chat", library=library
        ).verdict.provenance
        == "recorded-live"
    )


def test_a_stale_emulator_recording_matched_by_skeleton_says_to_re_record(tmp_path: Path) -> None:
    # A recorded-skeleton verdict may come from an emulator recording: its stale message must say
    # to re-record it, not that "the provider answered this way live".
    source = (CASSETTES / "openai-chat" / "probe-text.yaml").read_text(encoding="utf-8")
    refused = source.replace(
        "      code: 200\n      message: OK", "      code: 400\n      message: Bad"
    )
    assert refused != source
    (tmp_path / "openai-chat").mkdir()
    (tmp_path / "openai-chat" / "probe-text.yaml").write_text(refused, encoding="utf-8")
    library = CassetteLibrary(tmp_path)
    item = library.interactions[0]
    body = copy.deepcopy(item.request_body)
    body["messages"][-1]["content"] = "Say goodbye."
    judged = judge_request(body, "openai-chat", library=library)
    assert judged.verdict.provenance == "recorded-skeleton"
    assert judged.stale
    message = judged.stale_message()
    assert "re-record" in message
    assert "live" not in message
