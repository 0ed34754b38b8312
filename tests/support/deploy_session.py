"""The deploy-bot session the identity tests read: a parallel ring (a status read and an ops
notification with a side effect in the ledger), a single ring, two user turns saying "continue",
and the scenario that judges views of it (one recent ring, one recent user turn). ``MESSAGES`` is
the session in the scenarios' compact form, for a test that writes a variant of it.

The pieces other deploy-bot sessions repeat live here too: ``NOTIFY_RING`` (ops notified, the
side effect in ``LEDGER``) and ``single_tool``, the corpus's ``single-tool`` scenario judging a
session of the test's own."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from checks_support import transcript

from conformance.scenarios import Expectation, Scenario, load_corpus
from reference_impl.transcript import Transcript

SINGLE_TOOL = next(s for s in load_corpus() if s.id == "single-tool")
# A single ring notifying ops (its call id is the one ``LEDGER`` records) and the assistant's word
# after it, in the compact form.
NOTIFY_RING: tuple[dict[str, Any], ...] = (
    {"role": "assistant", "calls": [{"id": "call_b", "name": "notify_ops", "args": {}}]},
    {"role": "tool", "results": [{"id": "call_b", "text": "posted message_id=msg_991"}]},
    {"role": "assistant", "text": "Ops notified; the canary comes next."},
)


def single_tool(session: Transcript, **changes: Any) -> Scenario:
    """The ``single-tool`` scenario judging ``session``, expected to be assembled unless
    ``changes`` say otherwise; any other field ``changes`` names (ledger, config) replaces the
    corpus's, the rest stay the corpus's."""
    return replace(SINGLE_TOOL, session=session, **({"expect": Expectation("assembled")} | changes))


MESSAGES: tuple[dict[str, Any], ...] = (
    {"role": "system", "text": "You are deploy-bot."},  # 0
    {"role": "user", "text": "GOAL: roll out checkout v2 and keep ops informed."},  # 1
    {
        "role": "assistant",
        "calls": [
            {"id": "call_a", "name": "get_status", "args": {"service": "checkout"}},
            {"id": "call_b", "name": "notify_ops", "args": {"text": "starting rollout"}},
        ],
    },  # 2
    {
        "role": "tool",
        "results": [
            {"id": "call_a", "text": "pod=checkout-7f9c ready=true image=v1.8.2"},
            {"id": "call_b", "text": "posted message_id=msg_991"},
        ],
    },  # 3
    {"role": "assistant", "text": "Status read and ops notified; the canary comes next."},  # 4
    {"role": "user", "text": "continue"},  # 5
    {"role": "assistant", "calls": [{"id": "call_c", "name": "get_status", "args": {}}]},  # 6
    {"role": "tool", "results": [{"id": "call_c", "text": "canary=5% errors=0.00%"}]},  # 7
    {"role": "assistant", "text": "Canary is healthy."},  # 8
    {"role": "user", "text": "continue"},  # 9
)
SESSION = transcript(*MESSAGES)
M = SESSION.messages
LEDGER = (
    {
        "tool": "notify_ops",
        "call_id": "call_b",
        "status": "succeeded",
        "idempotency_key": "notify-7781",
        "resource_id": "msg_991",
    },
)
SCENARIO = single_tool(
    SESSION, ledger=LEDGER, config={"recent_tool_rings": 1, "recent_user_turns": 1}
)
