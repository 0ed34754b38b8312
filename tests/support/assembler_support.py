"""Shared helpers for the assembler tests: a tiny transparent counter, ``assemble`` with it, and
session builders.

The counter makes budgets easy to reason about by hand: a message costs 4 tokens plus one per
whitespace-separated word of its text, arguments and results; an image or file costs 100; each tool
schema costs 10; the reply overhead is 3. It records every message it really counts, so tests can
prove that nothing is counted twice and that the old end of a long session is not counted at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry

from reference_impl import (
    Assembly,
    AssemblyConfig,
    AssemblyMetrics,
    DeterministicSummarizer,
    Ledger,
    assemble,
)
from reference_impl.assembler import assemble_pipeline
from reference_impl.budget import plan_budget
from reference_impl.errors import ContextAssemblyError
from reference_impl.steps import AssemblyState, load_state, protect_prefix, protect_suffix
from reference_impl.tokens import TokenCount
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
)


class WordCounter:
    def __init__(self) -> None:
        self.memo: dict[str, int] = {}
        self.encoded: list[str] = []  # message ids really counted, in order

    @property
    def name(self) -> str:
        return "test:words"

    def _words(self, message: Message) -> int:
        n = 4
        for p in message.parts:
            if isinstance(p, TextPart | SummaryPart):
                n += len(p.text.split())
            elif isinstance(p, ToolCallPart):
                n += 1 + len(p.arguments.split())
            elif isinstance(p, ToolResultPart):
                for c in p.content:
                    n += len(c.text.split()) if isinstance(c, TextPart) else 100
            elif isinstance(p, ImagePart | FilePart):
                n += 100
        return n

    def count_message(self, message: Message) -> int:
        if message.digest not in self.memo:
            self.encoded.append(message.id)
            self.memo[message.digest] = self._words(message)
        return self.memo[message.digest]

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return 10 * len(tools)

    def count(self, transcript: Transcript) -> TokenCount:
        per = tuple(self.count_message(m) for m in transcript.messages)
        tools = self.count_tools(transcript.tools)
        return TokenCount(sum(per) + tools + 3, per, tools, 3, self.name)


def assemble_words(session: Transcript, config: AssemblyConfig, **knobs: Any) -> Assembly:
    """``assemble`` counted by a new ``WordCounter``, with metrics of its own (not the process's
    registry); ``knobs`` are ``assemble``'s other keywords and may replace either.

    With the default counter and summarizer the same request also goes through
    ``assemble_pipeline`` (every step one by one, with a counter and metrics of its own), which
    must say the same: so a test of a step's behaviour runs the step itself, not only the
    indexed path that must equal it. A test that passes its own counter or summarizer (a spy
    that counts its calls, say) is left to ``assemble``."""
    cross_check = "counter" not in knobs and "summarizer" not in knobs
    knobs.setdefault("counter", WordCounter())
    knobs.setdefault("metrics", AssemblyMetrics(CollectorRegistry()))
    result = outcome_of(lambda: assemble(session, config, **knobs))
    if cross_check:
        twin = {**knobs, "counter": WordCounter(), "metrics": AssemblyMetrics(CollectorRegistry())}
        pipeline = outcome_of(lambda: assemble_pipeline(session, config, **twin))
        assert assembly_facts(result) == assembly_facts(pipeline), "assemble != assemble_pipeline"
    if isinstance(result, ContextAssemblyError):
        raise result
    return result


def outcome_of(run: Callable[[], Assembly]) -> Assembly | ContextAssemblyError:
    """What ``run`` returns, or the refusal it raises."""
    try:
        return run()
    except ContextAssemblyError as exc:
        return exc


def assembly_facts(outcome: Assembly | ContextAssemblyError) -> tuple[Any, ...]:
    """All an assembly says but its timing, or the refusal's code and details."""
    if isinstance(outcome, ContextAssemblyError):
        details = dict(outcome.details)
        details["report"] = {k: v for k, v in details["report"].items() if k != "seconds"}
        return ("rejected", outcome.code, json.dumps(details, sort_keys=True, default=str))
    report = outcome.report.to_dict()
    report.pop("seconds")
    return (
        [(m.id, m.role, m.parts, m.name) for m in outcome.view],
        [m.id for m in outcome.base_view] if outcome.base_view is not None else None,
        outcome.view.tools,
        outcome.injected_ids,
        outcome.prefix_ids,
        json.dumps(report, sort_keys=True),
    )


def decided(run: Callable[[], Assembly]) -> tuple[Any, ...]:
    """What an assembly decided (or the refusal's code), without its timing and the lower-bound
    ``tokens_before.middle`` (``tokens_before_is_lower_bound``: the incremental path counts less
    of the middle than the pipeline): what the incremental path and the pipeline must agree on."""
    try:
        a = run()
    except ContextAssemblyError as exc:
        return ("rejected", exc.code)
    report = a.report.to_dict()
    for key in ("seconds", "tokens_before", "tokens_before_is_lower_bound"):
        report.pop(key)
    return (
        [(m.id, m.role, m.parts) for m in a.view],
        [m.id for m in a.base_view] if a.base_view is not None else None,
        a.view.tools,
        a.injected_ids,
        a.prefix_ids,
        json.dumps(report, sort_keys=True),
        a.report.tokens_before.prefix,
        a.report.tokens_before.suffix,
    )


class Case(NamedTuple):
    """A session with the config (and budget, in ``WordCounter`` tokens) that makes its point."""

    session: Transcript
    config: AssemblyConfig
    budget: int


def protected_state(
    s: Transcript, config: AssemblyConfig, budget: int, *, counter: Any = None
) -> AssemblyState:
    """The state of ``s`` for openai-chat as the pipeline has it after protecting the prefix and
    the suffix (counted by a new ``WordCounter`` unless ``counter`` is given)."""
    state = load_state(
        s,
        config=config,
        counter=counter or WordCounter(),
        summarizer=DeterministicSummarizer(),
        ledger=Ledger(),
        plan=plan_budget(config, budget),
        shape="openai-chat",
        injections=(),
    )
    protect_prefix(state)
    protect_suffix(state)
    return state


def goal_meets_a_question(config: AssemblyConfig) -> Case:
    """system, the goal, a long reply, an older question, a short reply, the latest question.
    With ``recent_user_turns=2`` and a budget 40 under the whole, trimming deletes the long reply
    (a plain turn of the middle), and the pinned goal then meets the older question: two user
    messages in a row, which the alternating shapes merge."""
    s = session(
        system(),
        user("GOAL: audit"),
        assistant(words(60, "long")),
        user("older question"),
        assistant("ok"),
        user("latest"),
    )
    return Case(s, config.with_changes(recent_user_turns=2), WordCounter().count(s).total - 40)


def long_goal_then_turns(config: AssemblyConfig) -> Case:
    """system, a long goal, a reply, a second question, its reply, the latest question. Unpinned
    (``pin=()``), with ``recent_user_turns=2`` and a budget of 60, the goal goes and the reply
    after it would lead the middle: the assembler drops it (a user message first)."""
    s = session(
        system(),
        user(words(80, "goal")),
        assistant("first reply"),
        user("second"),
        assistant("second reply"),
        user("latest"),
    )
    return Case(s, config.with_changes(pin=(), recent_user_turns=2), 60)


def words(n: int, word: str = "w") -> str:
    return " ".join([word] * n)


def system(text: str = "You are deploy-bot. Never run destructive tools.") -> Message:
    return Message("system", (TextPart(text),))


def user(text: str) -> Message:
    return Message("user", (TextPart(text),))


def assistant(text: str) -> Message:
    return Message("assistant", (TextPart(text),))


def ring(
    call_id: str,
    result: str,
    *,
    name: str = "get_status",
    error: bool = False,
    extra_calls: Sequence[str] = (),
) -> tuple[Message, Message]:
    ids = (call_id, *extra_calls)
    calls = tuple(ToolCallPart(i, name, '{"q": 1}') for i in ids)
    results = tuple(ToolResultPart(i, (TextPart(result),), is_error=error) for i in ids)
    return Message("assistant", calls), Message("tool", results)


class Call(NamedTuple):
    """One call of a :func:`parallel_ring`: its id, tool, arguments (kept as written) and result."""

    id: str
    name: str
    arguments: str
    result: str
    error: bool = False


def parallel_ring(*calls: Call) -> tuple[Message, Message]:
    """The assistant message making ``calls`` and the tool message answering them, in order."""
    parts = tuple(ToolCallPart(c.id, c.name, c.arguments) for c in calls)
    results = tuple(ToolResultPart(c.id, (TextPart(c.result),), is_error=c.error) for c in calls)
    return Message("assistant", parts), Message("tool", results)


def session(*items: Message | tuple[Message, ...], tools: Sequence[ToolSpec] = ()) -> Transcript:
    messages: list[Message] = []
    for item in items:
        messages.extend(item if isinstance(item, tuple) else (item,))
    return Transcript(tuple(messages), tools=tuple(tools))


def rings_between_turns(
    goal: str, results: Sequence[str], turns: Sequence[Message], latest: str
) -> Transcript:
    """The session the compaction tests start from: :func:`system`, the user's ``goal``, rings
    ``c1``, ``c2`` ... answered with ``results`` in order, ``turns[i]`` between ring ``i + 1`` and
    the next (one turn fewer than rings), then the ``latest`` user message."""
    if len(turns) != len(results) - 1:
        raise ValueError(
            f"{len(results)} rings take {len(results) - 1} turns between, not {len(turns)}"
        )
    items: list[Message | tuple[Message, ...]] = [system(), user(goal)]
    for i, result in enumerate(results):
        if i:
            items.append(turns[i - 1])
        items.append(ring(f"c{i + 1}", result))
    return session(*items, user(latest))
