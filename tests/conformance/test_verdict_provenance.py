"""A recorded verdict is ``recorded-emulated``/``recorded-live`` only for the very request recorded
(canonical JSON equality); a request that only shares its skeleton gets ``recorded-skeleton``."""

from __future__ import annotations

import copy
from typing import Any

from paths import CASSETTES

from conformance.traffic.skeleton import skeleton, skeleton_digest
from conformance.traffic.verdicts import judge_request, load_library, recorded_verdict


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
