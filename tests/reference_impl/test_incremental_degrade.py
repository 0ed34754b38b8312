"""The incremental path degrades attachments as ``steps.trim.degrade_attachments`` does, turn
after turn, with the fill resumed once per run of attachments in its window
(``SessionAssembler._degrade``) and the costs of degraded units kept between turns: the same
assembly as resuming after each attachment, and as the full pipeline."""

from __future__ import annotations

import json

import pytest
from assembler_support import WordCounter, assistant, decided, ring, session, system, user, words
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from prometheus_client import CollectorRegistry

import reference_impl.incremental as incremental
from reference_impl import AssemblyConfig, AssemblyMetrics, ContextAssemblyError
from reference_impl.assembler import assemble_pipeline
from reference_impl.incremental import SessionAssembler
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)


class AttachmentCounter(WordCounter):
    """``WordCounter`` with a file at ``attachment`` tokens and an image at its ``width`` when
    it has one: below the cost of their placeholder (some ten words) a degraded unit costs more
    than it did."""

    def __init__(self, attachment: int) -> None:
        super().__init__()
        self.attachment = attachment

    def _words(self, message: Message) -> int:
        n = 4
        for p in message.parts:
            if isinstance(p, TextPart):
                n += len(p.text.split())
            elif isinstance(p, ToolCallPart):
                n += 1 + len(p.arguments.split())
            elif isinstance(p, ToolResultPart):
                for c in p.content:
                    n += len(c.text.split()) if isinstance(c, TextPart) else self._of(c)
            elif isinstance(p, ImagePart | FilePart):
                n += self._of(p)
        return n

    def _of(self, part: ImagePart | FilePart) -> int:
        return part.width if isinstance(part, ImagePart) and part.width else self.attachment


def _image(i: int, width: int | None = None) -> ImagePart:
    return ImagePart("url", f"https://example.com/chart-{i}.png", width=width, height=width)


def _item(kind: str, i: int, size: int, width: int | None) -> tuple[Message, ...]:
    if kind == "turn":
        return (assistant(f"note {i} " + words(size)), user(f"ok {i}"))
    if kind == "image_turn":
        return (Message("user", (TextPart(f"look {i} " + words(size)), _image(i, width))),)
    if kind == "ring":
        return ring(f"c{i}", words(size), error=size % 5 == 0)
    call = ToolCallPart(f"c{i}", "fetch", '{"q": 1}')
    if kind == "image_ring":
        image = _image(i, width)
        content: tuple[TextPart | ImagePart | FilePart, ...] = (TextPart(words(size)), image)
    else:  # a file in the result
        content = (FilePart("url", f"https://example.com/doc-{i}.pdf", "application/pdf"),)
    result = ToolResultPart(f"c{i}", content)
    return Message("assistant", (call,)), Message("tool", (result,))


KINDS = ["turn", "image_turn", "ring", "image_ring", "file_ring"]


def whole(run):
    """Everything an assembly reports but its timing, ``tokens_before`` included."""
    try:
        a = run()
    except ContextAssemblyError as exc:
        return ("rejected", exc.code)
    report = a.report.to_dict()
    report.pop("seconds")
    return [(m.id, m.parts) for m in a.view], json.dumps(report, sort_keys=True)


@st.composite
def attached_sessions(draw):
    """Sessions of many attachments among turns and rings, grown a few messages at a time,
    with a budget drawn where the middle does not fit whole and a cost per attachment that
    makes some placeholders dearer than what they replace (the same for every attachment, or
    an image's own, drawn, when ``mixed``)."""
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=4, max_size=40))
    sizes = draw(st.lists(st.integers(1, 60), min_size=len(kinds), max_size=len(kinds)))
    mixed = draw(st.booleans())
    costs = st.sampled_from([1, 5, 30, 100, 400]) if mixed else st.none()
    widths = draw(st.lists(costs, min_size=len(kinds), max_size=len(kinds)))
    items = [system(), user("GOAL: audit")]
    for i, (kind, size, width) in enumerate(zip(kinds, sizes, widths, strict=True)):
        items.extend(_item(kind, i, size, width))
    items.append(user("what now?"))
    full = session(*items)
    n = len(full)
    cuts = sorted(set(draw(st.lists(st.integers(3, n), min_size=1, max_size=5))) | {n})
    attachment = draw(st.sampled_from([1, 5, 30, 100, 400]))
    total = AttachmentCounter(attachment).count(full).total
    budget = draw(st.integers(total // 8, total + 10))
    config = AssemblyConfig(
        summarize_trigger_ratio=1.0,
        recent_tool_rings=draw(st.integers(0, 2)),
        recent_user_turns=draw(st.integers(0, 2)),
        keep_middle_error_results=draw(st.integers(0, 1)),
    )
    return full, cuts, attachment, budget, config


def turns(full, cuts, attachment, budget, config, *, batch, early=True):
    """Each turn's ``whole`` assembly through one ``SessionAssembler``, resuming the fill once
    per run of attachments (``batch``; the run cut where the middle may fit, ``early``, or
    not) or after each; and the paths taken."""
    saved = incremental._BATCH_RESUMES, incremental._SETTLE_WHEN_IT_MAY_FIT
    incremental._BATCH_RESUMES, incremental._SETTLE_WHEN_IT_MAY_FIT = batch, early
    try:
        metrics = AssemblyMetrics(CollectorRegistry())
        assembler = SessionAssembler(config, counter=AttachmentCounter(attachment), metrics=metrics)
        found, paths = [], []
        for cut in cuts:
            turn = full.with_messages(full.messages[:cut])
            found.append(whole(lambda t=turn: assembler.assemble(t, budget=budget)))
            paths.append(assembler.last_path)
        return found, paths
    finally:
        incremental._BATCH_RESUMES, incremental._SETTLE_WHEN_IT_MAY_FIT = saved


@settings(max_examples=examples(300))
@given(attached_sessions())
def test_resuming_once_per_run_equals_resuming_after_each(case):
    """The whole report (``tokens_before`` too, which names what the walks counted) is the one
    of resuming after each attachment, turn after turn, wherever a run is cut: where the middle
    may fit, or only before an attachment outside the window or a dearer placeholder (the
    degrades past the fit then taken back)."""
    one_by_one = turns(*case, batch=False)
    assert turns(*case, batch=True) == one_by_one
    assert turns(*case, batch=True, early=False) == one_by_one


@settings(max_examples=examples(300))
@given(attached_sessions())
def test_each_turn_with_attachments_equals_the_pipeline(case):
    full, cuts, attachment, budget, config = case
    metrics = AssemblyMetrics(CollectorRegistry())
    assembler = SessionAssembler(config, counter=AttachmentCounter(attachment), metrics=metrics)
    for cut in cuts:
        turn = full.with_messages(full.messages[:cut])
        got = decided(lambda t=turn: assembler.assemble(t, budget=budget))
        want = decided(
            lambda t=turn: assemble_pipeline(
                t, config, counter=AttachmentCounter(attachment), budget=budget, metrics=metrics
            )
        )
        assert got == want, cut


def _images_in_the_window(count: int) -> tuple:
    """A goal, ``count`` user turns of 20 words and an image each (100 tokens), a latest
    message: what the middle costs whole, and with ``k`` images degraded (a placeholder of
    about ten words)."""
    items = [system(), user("GOAL: audit")]
    for i in range(count):
        items.append(Message("user", (TextPart(f"look {i} " + words(20)), _image(i))))
        items.append(assistant(f"seen {i}"))
    items.append(user("what now?"))
    full = session(*items)
    counter = AttachmentCounter(100)
    cold = assemble_pipeline(full, _CONFIG, counter=counter, budget=10**6)
    return full, cold.report.total_after


_CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=0, recent_user_turns=1)


@pytest.mark.parametrize("degrades", [1, 2, 5])
def test_the_middle_that_fits_within_a_run_stops_the_degrading_there(degrades):
    """Every attachment is in the fill's window (the middle overflows the room by a few
    images' worth): degrading stops at the first after which the middle fits, though the run
    of attachments in the window goes on."""
    full, total = _images_in_the_window(12)
    won = AttachmentCounter(100).count_message(full.messages[2]) - AttachmentCounter(
        100
    ).count_message(incremental.degrade_message(full.messages[2]))
    budget = total - won * degrades + 1  # degrades - 1 degrades fall one token short
    metrics = AssemblyMetrics(CollectorRegistry())
    previous = full.with_messages(full.messages[:-2])
    assembler = SessionAssembler(_CONFIG, counter=AttachmentCounter(100), metrics=metrics)
    assembler.assemble(previous, budget=budget)
    got = assembler.assemble(full, budget=budget)
    assert assembler.last_path == "incremental"
    want = assemble_pipeline(
        full, _CONFIG, counter=AttachmentCounter(100), budget=budget, metrics=metrics
    )
    assert decided(lambda: got) == decided(lambda: want)
    assert len(got.report.degraded_attachment_ids) == degrades  # of 11 in the middle
    assert got.report.dropped_turn_ids == ()  # the whole middle fits


class _OwnImage(ImagePart):
    """An image part of a type of its own (a subclass): the index's table of part types does
    not hold it, and decides it once by ``isinstance``."""


class _OwnFile(FilePart):
    pass


@pytest.mark.parametrize("where", ["ring", "turn", "beside_results"])
def test_attachments_of_a_type_of_their_own_are_degraded_as_the_pipeline_does(where):
    attached = (
        _OwnImage("url", "https://example.com/own.png", width=400, height=400),
        _OwnFile("url", "https://example.com/own.pdf", "application/pdf"),
    )
    items = [system(), user("GOAL: audit")]
    for i in range(6):
        call = ToolCallPart(f"c{i}", "fetch", '{"q": 1}')
        content = (TextPart(words(20)), *(attached if where == "ring" else ()))
        tool_parts = (ToolResultPart(f"c{i}", content),)
        if where == "beside_results":
            tool_parts = (*tool_parts, attached[0])
        items += [Message("assistant", (call,)), Message("tool", tool_parts)]
        if where == "turn":
            items.append(Message("user", (TextPart(f"look {i}"), *attached)))
        items += [assistant(f"note {i}"), user(f"ok {i}")]
    full = session(*items, user("what now?"))
    config = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1)
    total = AttachmentCounter(400).count(full).total
    metrics = AssemblyMetrics(CollectorRegistry())
    assembler = SessionAssembler(config, counter=AttachmentCounter(400), metrics=metrics)
    got = whole(lambda: assembler.assemble(full, budget=total // 2))
    want = whole(
        lambda: assemble_pipeline(
            full, config, counter=AttachmentCounter(400), budget=total // 2, metrics=metrics
        )
    )
    assert got == want
    assert json.loads(got[1])["degraded_attachment_ids"]  # the case degrades something
    assert assembler.last_path == "incremental"  # the index decided, not the full pipeline
