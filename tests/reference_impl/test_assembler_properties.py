"""Hypothesis properties of the reference assembler over generated sessions and budgets.

Over valid sessions: the view is pairing-valid and renders in its shape; it fits the budget or
the assembly is refused with a typed error; prefix and pins are kept; the latest user message and
the last N complete rings are kept; every ring is kept whole or dropped whole; order is preserved;
the same input gives byte-identical output. Over broken sessions, ``fail_closed`` always refuses.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from assembler_strategies import never_cut
from assembler_support import WordCounter, assemble_words
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from conformance.providers.validation import validate_request
from conformance.strategies import broken_transcripts, transcripts
from reference_impl import AssemblyConfig, ContextAssemblyError
from reference_impl.errors import ShapeError
from reference_impl.rings import Ring, segment, validate
from reference_impl.shapes import get_shape
from reference_impl.transcript import SHAPE_NAMES, Part, TextPart, ToolResultPart, Transcript

settings.register_profile(
    "assembler",
    max_examples=examples(500),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile("assembler")

CONFIGS = st.builds(
    AssemblyConfig,
    recent_tool_rings=st.integers(0, 2),
    recent_user_turns=st.integers(0, 1),
    middle_delete_unit=st.sampled_from(["tool_ring", "clear_tool_result"]),
    keep_middle_error_results=st.integers(0, 2),
    summarize_trigger_ratio=st.sampled_from([0.5, 0.8, 1.0]),
    on_still_over_budget=st.sampled_from(["fail_closed", "drop_tools_schema_then_fail"]),
    pin=st.just(("first_user_message", "side_effect_ledger", "security_system_prompt")),
)


def _verbose_results(session: Transcript, words: int) -> Transcript:
    """Successful tool results made ``words`` words longer: drawn results are a few words, shorter
    than the clear_tool_result placeholder, so without this that mode would never clear anything."""
    pad = " " + " ".join(["output"] * words)

    def longer(part: Part) -> Part:
        if not isinstance(part, ToolResultPart) or part.is_error:
            return part
        texts = [i for i, c in enumerate(part.content) if isinstance(c, TextPart)]
        if not texts:
            return replace(part, content=(*part.content, TextPart(pad.strip())))
        content = list(part.content)
        first = content[texts[0]]
        assert isinstance(first, TextPart)
        content[texts[0]] = replace(first, text=first.text + pad)
        return replace(part, content=tuple(content))

    return session.with_messages(
        replace(m, parts=tuple(longer(p) for p in m.parts)) if m.role == "tool" else m
        for m in session.messages
    )


@st.composite
def cases(draw):
    shape = draw(st.sampled_from(SHAPE_NAMES))
    session = draw(transcripts(get_shape(shape).capabilities, min_messages=4, max_messages=16))
    if draw(st.booleans()):
        session = _verbose_results(session, draw(st.integers(10, 40)))
    config = draw(CONFIGS)
    full = WordCounter().count(session).total
    # Most budgets between what is never cut and the whole session, where trimming decides;
    # some anywhere.
    floor = never_cut(session, config, shape)
    near = st.integers(max(0, floor - 5), full + full // 5)
    budget = draw(st.one_of(st.integers(0, full), near, near, near))
    return shape, session, config, budget


def run(shape, session, config, budget):
    return assemble_words(session, config, shape=shape, budget=budget)


def _protected(session: Transcript, config: AssemblyConfig) -> set[str]:
    """Ids that must survive: leading system text, the first user message, the latest user
    message and the last N complete rings (independently computed from the session)."""
    messages = session.messages
    keep: set[str] = set()
    for m in messages:
        if m.role not in ("system", "developer"):
            break
        keep.add(m.id)
    users = [m for m in messages if m.role == "user"]
    if users:
        keep.add(users[0].id)
        keep.add(users[-1].id)
    complete = [s for s in segment(session) if isinstance(s, Ring) and s.complete]
    for r in (
        complete[len(complete) - config.recent_tool_rings :] if config.recent_tool_rings else []
    ):
        keep.update(messages[i].id for i in r.indices)
    return keep


@settings(PROFILE)
@given(cases())
def test_view_is_valid_within_budget_and_keeps_what_it_must(case):
    shape, session, config, budget = case
    try:
        assembly = run(shape, session, config, budget)
    except ContextAssemblyError as exc:
        refused: ContextAssemblyError | None = exc
    else:
        refused = None
    if refused is not None:
        assert refused.code.startswith("context_assembly_")
        assert refused.code != "context_assembly_pairing_error"  # the session is valid
        return
    view = assembly.view
    assert validate(view) == ()
    assert WordCounter().count(view).total <= budget
    # Normalization (alternation merges) moves parts between messages, never loses or adds any.
    base = assembly.base_view
    assert [p for m in view for p in m.parts] == [p for m in base for p in m.parts]
    kept = [m.id for m in base]
    kept_set = set(kept)
    assert _protected(session, config) <= kept_set
    for seg in segment(session):
        if isinstance(seg, Ring):
            present = [session.messages[i].id in kept_set for i in seg.indices]
            assert all(present) or not any(present), "a ring was cut"
    position = {m.id: i for i, m in enumerate(session.messages)}
    from_session = [position[i] for i in kept if i in position]
    assert from_session == sorted(from_session)
    body = assembly.render()
    for other in SHAPE_NAMES:  # its own shape, and every other shape that can carry the view
        try:
            sent = assembly.render(other)
            given = get_shape(other).render_request(session)
        except ShapeError:
            continue  # a part the other shape cannot carry (drawn for this shape only)
        if not validate_request(given, other).accepted:
            continue  # the session itself breaks a non-pairing rule there (A14 ...): not ours
        verdict = validate_request(sent, other)
        assert verdict.accepted, (shape, other, verdict.rule, verdict.error)
    again = run(shape, session, config, budget)
    assert json.dumps(again.render(), sort_keys=True) == json.dumps(body, sort_keys=True)


@settings(PROFILE)
@given(broken_transcripts(max_messages=10), st.integers(0, 5000), st.sampled_from(SHAPE_NAMES))
def test_fail_closed_always_rejects_broken_sessions(broken, budget, shape):
    session, kind = broken
    with pytest.raises(ContextAssemblyError) as info:
        run(shape, session, AssemblyConfig(), budget)
    assert info.value.code == "context_assembly_pairing_error", kind


def _cut_anything(assembly) -> bool:
    report = assembly.report
    return bool(
        report.dropped_ring_ids
        or report.dropped_turn_ids
        or report.cleared_result_ids
        or report.degraded_attachment_ids
    )


@settings(PROFILE)
@given(cases(), st.sampled_from([0.1, 0.25, 0.6]))
def test_a_cut_leaves_the_headroom_free_and_a_view_that_fits_is_not_cut(case, headroom):
    # compaction_headroom: a view that fits as it is is sent as it is; one that does not is cut
    # until the headroom is free, or until only what is never cut is left.
    shape, session, config, budget = case
    config = config.with_changes(summarize_trigger_ratio=1.0, on_still_over_budget="fail_closed")
    try:
        plain = run(shape, session, config, budget)
    except ContextAssemblyError:
        return  # refusals are the other property's
    roomy = run(shape, session, config.with_changes(compaction_headroom=headroom), budget)
    if not _cut_anything(plain):
        assert roomy.view == plain.view
        assert roomy.report == replace(plain.report, seconds=roomy.report.seconds)
        return
    # what the steps aimed at (the report's counts, before a shape's merges) and the view sent
    total = roomy.report.total_after
    after = roomy.report.tokens_after
    assert after is not None
    fixed = after.prefix + after.suffix + after.tools + after.overhead
    assert total <= max(
        budget - config.with_changes(compaction_headroom=headroom).headroom_tokens(budget), fixed
    )
    assert WordCounter().count(roomy.view).total <= budget
    assert total <= plain.report.total_after  # it never keeps more than cutting just enough
