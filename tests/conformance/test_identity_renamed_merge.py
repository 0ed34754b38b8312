"""A merge that holds a ring message with renamed ids, as the last message of its unaligned
region: once the renames are known the merge is found again, and (like any merge that has no
later view message of the region after it) it holds the *latest* copy of a repeated text, so the
copy the view stands for is the recent one."""

from __future__ import annotations

from checks_support import transcript

from conformance.identity import map_view
from reference_impl.transcript import Message, TextPart, ToolCallPart, ToolResultPart


def test_renamed_call_merged_with_a_repeated_text_holds_the_latest_copy() -> None:
    session = transcript(
        {"role": "system", "text": "You are deploy-bot."},  # 0
        {"role": "user", "text": "GOAL: roll out checkout v2."},  # 1
        {"role": "assistant", "calls": [{"id": "call_a", "name": "get_status", "args": {}}]},  # 2
        {"role": "assistant", "text": "Done."},  # 3
        {"role": "user", "text": "continue"},  # 4
        {"role": "assistant", "text": "Done."},  # 5
    )
    (call,) = session.messages[2].tool_calls
    renamed = ToolCallPart("call_1", call.name, call.arguments)
    merged = Message("assistant", (renamed, TextPart("Done.")))
    view = session.with_messages([session.messages[0], session.messages[1], merged])
    identity = map_view(session, view)
    assert identity.renames == {"call_a": "call_1"}
    (link,) = [link for link in identity.links if link.index == 2]
    assert (link.status, link.source, link.merged) == ("modified", 2, (2, 5))
    assert identity.sources == ("kept", "kept", "modified", "dropped", "dropped", "merged")
    assert [e.kind for e in identity.edits] == ["ids_renamed"]


def test_renamed_result_merged_with_a_repeated_user_text_holds_the_latest_copy() -> None:
    session = transcript(
        {"role": "system", "text": "You are deploy-bot."},  # 0
        {"role": "user", "text": "GOAL: roll out checkout v2."},  # 1
        {"role": "assistant", "calls": [{"id": "call_a", "name": "get_status", "args": {}}]},  # 2
        {"role": "tool", "results": [{"id": "call_a", "text": "canary=5% errors=0"}]},  # 3
        {"role": "user", "text": "continue"},  # 4
        {"role": "assistant", "text": "Canary is healthy."},  # 5
        {"role": "user", "text": "continue"},  # 6
    )
    (result,) = session.messages[3].tool_results
    renamed = ToolResultPart("call_1", result.content, result.is_error)
    merged = Message("tool", (renamed, TextPart("continue")))
    view = session.with_messages([*session.messages[:3], merged])
    identity = map_view(session, view)
    assert identity.renames == {"call_a": "call_1"}
    (link,) = [link for link in identity.links if link.index == 3]
    assert (link.status, link.source, link.merged) == ("modified", 3, (3, 6))
    assert identity.sources == (
        *("kept", "kept", "kept", "modified"),
        *("dropped", "dropped", "merged"),
    )
    assert [e.kind for e in identity.edits] == ["ids_renamed"]
