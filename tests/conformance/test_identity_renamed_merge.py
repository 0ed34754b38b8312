"""A merge that holds a ring message with renamed ids, as the last message of its unaligned
region: once the renames are known the merge is found again, and (like any merge that has no
later view message of the region after it) it holds the *latest* copy of a repeated text, so the
copy the view stands for is the recent one."""

from __future__ import annotations

from typing import Any

import pytest
from checks_support import transcript

from conformance.identity import map_view
from reference_impl.shapes import get_shape
from reference_impl.transcript import Message, TextPart, ToolCallPart, ToolResultPart, Transcript

# Both sessions open alike: the goal, then a call of get_status (call_a) at messages[2].
OPENING: tuple[dict[str, Any], ...] = (
    {"role": "system", "text": "You are deploy-bot."},  # 0
    {"role": "user", "text": "GOAL: roll out checkout v2."},  # 1
    {"role": "assistant", "calls": [{"id": "call_a", "name": "get_status", "args": {}}]},  # 2
)

CALL_THEN_DONE = transcript(
    *OPENING,
    {"role": "assistant", "text": "Done."},  # 3
    {"role": "user", "text": "continue"},  # 4
    {"role": "assistant", "text": "Done."},  # 5
)
(CALL,) = CALL_THEN_DONE.messages[2].tool_calls

RESULT_THEN_CONTINUE = transcript(
    *OPENING,
    {"role": "tool", "results": [{"id": "call_a", "text": "canary=5% errors=0"}]},  # 3
    {"role": "user", "text": "continue"},  # 4
    {"role": "assistant", "text": "Canary is healthy."},  # 5
    {"role": "user", "text": "continue"},  # 6
)
(RESULT,) = RESULT_THEN_CONTINUE.messages[3].tool_results


@pytest.mark.parametrize(
    ("session", "at", "merged", "merged_from", "sources"),
    [
        pytest.param(
            CALL_THEN_DONE,
            2,
            Message(
                "assistant",
                (ToolCallPart("call_1", CALL.name, CALL.arguments), TextPart("Done.")),
            ),
            (2, 5),
            ("kept", "kept", "modified", "dropped", "dropped", "merged"),
            id="a-renamed-call-merged-with-a-repeated-text",
        ),
        pytest.param(
            RESULT_THEN_CONTINUE,
            3,
            Message(
                "tool",
                (ToolResultPart("call_1", RESULT.content, RESULT.is_error), TextPart("continue")),
            ),
            (3, 6),
            ("kept", "kept", "kept", "modified", "dropped", "dropped", "merged"),
            id="a-renamed-result-merged-with-a-repeated-user-text",
        ),
    ],
)
def test_a_renamed_ring_message_merged_with_a_repeated_text_holds_the_latest_copy(
    session: Transcript,
    at: int,
    merged: Message,
    merged_from: tuple[int, int],
    sources: tuple[str, ...],
) -> None:
    # The view keeps the messages before the ring message, then the merge in its place.
    view = session.with_messages([*session.messages[:at], merged])
    identity = map_view(session, view)
    assert identity.renames == {"call_a": "call_1"}
    (link,) = [link for link in identity.links if link.index == at]
    assert (link.status, link.source, link.merged) == ("modified", at, merged_from)
    assert identity.sources == sources
    assert [e.kind for e in identity.edits] == ["ids_renamed"]


# Three calls of one tool, then the latest user turn. The view drops the oldest ring and sends
# the newest ring with the user turn after it (its result and that text one turn, as Anthropic
# and Bedrock send them) before the middle ring: the newest call now stands where the dropped
# one did, with the same tool name.
THREE_READS = transcript(
    {"role": "user", "text": "GOAL: size the cluster."},  # 0
    {
        "role": "assistant",
        "calls": [{"id": "call_m1", "name": "read_metric", "args": {"m": "cpu"}}],
    },
    {"role": "tool", "results": [{"id": "call_m1", "text": "cpu p95=61%"}]},  # 2
    {
        "role": "assistant",
        "calls": [{"id": "call_m2", "name": "read_metric", "args": {"m": "mem"}}],
    },
    {"role": "tool", "results": [{"id": "call_m2", "text": "mem p95=72%"}]},  # 4
    {
        "role": "assistant",
        "calls": [{"id": "call_m3", "name": "read_metric", "args": {"m": "rps"}}],
    },
    {"role": "tool", "results": [{"id": "call_m3", "text": "rps peak=18k"}]},  # 6
    {"role": "user", "text": "How many nodes?"},  # 7
)


def test_a_ring_sent_before_an_older_one_is_moved_not_a_dropped_ring_renamed() -> None:
    # Not "call ids renamed: call_m1 -> call_m3" with its arguments changed (must), nor the
    # rings it keeps whole reported split: the move is order_preserved's to name (should).
    m = THREE_READS.messages
    (result,) = m[6].tool_results
    merged = Message("tool", (result, *m[7].parts))
    view = THREE_READS.with_messages([m[0], m[5], merged, m[3], m[4]])
    identity = map_view(THREE_READS, view)
    assert identity.renames == {}
    assert not identity.edits, identity.edits
    assert identity.sources == (
        "kept",
        "dropped",
        "dropped",
        "kept",
        "kept",
        "kept",
        "merged",
        "merged",
    )


def _gemini_without_ids(plain_pairs: int) -> dict[str, Any]:
    """A Gemini body whose call and response carry no id (it is optional), after the goal and
    ``plain_pairs`` pairs of plain turns."""
    turns = [
        {"role": role, "parts": [{"text": f"turn {n} of the {role}"}]}
        for n in range(plain_pairs)
        for role in ("user", "model")
    ]
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "GOAL: keep checkout healthy."}]},
            *turns,
            {"role": "user", "parts": [{"text": "Status?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_status", "args": {}}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_status", "response": {"output": "ok"}}}
                ],
            },
        ]
    }


def test_a_gemini_ring_without_ids_kept_after_a_deletion_is_not_renamed() -> None:
    # The parser names an id-less call by its message's place (gemini-call-<message>-<n>), and
    # never sends that name: after the plain turns before it are dropped, the ring kept whole
    # gets another one, which is no rename (tool_payloads_intact, must).
    shape = get_shape("gemini")
    session = shape.parse_request(_gemini_without_ids(3))
    kept = [session.messages[0], *session.messages[7:]]
    view = shape.parse_request(shape.render_request(session.with_messages(kept)))
    assert view.messages[2].tool_calls[0].id != session.messages[8].tool_calls[0].id
    identity = map_view(session, view)
    assert not identity.edits, identity.edits
    assert identity.sources[1:7] == ("dropped",) * 6
