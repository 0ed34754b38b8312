"""Normalizing for the shape (``steps/normalize.py``): the merges alternation needs and the ones it
must not make, a user message first (the anchor), and leading non-user units after trimming."""

from __future__ import annotations

from assembler_support import (
    WordCounter,
    assemble_words,
    assistant,
    goal_meets_a_question,
    long_goal_then_turns,
    protected_state,
    ring,
    session,
    system,
    user,
    words,
)
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from reference_impl import AssemblyConfig, AssemblyMetrics
from reference_impl.assembler import assemble_pipeline
from reference_impl.steps import needs_alternation, normalize_view
from reference_impl.transcript import (
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, recent_user_turns=1)
METRICS = AssemblyMetrics(CollectorRegistry())


def run(s, config=CONFIG, *, shape="bedrock-converse", budget=10_000):
    return assemble_words(s, config, shape=shape, budget=budget)


def ring_opening_with(reasoning: ReasoningPart) -> tuple[Message, Message]:
    call = ToolCallPart("c1", "get_status", "{}")
    return (
        Message("assistant", (reasoning, call), id="ring"),
        Message("tool", (ToolResultPart("c1", (TextPart("ok"),)),), id="results"),
    )


# ------------------------------------------------------------------------------------ merges


def test_text_before_a_ring_that_must_open_with_its_reasoning_stays_apart():
    # A13/B10: a thinking block must open the assistant message that carries the calls, so the
    # plain text cannot be put in front of it; the pair is left as it is.
    thinking = ReasoningPart("bedrock-converse", '{"reasoningText":{"text":"hm","signature":"s"}}')
    messages = (
        Message("assistant", (TextPart("looking"),), id="text"),
        *ring_opening_with(thinking),
    )
    merged, absorbed = normalize_view(messages, "bedrock-converse")
    assert merged == messages
    assert absorbed == []


def test_text_before_a_ring_whose_reasoning_need_not_open_it_goes_before_the_calls():
    # A Gemini thought signature sits before the part it belongs to and need not open the turn
    # (G1: a functionCall turn follows a user or functionResponse turn, so the two model turns
    # become one, the text first).
    signature = ReasoningPart("gemini", '{"thoughtSignature":"SIG1"}')
    head, results = ring_opening_with(signature)
    text = Message("assistant", (TextPart("looking"),), id="text")
    merged, absorbed = normalize_view((text, head, results), "gemini")
    assert merged == (Message("assistant", (TextPart("looking"), *head.parts), id="ring"), results)
    assert absorbed == ["text"]


def test_a_summary_after_a_rings_results_stays_its_own_message():
    # A tool message carries results, text and attachments; a summary is none of those, so it
    # is not folded into the ring's results (a plain user text after them is).
    head, results = ring_opening_with(ReasoningPart("gemini", '{"thoughtSignature":"S"}'))
    head = Message("assistant", head.parts[1:], id="ring")
    summary = Message("user", (SummaryPart("Summary of earlier conversation."),), id="summary")
    merged, absorbed = normalize_view((head, results, summary), "bedrock-converse")
    assert merged == (head, results, summary)
    assert absorbed == []
    plain = Message("user", (TextPart("and now?"),), id="plain")
    merged, absorbed = normalize_view((head, results, plain), "bedrock-converse")
    assert merged == (head, Message("tool", (*results.parts, *plain.parts), id="results"))
    assert absorbed == ["plain"]


def test_the_normalize_step_is_recorded_only_when_something_was_merged():
    s, config, budget = goal_meets_a_question(CONFIG)
    merged = run(s, config, budget=budget)
    assert merged.report.merged_ids == (s.messages[3].id,)
    assert "normalize" in merged.report.steps
    apart = run(s, config, shape="openai-chat", budget=budget)
    assert apart.report.merged_ids == ()
    assert "normalize" not in apart.report.steps


# ------------------------------------------------------------------------ a user message first

NOT_PINNED = CONFIG.with_changes(pin=())


def test_the_anchor_is_the_nearest_user_message_before_the_protected_ring():
    s = session(
        system(),
        user("GOAL: audit"),
        assistant("first reply"),
        user("look at c1"),
        assistant("will do"),
        ring("c1", "ok"),
        user("latest"),
    )
    m = s.messages
    # Room for the system text, the anchor, the ring and the latest message only.
    fixed = (m[0], m[3], m[5], m[6], m[7])
    budget = sum(WordCounter().count_message(x) for x in fixed) + 3
    a = run(s, NOT_PINNED, shape="openai-chat", budget=budget)
    assert [x.id for x in a.view] == [x.id for x in fixed]
    assert "first_user_anchor_protected" in a.report.notes


def test_no_anchor_is_noted_when_no_user_message_comes_before_the_protected_ring():
    s = session(system(), ring("c1", "ok"), user("latest"))
    a = run(s, NOT_PINNED, shape="openai-chat")
    assert "first_user_anchor_protected" not in a.report.notes
    assert [x.id for x in a.view] == [x.id for x in s.messages]


def test_no_anchor_when_the_conversation_already_opens_with_a_protected_user_message():
    s = session(system(), user("GOAL: audit"), ring("c1", words(40)), user("latest"))
    a = run(s, CONFIG.with_changes(recent_tool_rings=0), shape="openai-chat", budget=30)
    assert "first_user_anchor_protected" not in a.report.notes
    assert a.report.dropped_ring_ids == (s.messages[2].id,)


def test_nothing_dropped_in_front_of_the_first_user_message_records_no_step():
    s = session(system(), user("GOAL: audit"), assistant(words(40)), user("latest"))
    a = run(s, shape="openai-chat", budget=30)
    assert a.report.dropped_turn_ids == (s.messages[2].id,)
    assert "drop_leading_non_user" not in a.report.steps


def test_which_shapes_need_alternation():
    assert needs_alternation("bedrock-converse")
    assert needs_alternation("gemini")
    assert not needs_alternation("anthropic-messages")
    assert not needs_alternation("openai-chat")
    assert not needs_alternation("openai-responses")


def test_neighbours_with_different_speaker_names_are_never_merged():
    # Merging would lose whose turn each was.
    alice = Message("user", (TextPart("ship it"),), name="alice", id="a")
    bob = Message("user", (TextPart("wait"),), name="bob", id="b")
    assert normalize_view((alice, bob), "bedrock-converse") == ((alice, bob), [])
    carol = Message("user", (TextPart("agreed"),), name="alice", id="c")
    merged, absorbed = normalize_view((alice, carol), "bedrock-converse")
    assert merged == (Message("user", (*alice.parts, *carol.parts), name="alice", id="a"),)
    assert absorbed == ["c"]


def test_gemini_merges_only_a_plain_model_turn_into_the_ring_after_it():
    # G4 (full alternation) is not enforced by Gemini's default profile: plain turns of one side
    # stay apart, byte-identical to the session.
    users = (
        Message("user", (TextPart("one"),), id="u1"),
        Message("user", (TextPart("two"),), id="u2"),
    )
    assert normalize_view(users, "gemini") == (users, [])
    models = (
        Message("assistant", (TextPart("one"),), id="a1"),
        Message("assistant", (TextPart("two"),), id="a2"),
    )
    assert normalize_view(models, "gemini") == (models, [])
    assert normalize_view(models, "bedrock-converse")[1] == ["a2"]


def test_dropping_whole_units_in_front_of_the_first_user_message_does_not_revalidate(monkeypatch):
    # Design notes, Performance: a step that only drops whole units cannot unpair the view, so
    # its O(n) pairing check is skipped. The spy calls the real check and counts; the steps run
    # one by one (assemble_pipeline: assemble's indexed path has no such step to spy on).
    import reference_impl.steps.state as state_module

    calls: list[str] = []
    real = state_module.validate
    real_record = state_module.AssemblyState.record

    def spy(view):
        calls.append(current[-1])
        return real(view)

    current: list[str] = ["-"]

    def record(self, step, *, revalidate=True):
        current.append(step)
        return real_record(self, step, revalidate=revalidate)

    monkeypatch.setattr(state_module, "validate", spy)
    monkeypatch.setattr(state_module.AssemblyState, "record", record)
    s, config, budget = long_goal_then_turns(CONFIG)
    a = assemble_pipeline(
        s, config, shape="openai-chat", budget=budget, counter=WordCounter(), metrics=METRICS
    )
    assert "drop_leading_non_user" in a.report.steps
    assert "drop_leading_non_user" not in calls
    # The control: a step recorded as revalidating is checked through the same spy.
    state = protected_state(s, config, budget)
    state.record("a_step_that_edits_messages")
    assert calls[-1:] == ["a_step_that_edits_messages"]


# ------------------------------------------------------------------ the merges at C speed


def _merged_one_by_one(messages, shape):
    """The loop ``_normalized`` replaces: each message offered to the one before it."""
    from reference_impl.shapes import merge_policy
    from reference_impl.steps.normalize import _merge
    from reference_impl.transcript.model import INSTRUCTION_ROLES

    policy = merge_policy(shape)
    if policy is None:
        return tuple(messages), [], []
    out, absorbed, groups = [], [], []
    for index, message in enumerate(messages):
        previous = out[-1] if out else None
        if previous is not None and previous.role not in INSTRUCTION_ROLES:
            merged = _merge(previous, message, policy)
            if merged is not None:
                absorbed.append(message.id if merged.id == previous.id else previous.id)
                out[-1] = merged
                groups[-1] = (*groups[-1], index)
                continue
        out.append(message)
        groups.append((index,))
    return tuple(out), absorbed, [g for g in groups if len(g) > 1]


def _pool(k: int) -> list[Message]:
    call = ToolCallPart(f"c{k}", "get_status", "{}")
    thinking = ReasoningPart("bedrock-converse", '{"reasoningText":{"text":"h","signature":"s"}}')
    return [
        Message("user", (TextPart(f"u{k}"),), id=f"u{k}"),
        Message("user", (TextPart(f"n{k}"),), name="alice", id=f"n{k}"),
        Message("user", (SummaryPart(f"s{k}"),), id=f"s{k}"),
        Message("assistant", (TextPart(f"a{k}"),), id=f"a{k}"),
        Message("assistant", (TextPart(f"r{k}"), call), id=f"r{k}"),
        Message("assistant", (thinking, call), id=f"t{k}"),
        Message("tool", (ToolResultPart(f"c{k}", (TextPart("ok"),)),), id=f"x{k}"),
        Message("system", (TextPart(f"y{k}"),), id=f"y{k}"),
        Message("developer", (TextPart(f"d{k}"),), id=f"d{k}"),
    ]


@given(
    st.randoms(use_true_random=False),
    st.integers(0, 60),
    st.sampled_from(["bedrock-converse", "gemini", "anthropic-messages", "openai-chat"]),
)
def test_merging_visits_only_same_side_neighbours_and_merges_as_one_by_one(rng, n, shape):
    # the kinds from a seeded Random (the bulk), the length and the shape by hypothesis
    from reference_impl.steps.normalize import _normalized

    kinds = [rng.randrange(9) for _ in range(n)]
    messages = tuple(_pool(k)[kind] for k, kind in enumerate(kinds))
    assert _normalized(messages, shape) == _merged_one_by_one(messages, shape)


def test_a_pair_that_stays_apart_does_not_stop_the_merges_after_it():
    # user then a tool message: the same side, never merged; the two user turns after it are
    from reference_impl.steps.normalize import _normalized

    messages = tuple(_pool(k)[kind] for k, kind in enumerate([0, 6, 0, 0]))
    out, absorbed, groups = _normalized(messages, "bedrock-converse")
    assert [m.role for m in out] == ["user", "tool"]
    assert absorbed == ["u2", "u3"]
    assert groups == [(1, 2, 3)]
